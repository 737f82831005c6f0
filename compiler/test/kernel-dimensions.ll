; Each kernel's entry in !oxide.kernels gets a flags word saying which kinds
; of ThreadIndex it can hand DisjointSlice::get_mut (1 = 1-D, 2 = 2-D, 4 =
; 3-D), read from get_mut's markers in every function it reaches. A call
; through a pointer reaches every function whose address is taken. The host
; refuses a launch that extends in a dimension a recorded kind ignores
; (docs/ABI.md §3).
; RUN: %oxide-opt -passes=record-kernel-dimensions %s | FileCheck %s

declare i64 @__oxide_stub_disjoint_index_1d(i64) #0
declare i64 @__oxide_stub_disjoint_index_2d(i64, i64, ptr) #0
declare i64 @__oxide_stub_disjoint_index_3d(i64, i64, i64, ptr) #0
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()

define internal i64 @write_1d(i64 %i) {
  %m = call i64 @__oxide_stub_disjoint_index_1d(i64 %i)
  ret i64 %m
}

define internal i64 @write_2d(i64 %i, i64 %w) {
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %w, ptr null)
  ret i64 %m
}

define internal i64 @write_3d(i64 %i) {
  %m = call i64 @__oxide_stub_disjoint_index_3d(i64 %i, i64 8, i64 4, ptr null)
  ret i64 %m
}

; Reading y does not make a kernel 2-D: what it hands get_mut does.
define ptx_kernel void @one_d(i64 %i) {
  %y = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %m = call i64 @write_1d(i64 %i)
  ret void
}

define ptx_kernel void @two_d(i64 %i) {
  %m = call i64 @write_2d(i64 %i, i64 32)
  ret void
}

define ptx_kernel void @three_d(i64 %i) {
  %m = call i64 @write_3d(i64 %i)
  ret void
}

define ptx_kernel void @one_and_three_d(i64 %i) {
  %a = call i64 @write_1d(i64 %i)
  %b = call i64 @write_3d(i64 %i)
  ret void
}

; No ThreadIndex reaches a DisjointSlice: nothing to refuse.
define ptx_kernel void @no_index() {
  %y = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  ret void
}

; The only address-taken function is @through_pointer (the table below),
; which writes through a 2-D index: a call through a pointer reaches it.
define internal i64 @through_pointer(i64 %i) {
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 16, ptr null)
  ret i64 %m
}
@table = internal constant [1 x ptr] [ptr @through_pointer]

define ptx_kernel void @indirect(ptr %f, i64 %i) {
  %m = call i64 %f(i64 %i)
  ret void
}

; A direct call of nothing that writes, and no call through a pointer.
define internal void @helper() {
  ret void
}
define ptx_kernel void @direct_only() {
  call void @helper()
  ret void
}

!oxide.kernels = !{!0, !1, !2, !3, !4, !5, !6}
!0 = !{ptr @one_d, !"h_one_d", i64 1}
!1 = !{ptr @two_d, !"h_two_d", i64 1}
!2 = !{ptr @three_d, !"h_three_d", i64 1}
!3 = !{ptr @one_and_three_d, !"h_one_and_three_d", i64 1}
!4 = !{ptr @no_index, !"h_no_index", i64 0}
!5 = !{ptr @indirect, !"h_indirect", i64 2}
!6 = !{ptr @direct_only, !"h_direct_only", i64 0}

; CHECK: !oxide.kernels = !{![[A:[0-9]+]], ![[B:[0-9]+]], ![[C:[0-9]+]], ![[D:[0-9]+]], ![[E:[0-9]+]], ![[F:[0-9]+]], ![[G:[0-9]+]]}
; CHECK-DAG: ![[A]] = !{ptr @one_d, !"h_one_d", i64 1, i64 1}
; CHECK-DAG: ![[B]] = !{ptr @two_d, !"h_two_d", i64 1, i64 2}
; CHECK-DAG: ![[C]] = !{ptr @three_d, !"h_three_d", i64 1, i64 4}
; CHECK-DAG: ![[D]] = !{ptr @one_and_three_d, !"h_one_and_three_d", i64 1, i64 5}
; CHECK-DAG: ![[E]] = !{ptr @no_index, !"h_no_index", i64 0, i64 0}
; CHECK-DAG: ![[F]] = !{ptr @indirect, !"h_indirect", i64 2, i64 2}
; CHECK-DAG: ![[G]] = !{ptr @direct_only, !"h_direct_only", i64 0, i64 0}

attributes #0 = { nounwind willreturn memory(none) "oxide-marker" }

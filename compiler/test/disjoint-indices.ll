; Every row length (and rows per plane) of the 2-D and 3-D indices a kernel
; hands DisjointSlice::get_mut is one value for the whole launch: here
; constants, bytes of by-value parameters the kernel only reads (loaded
; anywhere), the grid and block sizes, pure operations on those, a phi of
; one value, and the argument of a function that every call passes the same
; value. Then each marker becomes its index, and the Location constants only
; the markers used go.
; RUN: %oxide-opt -passes=lower-disjoint-indices %s | FileCheck %s

declare i64 @__oxide_stub_disjoint_index_1d(i64) #0
declare i64 @__oxide_stub_disjoint_index_2d(i64, i64, ptr) #0
declare i64 @__oxide_stub_disjoint_index_3d(i64, i64, i64, ptr) #0
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare i64 @llvm.umax.i64(i64, i64)

@file = private unnamed_addr constant [12 x i8] c"src/main.rs\00"
@loc = private unnamed_addr constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\14\00\00\00\05\00\00\00" }>, align 8

define ptx_kernel void @constant(i64 %i, ptr %out) {
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 32, ptr @loc)
  %e = getelementptr i32, ptr %out, i64 %m
  store i32 1, ptr %e
  ret void
}
; CHECK-LABEL: define ptx_kernel void @constant(
; CHECK-NEXT: %e = getelementptr i32, ptr %out, i64 %i

; Two loads of the same parameter bytes, one of them in another block.
define ptx_kernel void @parameter(ptr byval([2 x i64]) align 8 readonly %p, i64 %i, ptr %out, i1 %c) {
  %g = getelementptr inbounds i8, ptr %p, i64 8
  %w = load i64, ptr %g
  %a = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %w, ptr @loc)
  br i1 %c, label %more, label %done
more:
  %g2 = getelementptr inbounds i8, ptr %p, i64 8
  %w2 = load i64, ptr %g2
  %b = call i64 @__oxide_stub_disjoint_index_3d(i64 %i, i64 %w2, i64 4, ptr @loc)
  br label %done
done:
  ret void
}

; The grid's width in threads, widened, at least 64.
define ptx_kernel void @launch_size(i64 %i) {
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %g = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %t = mul i32 %n, %g
  %w = zext i32 %t to i64
  %r = call i64 @llvm.umax.i64(i64 %w, i64 64)
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %r, ptr @loc)
  ret void
}

; A phi whose every incoming value is the same parameter.
define ptx_kernel void @phi_of_one_value(i64 %w, i64 %i, i1 %c) {
entry:
  br i1 %c, label %a, label %b
a:
  br label %join
b:
  br label %join
join:
  %r = phi i64 [ %w, %a ], [ %w, %b ]
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %r, ptr @loc)
  ret void
}

; A helper that was not inlined, called twice with the same parameter.
define internal i64 @store_row(i64 %i, i64 %row) {
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %row, ptr @loc)
  ret i64 %m
}
define ptx_kernel void @through_a_helper(i64 %w, i64 %i, i64 %j) {
  %a = call i64 @store_row(i64 %i, i64 %w)
  %b = call i64 @store_row(i64 %j, i64 %w)
  ret void
}
; CHECK-LABEL: define internal i64 @store_row(
; CHECK-NEXT: ret i64 %i

; A ThreadIndex too large for registers (a 3-D one) reaches a helper as a
; pointer to a copy: the row lengths are what the one store into the copy
; put there, at every call.
define internal void @store_volume(ptr readonly %idx) {
  %i = load i64, ptr %idx
  %r = getelementptr inbounds i8, ptr %idx, i64 8
  %row = load i64, ptr %r
  %p = getelementptr inbounds i8, ptr %idx, i64 16
  %rows = load i64, ptr %p
  %m = call i64 @__oxide_stub_disjoint_index_3d(i64 %i, i64 %row, i64 %rows, ptr @loc)
  ret void
}
define ptx_kernel void @through_memory(ptr byval([2 x i64]) align 8 readonly %params, i64 %i) {
  %copy = alloca [3 x i64], align 8
  store i64 %i, ptr %copy
  %w = load i64, ptr %params
  %r = getelementptr inbounds i8, ptr %copy, i64 8
  store i64 %w, ptr %r
  %p = getelementptr inbounds i8, ptr %copy, i64 16
  store i64 4, ptr %p
  call void @store_volume(ptr %copy)
  ret void
}

define ptx_kernel void @one_d(i64 %i) {
  %m = call i64 @__oxide_stub_disjoint_index_1d(i64 %i)
  ret void
}

!oxide.kernels = !{!0, !1, !2, !3, !4, !5, !6}
!0 = !{ptr @constant, !"h_constant", i64 2}
!1 = !{ptr @parameter, !"h_parameter", i64 4}
!2 = !{ptr @launch_size, !"h_launch_size", i64 1}
!3 = !{ptr @phi_of_one_value, !"h_phi_of_one_value", i64 3}
!4 = !{ptr @through_a_helper, !"h_through_a_helper", i64 3}
!5 = !{ptr @one_d, !"h_one_d", i64 1}
!6 = !{ptr @through_memory, !"h_through_memory", i64 2}

; CHECK-NOT: __oxide_stub_disjoint_index
; CHECK-NOT: @loc =
; CHECK-NOT: @file =

attributes #0 = { nounwind willreturn memory(none) "oxide-marker" }

; Each kernel's entry in !oxide.kernels gets a flags word saying which thread
; coordinates it can read (1 = an x coordinate, 2 = a y/z coordinate), through
; every function it reaches. The host refuses a 2-D/3-D launch of a kernel
; with flags 1: its threads would share indices (docs/ABI.md §3).
; RUN: %oxide-opt -passes=record-kernel-dimensions %s | FileCheck %s

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.y()

define internal i32 @index_1d() {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  ; the block size in y is not a coordinate
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
  %s = add i32 %t, %b
  %r = add i32 %s, %n
  ret i32 %r
}

define internal i32 @row() {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  ret i32 %t
}

define internal i32 @batch() {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
  ret i32 %t
}

define ptx_kernel void @one_d() {
  %i = call i32 @index_1d()
  ret void
}

define ptx_kernel void @two_d() {
  %i = call i32 @index_1d()
  %j = call i32 @row()
  ret void
}

define ptx_kernel void @batched() {
  %j = call i32 @batch()
  ret void
}

define ptx_kernel void @no_index() {
  ret void
}

define ptx_kernel void @asm() {
  %x = call i32 asm "mov.u32 $0, %tid.y;", "=r"()
  ret void
}

define ptx_kernel void @indirect(ptr %f) {
  %x = call i32 %f()
  ret void
}

!oxide.kernels = !{!0, !1, !2, !3, !4, !5, !6}
!0 = !{ptr @one_d, !"h_one_d", i64 0}
!1 = !{ptr @two_d, !"h_two_d", i64 0}
!2 = !{ptr @batched, !"h_batched", i64 0}
!3 = !{ptr @no_index, !"h_no_index", i64 0}
!4 = !{ptr @asm, !"h_asm", i64 0}
!5 = !{ptr @indirect, !"h_indirect", i64 1}
!6 = !{ptr @checked, !"h_checked", i64 1}

; CHECK: !oxide.kernels = !{![[A:[0-9]+]], ![[B:[0-9]+]], ![[C:[0-9]+]], ![[D:[0-9]+]], ![[E:[0-9]+]], ![[F:[0-9]+]], ![[G:[0-9]+]]}
; CHECK-DAG: ![[A]] = !{ptr @one_d, !"h_one_d", i64 0, i64 1}
; CHECK-DAG: ![[B]] = !{ptr @two_d, !"h_two_d", i64 0, i64 3}
; CHECK-DAG: ![[C]] = !{ptr @batched, !"h_batched", i64 0, i64 2}
; CHECK-DAG: ![[D]] = !{ptr @no_index, !"h_no_index", i64 0, i64 0}
; CHECK-DAG: ![[E]] = !{ptr @asm, !"h_asm", i64 0, i64 2}
; CHECK-DAG: ![[F]] = !{ptr @indirect, !"h_indirect", i64 1, i64 2}
; CHECK-DAG: ![[G]] = !{ptr @checked, !"h_checked", i64 1, i64 1}

; A panic path (noreturn) reads every coordinate for its report; its y/z
; reads do not make a 1-D kernel 2-D.
define internal void @panic_report() noreturn {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
  %x = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  unreachable
}

define ptx_kernel void @checked(i1 %bad) {
  %i = call i32 @index_1d()
  br i1 %bad, label %panic, label %ok
panic:
  call void @panic_report()
  unreachable
ok:
  ret void
}


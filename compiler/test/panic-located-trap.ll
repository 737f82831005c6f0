; core's panic functions get a device body: print the Location the caller
; passed (read at run time), the thread and block, then trap.
; RUN: %oxide-opt -p lower-panics %s | FileCheck %s

@file = private constant [12 x i8] c"src/main.rs\00"
@loc = private constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\0F\00\00\00\0B\00\00\00" }>

declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64, i64, ptr)
declare void @_RNvNtNtCsgEmfK2I1SDS_4core9panicking11panic_const24panic_const_add_overflow(ptr)

define void @user(i64 %i) {
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64 %i, i64 4, ptr @loc)
  call void @_RNvNtNtCsgEmfK2I1SDS_4core9panicking11panic_const24panic_const_add_overflow(ptr @loc)
  ret void
}
; CHECK-DAG: c"GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked at %s:%u:%u:\0Aindex out of bounds: the len is %llu but the index is %llu\0A\00"
; CHECK-DAG: c"GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked at %s:%u:%u:\0Aattempt to add with overflow\0A\00"
; CHECK-LABEL: define internal void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64 %0, i64 %1, ptr %2)
; CHECK: call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
; CHECK: %file = load ptr, ptr %2
; CHECK: %line = load i32, ptr
; CHECK: %col = load i32, ptr
; CHECK: call i32 @vprintf(
; CHECK: call void @llvm.trap()
; CHECK-NEXT: unreachable

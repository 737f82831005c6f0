; ptxas sizes a kernel's registers for its whole call graph, so the cold
; panic path must stay small: the shared recorder is inlined into each panic
; function (no 15-argument call), and its text copies are volatile memcpys,
; which are not expanded into byte loads that ptxas would hoist together.
; RUN: %oxide-opt -p lower-panics %s | FileCheck %s

@file = private constant [12 x i8] c"src/main.rs\00"
@loc = private constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\0F\00\00\00\0B\00\00\00" }>

declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64, i64, ptr)

define void @user(i64 %i) {
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64 %i, i64 4, ptr @loc)
  ret void
}

; CHECK-LABEL: define internal void @oxide.record_panic(
; CHECK-SAME: #[[REC:[0-9]+]]
; CHECK: call void @llvm.memcpy.p0.p0.i64(ptr align 1 %{{.*}}, ptr align 1 %{{.*}}, i64 %{{.*}}, i1 true)
; CHECK: call void @llvm.memcpy.p0.p0.i64(ptr align 1 %{{.*}}, ptr align 1 %{{.*}}, i64 %{{.*}}, i1 true)
; CHECK: attributes #[[REC]] = { alwaysinline cold }

; ptxas sizes a kernel's registers for its whole call graph, so the cold
; panic path must stay small: the shared recorder is inlined into each panic
; function (no 15-argument call), the printf arguments are stored before it
; runs (only the buffer stays live), and its copies (the values' words, the
; texts' bytes) are loops marked never to unroll (PTX `.pragma "nounroll"`),
; not memcpys that a constant length would expand into loads that ptxas
; hoists together.
; RUN: %oxide-opt -passes=lower-panics %s | FileCheck %s

@file = private constant [12 x i8] c"src/main.rs\00"
@loc = private constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\0F\00\00\00\0B\00\00\00" }>

declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64, i64, ptr)

define void @user(i64 %i) {
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64 %i, i64 4, ptr @loc)
  ret void
}

; CHECK-LABEL: define internal void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(
; CHECK: store i64 %1, ptr
; CHECK-NEXT: getelementptr
; CHECK-NEXT: store i64 %0, ptr
; CHECK-NEXT: call void @oxide.record_panic(
; CHECK-NEXT: call i32 @vprintf(
; CHECK-LABEL: define internal void @oxide.record_panic(
; CHECK-SAME: #[[REC:[0-9]+]]
; CHECK-NOT: llvm.memcpy
; CHECK: copy.element:
; CHECK: br i1 %{{.*}}, label %copy.element, label %copy.done, !llvm.loop ![[L1:[0-9]+]]
; CHECK: copy.element{{[0-9]+}}:
; CHECK: !llvm.loop ![[L2:[0-9]+]]
; CHECK: attributes #[[REC]] = { alwaysinline cold }
; CHECK: ![[L1]] = distinct !{![[L1]], ![[NOUNROLL:[0-9]+]]}
; CHECK: ![[NOUNROLL]] = !{!"llvm.loop.unroll.disable"}

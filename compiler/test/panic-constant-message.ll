; `panic!("literal")` calls panic_fmt with `Arguments::from_str(ptr, len)`;
; the call is rewritten to pass the string itself, so the message reaches the
; device print and the host's record.
; RUN: %oxide-opt -passes=lower-panics %s | FileCheck %s

@msg = private constant [4 x i8] c"boom"
@file = private constant [12 x i8] c"src/main.rs\00"
@loc = private constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\02\00\00\00(\00\00\00" }>

declare { ptr, ptr } @_ZN4core3fmt9Arguments8from_str17h4837b4dcbb3b6d3dE(ptr, i64)
declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr, ptr, ptr)

define void @user() {
  %a = call { ptr, ptr } @_ZN4core3fmt9Arguments8from_str17h4837b4dcbb3b6d3dE(ptr @msg, i64 4)
  %a0 = extractvalue { ptr, ptr } %a, 0
  %a1 = extractvalue { ptr, ptr } %a, 1
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr %a0, ptr %a1, ptr @loc)
  unreachable
}
; CHECK: c"GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked at %s:%u:%u:\0A%s\0A\00"
; CHECK-LABEL: define void @user()
; CHECK: call void @oxide.panic_str(ptr @msg, i64 4, ptr @loc)
; CHECK-NOT: call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt

; CHECK-LABEL: define internal void @oxide.panic_str(ptr %0, i64 %1, ptr %2)
; CHECK: %message = alloca [256 x i8]
; CHECK: copy.element:
; CHECK: load i8, ptr
; CHECK: store i8 %{{[0-9]+}}, ptr
; CHECK: store ptr %message, ptr
; CHECK: call void @oxide.record_panic(ptr %file, i64 %file_len, i32 %line, i32 %col, ptr %0, i64 %1,

; core's own formatted panics keep their values too: `assert_eq!` and
; `assert_ne!` (core::panicking::assert_failed, the operands' Debug, with or
; without a message of their own) and `Result::unwrap` on an `Err`
; (core::result::unwrap_failed, the error's Debug). The operands' types come
; from a v0 name's type arguments, or from the vtables a legacy-named body
; hands `assert_failed_inner`; the error's from the `&dyn Debug` vtable.
; RUN: %oxide-opt -passes=lower-panics %s | FileCheck %s

@file = private constant [12 x i8] c"src/main.rs\00"
@loc = private constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\02\00\00\00(\00\00\00" }>
@unwrap_msg = private constant [43 x i8] c"called `Result::unwrap()` on an `Err` value"
; "same at {}"
@same = private constant [11 x i8] c"\08same at \C0\00"
; A constant `None::<fmt::Arguments>`, as an optimised build loads it.
@none = private constant <{ ptr, ptr }> <{ ptr null, ptr undef }>

; `assert_failed::<u32, u32>`, shared from std (only declared).
declare void @_RINvNtCsgEmfK2I1SDS_4core9panicking13assert_failedmmECsjrHSEGnQ3l9_3std(i8, ptr, ptr, ptr, ptr, ptr)
declare void @_RNvNtCsgEmfK2I1SDS_4core6result13unwrap_failed(ptr, i64, ptr, ptr, ptr)
declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking19assert_failed_inner(i8, ptr, ptr, ptr, ptr, ptr, ptr)
declare i1 @"_ZN4core3fmt3num50_$LT$impl$u20$core..fmt..Debug$u20$for$u20$i16$GT$3fmt17h0123456789abcdefE"(ptr, ptr)
declare { ptr, ptr } @_ZN4core3fmt9Arguments3new17ha8e389c4f7d67187E(ptr, ptr)

; `<&T as Debug>::fmt` forwarding to i16's, and a vtable of it and of i16.
define i1 @"_ZN42_$LT$$RF$T$u20$as$u20$core..fmt..Debug$GT$3fmt17h0278d7e66caa1acbE"(ptr %self, ptr %f) {
  %inner = load ptr, ptr %self
  %r = call i1 @"_ZN4core3fmt3num50_$LT$impl$u20$core..fmt..Debug$u20$for$u20$i16$GT$3fmt17h0123456789abcdefE"(ptr %inner, ptr %f)
  ret i1 %r
}
@vtable_ref_i16 = private constant <{ ptr, [16 x i8], ptr }> <{ ptr null, [16 x i8] c"\08\00\00\00\00\00\00\00\08\00\00\00\00\00\00\00", ptr @"_ZN42_$LT$$RF$T$u20$as$u20$core..fmt..Debug$GT$3fmt17h0278d7e66caa1acbE" }>
@vtable_i16 = private constant <{ ptr, [16 x i8], ptr }> <{ ptr null, [16 x i8] c"\02\00\00\00\00\00\00\00\02\00\00\00\00\00\00\00", ptr @"_ZN4core3fmt3num50_$LT$impl$u20$core..fmt..Debug$u20$for$u20$i16$GT$3fmt17h0123456789abcdefE" }>

; A legacy-named `assert_failed::<i16, i16>` instance: its body passes
; `&left` and `&right` as `&dyn Debug`.
define void @_ZN4core9panicking13assert_failed17h0123456789abcdefE(i8 %kind, ptr %left, ptr %right, ptr %a0, ptr %a1, ptr %loc) {
  %l = alloca ptr
  %r = alloca ptr
  store ptr %left, ptr %l
  store ptr %right, ptr %r
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking19assert_failed_inner(i8 %kind, ptr %l, ptr @vtable_ref_i16, ptr %r, ptr @vtable_ref_i16, ptr %a0, ptr %loc)
  unreachable
}

; CHECK-DAG: @[[EQ:oxide.panic.format[.0-9]*]] = {{.*}} c"assertion `left == right` failed\0A  left: {0:?}\0A right: {1:?}"
; CHECK-DAG: @[[NE:oxide.panic.format[.0-9]*]] = {{.*}} c"assertion `left != right` failed: same at {0}\0A  left: {1:?}\0A right: {2:?}"
; CHECK-DAG: @[[UNWRAP:oxide.panic.format[.0-9]*]] = {{.*}} c"called `Result::unwrap()` on an `Err` value: {0:?}"
; CHECK-DAG: c"GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked at %s:%u:%u:\0Aassertion `left == right` failed\0A  left: %llu\0A right: %llu\0A\00"

; assert_eq!(x, y): None loaded from a constant.
; CHECK-LABEL: define void @assert_eq(
; CHECK: %[[L:panic.value[0-9]*]] = load i32, ptr %x
; CHECK: %[[R:panic.value[0-9]*]] = load i32, ptr %y
; CHECK: call void @{{oxide.panic_message[.0-9]*}}(i32 %[[L]], i32 %[[R]], ptr @loc)
define void @assert_eq(ptr %x, ptr %y) {
  %n0 = load ptr, ptr @none
  %n1 = load ptr, ptr getelementptr inbounds (i8, ptr @none, i64 8)
  call void @_RINvNtCsgEmfK2I1SDS_4core9panicking13assert_failedmmECsjrHSEGnQ3l9_3std(i8 0, ptr %x, ptr %y, ptr %n0, ptr %n1, ptr @loc)
  unreachable
}

; assert_ne!(x, y, "same at {}", i) through the legacy instance: the
; message's value first, then the operands (i16, kind 7).
; CHECK-LABEL: define void @assert_ne_message(
; CHECK: %[[I:panic.value[0-9]*]] = load i32, ptr %i
; CHECK: %[[L:panic.value[0-9]*]] = load i16, ptr %x
; CHECK: %[[R:panic.value[0-9]*]] = load i16, ptr %y
; CHECK: call void @{{oxide.panic_message[.0-9]*}}(i32 %[[I]], i16 %[[L]], i16 %[[R]], ptr @loc)
define void @assert_ne_message(ptr %x, ptr %y, i32 %iv) {
  %i = alloca i32
  store i32 %iv, ptr %i
  %args = alloca [16 x i8]
  store ptr %i, ptr %args
  %m = getelementptr inbounds i8, ptr %args, i64 8
  store ptr @_RNvXs8_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3impmNtB9_7Display3fmt, ptr %m
  %a = call { ptr, ptr } @_ZN4core3fmt9Arguments3new17ha8e389c4f7d67187E(ptr @same, ptr %args)
  %a0 = extractvalue { ptr, ptr } %a, 0
  %a1 = extractvalue { ptr, ptr } %a, 1
  call void @_ZN4core9panicking13assert_failed17h0123456789abcdefE(i8 1, ptr %x, ptr %y, ptr %a0, ptr %a1, ptr @loc)
  unreachable
}
declare i1 @_RNvXs8_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3impmNtB9_7Display3fmt(ptr, ptr)

; Result::<u32, i16>::unwrap on an Err.
; CHECK-LABEL: define void @unwrap_err(
; CHECK: %[[E:panic.value[0-9]*]] = load i16, ptr %e
; CHECK: call void @{{oxide.panic_message[.0-9]*}}(i16 %[[E]], ptr @loc)
define void @unwrap_err(i16 %ev) {
  %e = alloca i16
  store i16 %ev, ptr %e
  call void @_RNvNtCsgEmfK2I1SDS_4core6result13unwrap_failed(ptr @unwrap_msg, i64 43, ptr %e, ptr @vtable_i16, ptr @loc)
  unreachable
}

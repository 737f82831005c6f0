; A formatted panic keeps its values: each rt::Argument whose `fmt` method
; prints an integer, bool, char or float (through references too) is loaded
; where the panic happens and passed to a function made for the message,
; which records the values' bits and kinds (PanicRecord.def) with the
; message as a template in Rust's syntax, and prints them with the nearest
; printf conversion; anything else is `{..}`. Debug builds fill the argument
; array through `rt::Argument::new_*(sret, &value)` calls, release builds
; with inlined stores; both are read.
; RUN: %oxide-opt -passes=lower-panics %s | FileCheck %s

@file = private constant [12 x i8] c"src/main.rs\00"
@loc = private constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\02\00\00\00(\00\00\00" }>

; "{} > {:#x} {:?}!": a default placeholder, `#` (options 0x60800020), and
; a Debug (the trait is the method's, not the template's). ("!": the test's
; marker of the end.)
@t_debug = private constant [16 x i8] c"\C0\03 > \C1 \00\80`\01 \C0\01!\00"

declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr, ptr, ptr)
; fmt::Arguments::new as a debug build has it: it keeps the pointers.
define { ptr, ptr } @_ZN4core3fmt9Arguments3new17ha8e389c4f7d67187E(ptr %t, ptr %a) {
  %p = insertvalue { ptr, ptr } poison, ptr %t, 0
  %q = insertvalue { ptr, ptr } %p, ptr %a, 1
  ret { ptr, ptr } %q
}
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; The `fmt` methods: core's (v0 names), a legacy local copy, and `&T`.
declare i1 @_RNvXs8_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3impmNtB9_7Display3fmt(ptr, ptr)
declare i1 @_RNvXsu_NtNtCsgEmfK2I1SDS_4core3fmt3nummNtB7_8LowerHex3fmt(ptr, ptr)
declare i1 @"_ZN4core3fmt3num49_$LT$impl$u20$core..fmt..Debug$u20$for$u20$i8$GT$3fmt17h0123456789abcdefE"(ptr, ptr)
declare i1 @_RNvXs3_NtNtCsgEmfK2I1SDS_4core3fmt5floatfNtB7_7Display3fmt(ptr, ptr)
declare i1 @_RNvXs9_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3implNtB9_7Display3fmt(ptr, ptr)
declare i1 @_RNvXsg_NtCsgEmfK2I1SDS_4core3fmtbNtB5_7Display3fmt(ptr, ptr)
declare i1 @_RNvXsj_NtCsgEmfK2I1SDS_4core3fmtcNtB5_5Debug3fmt(ptr, ptr)
declare i1 @_RNvXsi_NtCsgEmfK2I1SDS_4core3fmteNtB5_7Display3fmt(ptr, ptr)
define i1 @"_ZN44_$LT$$RF$T$u20$as$u20$core..fmt..Display$GT$3fmt17h0278d7e66caa1acbE"(ptr %self, ptr %f) {
  %inner = load ptr, ptr %self
  %r = call i1 @_RNvXs8_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3impmNtB9_7Display3fmt(ptr %inner, ptr %f)
  ret i1 %r
}

; rt::Argument::new_display / new_debug as a debug build has them: the value's
; address at 0, the method at 8, copied out through the sret pointer.
define void @new_display_u32(ptr sret([16 x i8]) %out, ptr %value) {
  %tmp = alloca [16 x i8]
  store ptr %value, ptr %tmp
  %m = getelementptr inbounds i8, ptr %tmp, i64 8
  store ptr @_RNvXs8_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3impmNtB9_7Display3fmt, ptr %m
  call void @llvm.memcpy.p0.p0.i64(ptr %out, ptr %tmp, i64 16, i1 false)
  ret void
}
define void @new_lower_hex_u32(ptr sret([16 x i8]) %out, ptr %value) {
  store ptr %value, ptr %out
  %m = getelementptr inbounds i8, ptr %out, i64 8
  store ptr @_RNvXsu_NtNtCsgEmfK2I1SDS_4core3fmt3nummNtB7_8LowerHex3fmt, ptr %m
  ret void
}
define void @new_debug_i8(ptr sret([16 x i8]) %out, ptr %value) {
  store ptr %value, ptr %out
  %m = getelementptr inbounds i8, ptr %out, i64 8
  store ptr @"_ZN4core3fmt3num49_$LT$impl$u20$core..fmt..Debug$u20$for$u20$i8$GT$3fmt17h0123456789abcdefE", ptr %m
  ret void
}
define void @_ZN4core3fmt2rt8Argument10from_usize17h08eb375aef7142a8E(ptr sret([16 x i8]) %out, ptr %n) {
  %v = load i64, ptr %n
  store i64 %v, ptr %out
  ret void
}

; The records' templates and the printf formats.
; CHECK-DAG: @[[T1:oxide.panic.format[.0-9]*]] = private unnamed_addr constant [19 x i8] c"{0} > {1:#x} {2:?}!"
; CHECK-DAG: c"GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked at %s:%u:%u:\0A%llu > %#llx %lld!\0A\00"
; CHECK-DAG: @[[T2:oxide.panic.format[.0-9]*]] = private unnamed_addr constant [40 x i8] c"[{0:>6}|{1:+08.3}|{2} {3}|{4:?}] {{[{][{][.][.][}][}]}}!"
; CHECK-DAG: c"GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked at %s:%u:%u:\0A[%6llu|%+08.3f|%lld %s|'%c'] {..}!\0A\00"
; CHECK-DAG: @[[T3:oxide.panic.format[.0-9]*]] = private unnamed_addr constant [8 x i8] c"<{1:0$}>"
; CHECK-DAG: @[[PLAIN:oxide.panic.format[.0-9]*]] = private unnamed_addr constant [4 x i8] c"{..}"

; Debug build: a u32, `{:#x}` of another, `{:?}` of an i8 (core's Debug
; of integers is #[inline]: a legacy-named local copy).
; CHECK-LABEL: define void @debug_build(
; CHECK: %[[X:panic.value[0-9]*]] = load i32, ptr %x
; CHECK: %[[Y:panic.value[0-9]*]] = load i32, ptr %y
; CHECK: %[[I8:panic.value[0-9]*]] = load i8, ptr %z
; CHECK: call void @[[F1:oxide.panic_message[.0-9]*]](i32 %[[X]], i32 %[[Y]], i8 %[[I8]], ptr @loc)
; CHECK-NOT: panic_fmt
define void @debug_build(i32 %xv, i32 %yv, i8 %zv) {
  %x = alloca i32
  %y = alloca i32
  %z = alloca i8
  store i32 %xv, ptr %x
  store i32 %yv, ptr %y
  store i8 %zv, ptr %z
  %a0 = alloca [16 x i8]
  %a1 = alloca [16 x i8]
  %a2 = alloca [16 x i8]
  %args = alloca [48 x i8]
  call void @new_display_u32(ptr sret([16 x i8]) %a0, ptr %x)
  call void @new_lower_hex_u32(ptr sret([16 x i8]) %a1, ptr %y)
  call void @new_debug_i8(ptr sret([16 x i8]) %a2, ptr %z)
  call void @llvm.memcpy.p0.p0.i64(ptr %args, ptr %a0, i64 16, i1 false)
  %e1 = getelementptr inbounds i8, ptr %args, i64 16
  call void @llvm.memcpy.p0.p0.i64(ptr %e1, ptr %a1, i64 16, i1 false)
  %e2 = getelementptr inbounds i8, ptr %args, i64 32
  call void @llvm.memcpy.p0.p0.i64(ptr %e2, ptr %a2, i64 16, i1 false)
  %a = call { ptr, ptr } @_ZN4core3fmt9Arguments3new17ha8e389c4f7d67187E(ptr @t_debug, ptr %args)
  %p0 = extractvalue { ptr, ptr } %a, 0
  %p1 = extractvalue { ptr, ptr } %a, 1
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr %p0, ptr %p1, ptr @loc)
  unreachable
}

; Release build: inlined stores; a u32 through `&T` (forwarding to u32's
; Display), an f32, an i32, a bool, a char (Debug) and a `&str`, which prints
; as {..}.
; CHECK-LABEL: define void @release_build(
; CHECK: %[[RU:[0-9]+]] = load ptr, ptr %ru
; CHECK: %[[U:panic.value[0-9]*]] = load i32, ptr %[[RU]]
; CHECK: %[[F:panic.value[0-9]*]] = load float, ptr %f
; CHECK: %[[I:panic.value[0-9]*]] = load i32, ptr %i
; CHECK: %[[B:panic.value[0-9]*]] = load i8, ptr %b
; CHECK: %[[C:panic.value[0-9]*]] = load i32, ptr %c
; CHECK: call void @[[F2:oxide.panic_message[.0-9]*]](i32 %[[U]], float %[[F]], i32 %[[I]], i8 %[[B]], i32 %[[C]], ptr @loc)
define void @release_build(ptr %uref, float %fv, i32 %iv, i8 %bv, i32 %cv, ptr %s) {
  %ru = alloca ptr
  %f = alloca float
  %i = alloca i32
  %b = alloca i8
  %c = alloca i32
  store ptr %uref, ptr %ru
  store float %fv, ptr %f
  store i32 %iv, ptr %i
  store i8 %bv, ptr %b
  store i32 %cv, ptr %c
  %args = alloca [96 x i8]
  store ptr %ru, ptr %args
  %m0 = getelementptr inbounds i8, ptr %args, i64 8
  store ptr @"_ZN44_$LT$$RF$T$u20$as$u20$core..fmt..Display$GT$3fmt17h0278d7e66caa1acbE", ptr %m0
  %v1 = getelementptr inbounds i8, ptr %args, i64 16
  store ptr %f, ptr %v1
  %m1 = getelementptr inbounds i8, ptr %args, i64 24
  store ptr @_RNvXs3_NtNtCsgEmfK2I1SDS_4core3fmt5floatfNtB7_7Display3fmt, ptr %m1
  %v2 = getelementptr inbounds i8, ptr %args, i64 32
  store ptr %i, ptr %v2
  %m2 = getelementptr inbounds i8, ptr %args, i64 40
  store ptr @_RNvXs9_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3implNtB9_7Display3fmt, ptr %m2
  %v3 = getelementptr inbounds i8, ptr %args, i64 48
  store ptr %b, ptr %v3
  %m3 = getelementptr inbounds i8, ptr %args, i64 56
  store ptr @_RNvXsg_NtCsgEmfK2I1SDS_4core3fmtbNtB5_7Display3fmt, ptr %m3
  %v4 = getelementptr inbounds i8, ptr %args, i64 64
  store ptr %c, ptr %v4
  %m4 = getelementptr inbounds i8, ptr %args, i64 72
  store ptr @_RNvXsj_NtCsgEmfK2I1SDS_4core3fmtcNtB5_5Debug3fmt, ptr %m4
  %v5 = getelementptr inbounds i8, ptr %args, i64 80
  store ptr %s, ptr %v5
  %m5 = getelementptr inbounds i8, ptr %args, i64 88
  store ptr @_RNvXsi_NtCsgEmfK2I1SDS_4core3fmteNtB5_7Display3fmt, ptr %m5
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr @t_release2, ptr %args, ptr @loc)
  unreachable
}
; "[{:>6}|{:+08.3}|{} {}|{:?}] {}!": width (options 0x28000020, 6); `+0`
; with width 8 and precision 3 (0x79200020); two plain ones; a Debug; the
; `&str`.
@t_release2 = private constant [36 x i8] c"\01[\C3 \00\00(\06\00\01|\C7 \00 y\08\00\03\00\01|\C0\01 \C0\01|\C0\02] \C0\01!\00"

; A width from an argument (`rt::Argument::from_usize`): a value of its own.
; CHECK-LABEL: define void @width_argument(
; CHECK: %[[W:panic.value[0-9]*]] = load i64, ptr %w
; CHECK: %[[V:panic.value[0-9]*]] = load i32, ptr %x
; CHECK: call void @{{oxide.panic_message[.0-9]*}}(i64 %[[W]], i32 %[[V]], ptr @loc)
define void @width_argument(i32 %xv, i64 %wv) {
  %x = alloca i32
  %w = alloca i64
  store i32 %xv, ptr %x
  store i64 %wv, ptr %w
  %a0 = alloca [16 x i8]
  %a1 = alloca [16 x i8]
  %args = alloca [32 x i8]
  call void @new_display_u32(ptr sret([16 x i8]) %a0, ptr %x)
  call void @_ZN4core3fmt2rt8Argument10from_usize17h08eb375aef7142a8E(ptr sret([16 x i8]) %a1, ptr %w)
  call void @llvm.memcpy.p0.p0.i64(ptr %args, ptr %a0, i64 16, i1 false)
  %e1 = getelementptr inbounds i8, ptr %args, i64 16
  call void @llvm.memcpy.p0.p0.i64(ptr %e1, ptr %a1, i64 16, i1 false)
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr @t_width2, ptr %args, ptr @loc)
  unreachable
}
; "<{:w$}>"
@t_width2 = private constant [12 x i8] c"\01<\D3 \00\00h\01\00\01>\00"

; An argument array written twice (or through a variable index) is not
; plain: its values print as {..}, and with none left the message is text.
; CHECK-LABEL: define void @unreadable(
; CHECK: call void @oxide.panic_str(ptr @[[PLAIN]], i64 4, ptr @loc)
define void @unreadable(ptr %x, ptr %y) {
  %args = alloca [16 x i8]
  store ptr %x, ptr %args
  store ptr %y, ptr %args
  %m = getelementptr inbounds i8, ptr %args, i64 8
  store ptr @_RNvXs8_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3impmNtB9_7Display3fmt, ptr %m
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr @t_one, ptr %args, ptr @loc)
  unreachable
}
@t_one = private constant [2 x i8] c"\C0\00"

; The shared panic: the header into the printf buffer, the recorder with
; the values, vprintf, trap.
; CHECK-LABEL: define internal void @oxide.panic_values(ptr %0, i64 %1, ptr %2, ptr %3, ptr %4, i64 %5, i32 %6, ptr %7)
; CHECK: call void @oxide.record_panic(ptr %file, i64 %file_len, i32 %line, i32 %col, ptr %0, i64 %1, ptr %4, i64 %5, i32 %6,
; CHECK: call i32 @vprintf(ptr %2, ptr %3)
; CHECK: call void @llvm.trap()

; The message functions: the values' bits into 16-byte slots, the printf
; arguments behind the header, the kinds (u32, f32, i32, bool, char:
; 0x0E0D080B03; u32, u32, i8: 0x060303), then the shared panic.
; CHECK: define internal void @[[F2]](i32 %0, float %1, i32 %2, i8 %3, i32 %4, ptr %5) #[[ATTRS:[0-9]+]]
; CHECK: %values = alloca [5 x i128]
; CHECK: bitcast float %1 to i32
; CHECK: fpext float %1 to double
; CHECK: select i1 %{{[0-9]+}}, ptr @{{oxide.panic.bool[.0-9]*}}, ptr @{{oxide.panic.bool[.0-9]*}}
; CHECK: icmp ult i32 %4, 128
; CHECK: call void @oxide.panic_values(ptr @[[T2]], i64 40, ptr @{{oxide.panic.fmt[.0-9]*}}, ptr %printf.args, ptr %values, i64 60348173059, i32 5, ptr %5)
; CHECK: define internal void @[[F1]](i32 %0, i32 %1, i8 %2, ptr %3)
; CHECK: %values = alloca [3 x i128]
; CHECK: zext i32 %0 to i128
; CHECK: zext i8 %2 to i128
; CHECK: sext i8 %2 to i64
; CHECK: %printf.args = alloca { i32, i32, i32, i32, i32, i32, ptr, i32, i32, i64, i64, i64 }
; CHECK: call void @oxide.panic_values(ptr @[[T1]], i64 19, ptr @{{oxide.panic.fmt[.0-9]*}}, ptr %printf.args, ptr %values, i64 393987, i32 3, ptr %3)
; CHECK: attributes #[[ATTRS]] = { cold noinline noreturn "oxide-panic" }

; `panic!` with values passes panic_fmt a `format_args!` template (Rust
; 1.9x's byte encoding: length-prefixed pieces, placeholder bytes 0b11xxxxxx
; with optional fields, a zero end byte). A value whose argument cannot be
; read (here: the array is not the panicking function's own memory) prints
; as `{..}`; with no value left the message is the constant text. Literal
; messages come as `Arguments::from_str` or, inlined, as the string and
; `len << 1 | 1`. A template that does not decode keeps the generic message.
; (panic-format-values.ll: the values themselves.)
; RUN: %oxide-opt -passes=lower-panics %s | FileCheck %s

; "value {} too large at {}" with default placeholders.
@plain = private constant [25 x i8] c"\06value \C0\0E too large at \C0\00"
; A placeholder with flags (4 bytes) and an argument index (2 bytes), then
; a piece long enough for the 16-bit length form (0x80, 3, 0).
@spec = private constant [17 x i8] c"\02x=\C9\00\00\00\00\01\00\80\03\00 ok\00"
; A byte in 0x81..0xBF cannot start a part.
@bad = private constant [4 x i8] c"\02ab\90"
@lit = private constant [9 x i8] c"boom here"
@file = private constant [12 x i8] c"src/main.rs\00"
@loc = private constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\02\00\00\00(\00\00\00" }>

declare { ptr, ptr } @_ZN4core3fmt9Arguments3new17ha8e389c4f7d67187E(ptr, ptr)
declare { ptr, ptr } @_RINvMs2_NtCs8NwYtU1Mohg_4core3fmtNtB6_9Arguments3newKj19_Kj2_ECsd9bTO3ri0CN_13device_panics(ptr, ptr)
declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr, ptr, ptr)

; CHECK-DAG: @[[PLAIN:oxide.panic.format[.0-9]*]] = private unnamed_addr constant [28 x i8] c"value {..} too large at {..}"
; CHECK-DAG: @[[SPEC:oxide.panic.format[.0-9]*]] = private unnamed_addr constant [9 x i8] c"x={..} ok"

; Debug builds: through Arguments::new.
; CHECK-LABEL: define void @debug_build(
; CHECK: call void @oxide.panic_str(ptr @[[PLAIN]], i64 28, ptr @loc)
define void @debug_build(ptr %args) {
  %a = call { ptr, ptr } @_ZN4core3fmt9Arguments3new17ha8e389c4f7d67187E(ptr @plain, ptr %args)
  %a0 = extractvalue { ptr, ptr } %a, 0
  %a1 = extractvalue { ptr, ptr } %a, 1
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr %a0, ptr %a1, ptr @loc)
  unreachable
}

; The same with nightly's v0 mangling, which keeps the const generics
; (`<core::fmt::Arguments>::new::<25, 2>`); one string for both.
; CHECK-LABEL: define void @debug_build_v0(
; CHECK: call void @oxide.panic_str(ptr @[[PLAIN]], i64 28, ptr @loc)
define void @debug_build_v0(ptr %args) {
  %a = call { ptr, ptr } @_RINvMs2_NtCs8NwYtU1Mohg_4core3fmtNtB6_9Arguments3newKj19_Kj2_ECsd9bTO3ri0CN_13device_panics(ptr @plain, ptr %args)
  %a0 = extractvalue { ptr, ptr } %a, 0
  %a1 = extractvalue { ptr, ptr } %a, 1
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr %a0, ptr %a1, ptr @loc)
  unreachable
}

; Release builds: the template itself.
; CHECK-LABEL: define void @release_build(
; CHECK: call void @oxide.panic_str(ptr @[[SPEC]], i64 9, ptr @loc)
define void @release_build(ptr %args) {
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr @spec, ptr %args, ptr @loc)
  unreachable
}

; Release builds, a literal: the string and its length, tagged.
; CHECK-LABEL: define void @release_literal(
; CHECK: call void @oxide.panic_str(ptr @lit, i64 9, ptr @loc)
define void @release_literal() {
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr @lit, ptr inttoptr (i64 19 to ptr), ptr @loc)
  unreachable
}

; CHECK-LABEL: define void @undecodable(
; CHECK: call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr @bad,
define void @undecodable(ptr %args) {
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr @bad, ptr %args, ptr @loc)
  unreachable
}

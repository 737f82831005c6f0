; 16-bit (and 8-bit) negations and every absolute value become inline PTX
; that ptxas compiles with wrap-around at the type's minimum: `sub.u16`
; instead of `neg.s16`, and shift/xor/subtract instead of `abs.sN`
; (PtxasHazards.def says what ptxas does with those). 32- and 64-bit
; negations stay: ptxas wraps them. The whole compile's PTX has none of
; the hazards (ptxas-hazards.ll tests the check that refuses them).
; RUN: %oxide-opt -p keep-negation-wrap %s | FileCheck %s
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)

; CHECK-LABEL: define i16 @neg16(
; CHECK-NEXT: %n = call i16 asm "sub.u16 $0, 0, $1;", "=h,h"(i16 %x)
; CHECK-NEXT: ret i16 %n
define i16 @neg16(i16 %x) {
  %n = sub i16 0, %x
  ret i16 %n
}

; i8 is computed in 16-bit registers: the same subtraction, widened.
; CHECK-LABEL: define i8 @neg8(
; CHECK-NEXT: %[[W:.*]] = zext i8 %x to i16
; CHECK-NEXT: %[[N:.*]] = call i16 asm "sub.u16 $0, 0, $1;", "=h,h"(i16 %[[W]])
; CHECK-NEXT: %n = trunc i16 %[[N]] to i8
define i8 @neg8(i8 %x) {
  %n = sub i8 0, %x
  ret i8 %n
}

; CHECK-LABEL: define i32 @neg32(
; CHECK-NEXT: %n = sub i32 0, %x
define i32 @neg32(i32 %x) {
  %n = sub i32 0, %x
  ret i32 %n
}

; CHECK-LABEL: define i16 @abs16(
; CHECK-NEXT: %a = call i16 asm "{ .reg .b16 %oxide_sign; shr.s16 %oxide_sign, $1, 15; xor.b16 $0, $1, %oxide_sign; sub.u16 $0, $0, %oxide_sign; }", "=h,h"(i16 %x)
define i16 @abs16(i16 %x) {
  %a = call i16 @llvm.abs.i16(i16 %x, i1 false)
  ret i16 %a
}

; CHECK-LABEL: define i32 @abs32(
; CHECK-NEXT: %a = call i32 asm "{ .reg .b32 %oxide_sign; shr.s32 %oxide_sign, $1, 31; xor.b32 $0, $1, %oxide_sign; sub.s32 $0, $0, %oxide_sign; }", "=r,r"(i32 %x)
define i32 @abs32(i32 %x) {
  %a = call i32 @llvm.abs.i32(i32 %x, i1 false)
  ret i32 %a
}

; Also where MIN is poison (`abs` after a debug build's overflow check):
; the check of the PTX admits no `abs.s64` at all.
; CHECK-LABEL: define i64 @abs64(
; CHECK-NEXT: %a = call i64 asm "{ .reg .b64 %oxide_sign; shr.s64 %oxide_sign, $1, 63; xor.b64 $0, $1, %oxide_sign; sub.s64 $0, $0, %oxide_sign; }", "=l,l"(i64 %x)
define i64 @abs64(i64 %x) {
  %a = call i64 @llvm.abs.i64(i64 %x, i1 true)
  ret i64 %a
}

; i8: sign-extended to 16 bits first, so |-128| = 128 keeps its low byte.
; CHECK-LABEL: define i8 @abs8(
; CHECK-NEXT: %[[W:.*]] = sext i8 %x to i16
; CHECK-NEXT: %[[A:.*]] = call i16 asm "{ .reg .b16 %oxide_sign; shr.s16
; CHECK-NEXT: %a = trunc i16 %[[A]] to i8
define i8 @abs8(i8 %x) {
  %a = call i8 @llvm.abs.i8(i8 %x, i1 false)
  ret i8 %a
}

; `0i16.overflowing_sub(x)`: the negation, and overflow exactly at MIN.
; CHECK-LABEL: define i1 @zero_minus_overflows(
; CHECK-NEXT: %[[O:.*]] = icmp eq i16 %x, -32768
; CHECK-NEXT: %[[N:.*]] = call i16 asm "sub.u16 $0, 0, $1;", "=h,h"(i16 %x)
; CHECK-NEXT: %[[P:.*]] = insertvalue { i16, i1 } poison, i16 %[[N]], 0
; CHECK-NEXT: %r = insertvalue { i16, i1 } %[[P]], i1 %[[O]], 1
; CHECK-NEXT: %f = extractvalue { i16, i1 } %r, 1
define i1 @zero_minus_overflows(i16 %x) {
  %r = call { i16, i1 } @llvm.ssub.with.overflow.i16(i16 0, i16 %x)
  %f = extractvalue { i16, i1 } %r, 1
  ret i1 %f
}

; Unsigned: a borrow for every x but 0.
; CHECK-LABEL: define i1 @zero_minus_borrows(
; CHECK-NEXT: %[[O:.*]] = icmp ne i16 %x, 0
define i1 @zero_minus_borrows(i16 %x) {
  %r = call { i16, i1 } @llvm.usub.with.overflow.i16(i16 0, i16 %x)
  %f = extractvalue { i16, i1 } %r, 1
  ret i1 %f
}

; `saturating_neg`: MAX for MIN.
; CHECK-LABEL: define i16 @saturating_neg(
; CHECK-NEXT: %[[M:.*]] = icmp eq i16 %x, -32768
; CHECK-NEXT: %[[N:.*]] = call i16 asm "sub.u16 $0, 0, $1;", "=h,h"(i16 %x)
; CHECK-NEXT: %r = select i1 %[[M]], i16 32767, i16 %[[N]]
define i16 @saturating_neg(i16 %x) {
  %r = call i16 @llvm.ssub.sat.i16(i16 0, i16 %x)
  ret i16 %r
}

; Left alone: a subtraction from something else, and ssub.sat from another value.
; CHECK-LABEL: define i16 @other_sub(
; CHECK-NEXT: %d = sub i16 1, %x
; CHECK-NEXT: %s = call i16 @llvm.ssub.sat.i16(i16 %d, i16 %x)
define i16 @other_sub(i16 %x) {
  %d = sub i16 1, %x
  %s = call i16 @llvm.ssub.sat.i16(i16 %d, i16 %x)
  ret i16 %s
}

; The whole compile: a kernel using all of them leaves no hazard in the PTX.
; PTX: sub.u16
; PTX-NOT: neg.s16
; PTX-NOT: abs.s{{16|32|64}}
define internal void @_ZN4demo26__oxide_kernel_entry_edges17h0123456789abcdefE(ptr %0, ptr %1) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 8, i64 8)
  call void @__oxide_stub_param_layout(i32 1, i64 8, i64 8)
  %out = load ptr, ptr %0, align 8
  %v = load i64, ptr %1, align 8
  %x16 = trunc i64 %v to i16
  %n16 = sub i16 0, %x16
  %a16 = call i16 @llvm.abs.i16(i16 %x16, i1 false)
  %x32 = trunc i64 %v to i32
  %a32 = call i32 @llvm.abs.i32(i32 %x32, i1 false)
  %a64 = call i64 @llvm.abs.i64(i64 %v, i1 false)
  %o = call { i16, i1 } @llvm.ssub.with.overflow.i16(i16 0, i16 %x16)
  %of = extractvalue { i16, i1 } %o, 1
  %e1 = sext i16 %n16 to i64
  %e2 = sext i16 %a16 to i64
  %e3 = sext i32 %a32 to i64
  %e4 = zext i1 %of to i64
  %s1 = add i64 %e1, %e2
  %s2 = add i64 %e3, %a64
  %s3 = add i64 %s1, %s2
  %s4 = add i64 %s3, %e4
  store i64 %s4, ptr %out
  ret void
}
@launch_site = global ptr @_ZN4demo26__oxide_kernel_entry_edges17h0123456789abcdefE
attributes #0 = { noinline "target-cpu"="x86-64" }

declare i8 @llvm.abs.i8(i8, i1)
declare i16 @llvm.abs.i16(i16, i1)
declare i32 @llvm.abs.i32(i32, i1)
declare i64 @llvm.abs.i64(i64, i1)
declare { i16, i1 } @llvm.ssub.with.overflow.i16(i16, i16)
declare { i16, i1 } @llvm.usub.with.overflow.i16(i16, i16)
declare i16 @llvm.ssub.sat.i16(i16, i16)


; The whole device compile leaves none of PtxasHazards.def's instructions
; in the PTX, whichever way the backend chose them: a 16-bit negation
; (also inside `0i16.overflowing_sub(x)`), a 32-bit negation between two
; signed maxima (ptxas fuses them into one VIMNMX3 and drops the negation),
; `llvm.abs` at every width, an
; i128 `abs` of a value with 64 sign bits (narrowed to 64 bits by the
; backend), the xor/subtract idiom, an absolute difference, and the 128-bit
; division the backend expands (which takes absolute values).
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s
; CHECK: cvt.u32.u16 %oxide_t, {{%rs[0-9]+}}; not.b32 %oxide_t, %oxide_t; add.s32 %oxide_t, %oxide_t, 1; cvt.u16.u32
; CHECK-NOT: neg.s16
; CHECK-NOT: neg.s32
; CHECK-NOT: abs.s{{16|32|64}}

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)

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
  %w = sext i32 %x32 to i128
  %a128 = call i128 @llvm.abs.i128(i128 %w, i1 true)
  %a128t = trunc i128 %a128 to i64
  %o = call { i16, i1 } @llvm.ssub.with.overflow.i16(i16 0, i16 %x16)
  %of = extractvalue { i16, i1 } %o, 1
  %s = ashr i64 %v, 63
  %f = xor i64 %s, %v
  %xa = sub i64 %f, %s
  %gt = icmp sgt i64 %v, 7
  %d1 = sub i64 %v, 7
  %d2 = sub i64 7, %v
  %abd = select i1 %gt, i64 %d1, i64 %d2
  %wide = sext i64 %v to i128
  %q = sdiv i128 %wide, 3
  %qt = trunc i128 %q to i64
  %n32 = sub i32 0, %x32
  %hi32 = lshr i64 %v, 32
  %y32 = trunc i64 %hi32 to i32
  %m1 = call i32 @llvm.smax.i32(i32 %y32, i32 %n32)
  %m2 = call i32 @llvm.smax.i32(i32 %m1, i32 %a32)
  %e5 = sext i32 %m2 to i64
  %e1 = sext i16 %n16 to i64
  %e2 = sext i16 %a16 to i64
  %e3 = sext i32 %a32 to i64
  %e4 = zext i1 %of to i64
  %s1 = add i64 %e1, %e2
  %s2 = add i64 %e3, %a64
  %s3 = add i64 %s1, %s2
  %s4 = add i64 %s3, %e4
  %s5 = add i64 %s4, %a128t
  %s6 = add i64 %s5, %xa
  %s7 = add i64 %s6, %abd
  %s8 = add i64 %s7, %qt
  %s9 = add i64 %s8, %e5
  store i64 %s9, ptr %out
  ret void
}
@launch_site = global ptr @_ZN4demo26__oxide_kernel_entry_edges17h0123456789abcdefE
attributes #0 = { noinline "target-cpu"="x86-64" }

declare i16 @llvm.abs.i16(i16, i1)
declare i32 @llvm.abs.i32(i32, i1)
declare i64 @llvm.abs.i64(i64, i1)
declare i128 @llvm.abs.i128(i128, i1)
declare { i16, i1 } @llvm.ssub.with.overflow.i16(i16, i16)
declare i32 @llvm.smax.i32(i32, i32)

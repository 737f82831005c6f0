; A select that hands a NaN `x` back as itself, against a constant it was
; compared with (`if x < 0.5 { 0.5 } else { x }`), becomes a merge of the
; bits under a mask, which ptxas cannot turn into the NaN-canonicalising
; FMNMX.NAN; the PTX keeps it (no selp.f32 for it). Selects whose NaN way
; returns the constant, of two variables, or against a NaN constant stay.
; RUN: %oxide-opt -passes=keep-nan-payloads %s | FileCheck %s
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()

; CHECK-LABEL: define float @at_least_half(
; CHECK-NEXT: %c = fcmp olt float %x, 5.000000e-01
; CHECK-NEXT: %[[X:.*]] = bitcast float %x to i32
; CHECK-NEXT: %[[M:.*]] = sext i1 %c to i32
; CHECK-NEXT: %[[D:.*]] = xor i32 %[[X]], 1056964608
; CHECK-NEXT: %[[A:.*]] = and i32 %[[D]], %[[M]]
; CHECK-NEXT: %[[R:.*]] = xor i32 %[[X]], %[[A]]
; CHECK-NEXT: %[[F:.*]] = bitcast i32 %[[R]] to float
; CHECK-NEXT: ret float %[[F]]
define float @at_least_half(float %x) {
  %c = fcmp olt float %x, 0.5
  %r = select i1 %c, float 0.5, float %x
  ret float %r
}

; The unordered mirror (`if !(x >= 2.0) { 2.0 } else { x }` as O3 writes
; it: true for a NaN, so the NaN arm is the true one) and f64.
; CHECK-LABEL: define double @unordered(
; CHECK: sext i1 %c to i64
; CHECK-NOT: select
define double @unordered(double %x) {
  %c = fcmp uge double %x, 2.0
  %r = select i1 %c, double %x, double 2.0
  ret double %r
}

; Left alone: a NaN takes the constant (ptxas's plain FMNMX returns it, as
; Rust does); two variables; a NaN constant; not the compared value.
; CHECK-LABEL: define float @kept(
; CHECK-NEXT: %c1 = fcmp ogt float %x, 5.000000e-01
; CHECK-NEXT: %r1 = select i1 %c1, float %x, float 5.000000e-01
; CHECK-NEXT: %c2 = fcmp olt float %x, %y
; CHECK-NEXT: %r2 = select i1 %c2, float %y, float %x
; CHECK-NEXT: %c3 = fcmp olt float %x, 0x7FF8000000000000
; CHECK-NEXT: %r3 = select i1 %c3, float 0x7FF8000000000000, float %x
; CHECK-NEXT: %r4 = select i1 %c1, float 5.000000e-01, float %y
define float @kept(float %x, float %y) {
  %c1 = fcmp ogt float %x, 0.5
  %r1 = select i1 %c1, float %x, float 0.5
  %c2 = fcmp olt float %x, %y
  %r2 = select i1 %c2, float %y, float %x
  %c3 = fcmp olt float %x, 0x7FF8000000000000
  %r3 = select i1 %c3, float 0x7FF8000000000000, float %x
  %r4 = select i1 %c1, float 0.5, float %y
  %s1 = fadd float %r1, %r2
  %s2 = fadd float %r3, %r4
  %s = fadd float %s1, %s2
  ret float %s
}

; Through the whole device compile: the backend keeps the merge.
define internal void @_ZN4demo4half17h0123456789abcdefE(ptr noalias noundef nonnull readonly align 4 %in.0, i64 %in.1, ptr %out.0, i64 %out.1) unnamed_addr #1 {
  %t = call i32 @__oxide_stub_thread_idx_x()
  %i = zext i32 %t to i64
  %pa = getelementptr inbounds float, ptr %in.0, i64 %i
  %a = load float, ptr %pa, align 4
  %c = fcmp olt float %a, 0.5
  %r = select i1 %c, float 0.5, float %a
  %po = getelementptr inbounds float, ptr %out.0, i64 %i
  store float %r, ptr %po, align 4
  ret void
}

define internal void @_ZN4demo25__oxide_kernel_entry_half17h0123456789abcdefE(ptr %0, ptr %1) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  call void @__oxide_stub_param_layout(i32 1, i64 16, i64 8)
  %in.0 = load ptr, ptr %0, align 8
  %l0 = getelementptr inbounds i8, ptr %0, i64 8
  %in.1 = load i64, ptr %l0, align 8
  %out.0 = load ptr, ptr %1, align 8
  %l1 = getelementptr inbounds i8, ptr %1, i64 8
  %out.1 = load i64, ptr %l1, align 8
  call void @_ZN4demo4half17h0123456789abcdefE(ptr noalias noundef nonnull readonly align 4 %in.0, i64 %in.1, ptr %out.0, i64 %out.1)
  ret void
}
@launch_site = global ptr @_ZN4demo25__oxide_kernel_entry_half17h0123456789abcdefE
attributes #0 = { noinline "target-cpu"="x86-64" }
attributes #1 = { "target-cpu"="x86-64" }

; PTX: .visible .entry _ZN4demo25__oxide_kernel_entry_half17h0123456789abcdefE(
; PTX: setp.{{[a-z]+}}.f32 [[P:%p[0-9]+]], [[X:%r[0-9]+]], 0f3F000000;
; PTX-NOT: selp.f32
; PTX: xor.b32
; PTX: st.global.b32

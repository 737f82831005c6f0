; Rust's saturating float → integer casts become PTX's conversion, which
; saturates and maps NaN to 0 itself: one cvt.rzi for 32 and 64 bits, then
; an integer clamp for 8 and 16. Half-precision sources, 128-bit
; destinations and vectors stay as they are.
; RUN: %oxide-opt -passes=lower-saturating-casts %s | FileCheck %s
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)

; CHECK-LABEL: define i32 @f32_to_i32(
; CHECK-NEXT: %r = call i32 @llvm.nvvm.f2i.rz(float %x)
; CHECK-NEXT: ret i32 %r
define i32 @f32_to_i32(float %x) {
  %r = call i32 @llvm.fptosi.sat.i32.f32(float %x)
  ret i32 %r
}

; CHECK-LABEL: define i32 @f32_to_u32(
; CHECK-NEXT: call i32 @llvm.nvvm.f2ui.rz(float %x)
define i32 @f32_to_u32(float %x) {
  %r = call i32 @llvm.fptoui.sat.i32.f32(float %x)
  ret i32 %r
}

; CHECK-LABEL: define i32 @f64_to_i32(
; CHECK-NEXT: call i32 @llvm.nvvm.d2i.rz(double %x)
define i32 @f64_to_i32(double %x) {
  %r = call i32 @llvm.fptosi.sat.i32.f64(double %x)
  ret i32 %r
}

; CHECK-LABEL: define i32 @f64_to_u32(
; CHECK-NEXT: call i32 @llvm.nvvm.d2ui.rz(double %x)
define i32 @f64_to_u32(double %x) {
  %r = call i32 @llvm.fptoui.sat.i32.f64(double %x)
  ret i32 %r
}

; CHECK-LABEL: define i64 @f32_to_i64(
; CHECK-NEXT: call i64 @llvm.nvvm.f2ll.rz(float %x)
define i64 @f32_to_i64(float %x) {
  %r = call i64 @llvm.fptosi.sat.i64.f32(float %x)
  ret i64 %r
}

; CHECK-LABEL: define i64 @f32_to_u64(
; CHECK-NEXT: call i64 @llvm.nvvm.f2ull.rz(float %x)
define i64 @f32_to_u64(float %x) {
  %r = call i64 @llvm.fptoui.sat.i64.f32(float %x)
  ret i64 %r
}

; CHECK-LABEL: define i64 @f64_to_i64(
; CHECK-NEXT: call i64 @llvm.nvvm.d2ll.rz(double %x)
define i64 @f64_to_i64(double %x) {
  %r = call i64 @llvm.fptosi.sat.i64.f64(double %x)
  ret i64 %r
}

; CHECK-LABEL: define i64 @f64_to_u64(
; CHECK-NEXT: call i64 @llvm.nvvm.d2ull.rz(double %x)
define i64 @f64_to_u64(double %x) {
  %r = call i64 @llvm.fptoui.sat.i64.f64(double %x)
  ret i64 %r
}

; Narrow and signed: the 32-bit conversion clamped to [-128, 127].
; CHECK-LABEL: define i8 @f32_to_i8(
; CHECK-NEXT: %[[C:.*]] = call i32 @llvm.nvvm.f2i.rz(float %x)
; CHECK-NEXT: %[[HI:.*]] = call i32 @llvm.smin.i32(i32 %[[C]], i32 127)
; CHECK-NEXT: %[[LO:.*]] = call i32 @llvm.smax.i32(i32 %[[HI]], i32 -128)
; CHECK-NEXT: %r = trunc i32 %[[LO]] to i8
; CHECK-NEXT: ret i8 %r
define i8 @f32_to_i8(float %x) {
  %r = call i8 @llvm.fptosi.sat.i8.f32(float %x)
  ret i8 %r
}

; Narrow and unsigned: the 32-bit conversion clamped to 65535.
; CHECK-LABEL: define i16 @f64_to_u16(
; CHECK-NEXT: %[[C:.*]] = call i32 @llvm.nvvm.d2ui.rz(double %x)
; CHECK-NEXT: %[[HI:.*]] = call i32 @llvm.umin.i32(i32 %[[C]], i32 65535)
; CHECK-NEXT: %r = trunc i32 %[[HI]] to i16
define i16 @f64_to_u16(double %x) {
  %r = call i16 @llvm.fptoui.sat.i16.f64(double %x)
  ret i16 %r
}

; CHECK-LABEL: define i16 @f32_to_i16(
; CHECK: call i32 @llvm.smin.i32(i32 %{{.*}}, i32 32767)
; CHECK: call i32 @llvm.smax.i32(i32 %{{.*}}, i32 -32768)
define i16 @f32_to_i16(float %x) {
  %r = call i16 @llvm.fptosi.sat.i16.f32(float %x)
  ret i16 %r
}

; Left alone: a half-precision source, a 128-bit destination, a vector.
; CHECK-LABEL: define i32 @half_to_i32(
; CHECK-NEXT: call i32 @llvm.fptosi.sat.i32.f16(half %x)
define i32 @half_to_i32(half %x) {
  %r = call i32 @llvm.fptosi.sat.i32.f16(half %x)
  ret i32 %r
}

; CHECK-LABEL: define i128 @f64_to_i128(
; CHECK-NEXT: call i128 @llvm.fptosi.sat.i128.f64(double %x)
define i128 @f64_to_i128(double %x) {
  %r = call i128 @llvm.fptosi.sat.i128.f64(double %x)
  ret i128 %r
}

; CHECK-LABEL: define <2 x i32> @vector(
; CHECK-NEXT: call <2 x i32> @llvm.fptoui.sat.v2i32.v2f32(<2 x float> %x)
define <2 x i32> @vector(<2 x float> %x) {
  %r = call <2 x i32> @llvm.fptoui.sat.v2i32.v2f32(<2 x float> %x)
  ret <2 x i32> %r
}

; Through the whole pipeline, in a kernel: each cast is one conversion, no
; compare against the range's ends and no select after it.
; PTX: .visible .entry _ZN4demo25__oxide_kernel_entry_casts17h0123456789abcdefE(
; PTX-NOT: setp
; PTX-NOT: selp
; PTX: cvt.rzi.s32.f32
; PTX-NOT: setp
; PTX-NOT: selp
; PTX: cvt.rzi.u32.f32
; PTX-NOT: setp
; PTX-NOT: selp
; PTX: st.volatile.global.b32
; PTX: st.volatile.global.b32
; PTX-NOT: setp
; PTX-NOT: selp
; PTX: ret;
define internal void @_ZN4demo5casts17h0123456789abcdefE(ptr noalias noundef nonnull readonly align 4 %in.0, i64 %in.1, ptr %out.0, i64 %out.1) unnamed_addr #1 {
  %a = load float, ptr %in.0, align 4
  %s = call i32 @llvm.fptosi.sat.i32.f32(float %a)
  %u = call i32 @llvm.fptoui.sat.i32.f32(float %a)
  store volatile i32 %s, ptr %out.0, align 4
  store volatile i32 %u, ptr %out.0, align 4
  ret void
}

define internal void @_ZN4demo25__oxide_kernel_entry_casts17h0123456789abcdefE(ptr %0, ptr %1) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  call void @__oxide_stub_param_layout(i32 1, i64 16, i64 8)
  %in.0 = load ptr, ptr %0, align 8
  %l0 = getelementptr inbounds i8, ptr %0, i64 8
  %in.1 = load i64, ptr %l0, align 8
  %out.0 = load ptr, ptr %1, align 8
  %l1 = getelementptr inbounds i8, ptr %1, i64 8
  %out.1 = load i64, ptr %l1, align 8
  call void @_ZN4demo5casts17h0123456789abcdefE(ptr noalias noundef nonnull readonly align 4 %in.0, i64 %in.1, ptr %out.0, i64 %out.1)
  ret void
}
@launch_site = global ptr @_ZN4demo25__oxide_kernel_entry_casts17h0123456789abcdefE
attributes #0 = { noinline "target-cpu"="x86-64" }
attributes #1 = { "target-cpu"="x86-64" }

declare i32 @llvm.fptosi.sat.i32.f32(float)
declare i32 @llvm.fptoui.sat.i32.f32(float)
declare i32 @llvm.fptosi.sat.i32.f64(double)
declare i32 @llvm.fptoui.sat.i32.f64(double)
declare i64 @llvm.fptosi.sat.i64.f32(float)
declare i64 @llvm.fptoui.sat.i64.f32(float)
declare i64 @llvm.fptosi.sat.i64.f64(double)
declare i64 @llvm.fptoui.sat.i64.f64(double)
declare i8 @llvm.fptosi.sat.i8.f32(float)
declare i16 @llvm.fptoui.sat.i16.f64(double)
declare i16 @llvm.fptosi.sat.i16.f32(float)
declare i32 @llvm.fptosi.sat.i32.f16(half)
declare i128 @llvm.fptosi.sat.i128.f64(double)
declare <2 x i32> @llvm.fptoui.sat.v2i32.v2f32(<2 x float>)

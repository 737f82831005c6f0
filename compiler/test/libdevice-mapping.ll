; std's float math reaches the bitcode as LLVM intrinsics or C library calls;
; both are pointed at libdevice.
; RUN: %oxide-opt -passes=map-math %s | FileCheck %s

declare float @llvm.sin.f32(float)
declare double @llvm.exp.f64(double)
declare float @llvm.powi.f32.i32(float, i32)
declare float @cbrtf(float)
declare double @hypot(double, double)

define double @user(float %x, double %y) {
  %s = call float @llvm.sin.f32(float %x)
  %e = call double @llvm.exp.f64(double %y)
  %p = call float @llvm.powi.f32.i32(float %x, i32 3)
  %c = call float @cbrtf(float %x)
  %h = call double @hypot(double %y, double %e)
  ret double %h
}
; CHECK: call float @__nv_sinf(float %x)
; CHECK: call double @__nv_exp(double %y)
; CHECK: call float @__nv_powif(float %x, i32 3)
; CHECK: call float @__nv_cbrtf(float %x)
; CHECK: call double @__nv_hypot(double %y, double %e)

; Rust's `%` on floats (frem) is the exact fmod; NVPTX's own expansion is not,
; so it goes to libdevice.
; RUN: %oxide-opt -passes=map-math %s | FileCheck %s

define float @user(float %a, float %b, double %c, double %d) {
  %r = frem float %a, %b
  %s = frem double %c, %d
  %t = fptrunc double %s to float
  %u = fadd float %r, %t
  ret float %u
}
; CHECK: call float @__nv_fmodf(float %a, float %b)
; CHECK: call double @__nv_fmod(double %c, double %d)
; CHECK-NOT: frem

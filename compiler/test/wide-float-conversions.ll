; Saturating float → 128-bit integer casts become compares, selects and a
; plain conversion (which the backend then expands to integer code).
; RUN: %oxide-opt -passes=lower-wide-conversions %s | FileCheck %s
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

declare i128 @llvm.fptosi.sat.i128.f32(float)
declare i128 @llvm.fptoui.sat.i128.f64(double)
declare void @__oxide_stub_param_layout(i32, i64, i64)

define internal void @_ZN4demo25__oxide_kernel_entry_wide17h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 8, i64 8)
  %out = load ptr, ptr %0
  %x = load float, ptr %out
  %y = load double, ptr %out
  %a = call i128 @llvm.fptosi.sat.i128.f32(float %x)
  %b = call i128 @llvm.fptoui.sat.i128.f64(double %y)
  %c = sitofp i128 %b to float
  %s = add i128 %a, %b
  store i128 %s, ptr %out
  store float %c, ptr %out
  ret void
}
@launch_site = global ptr @_ZN4demo25__oxide_kernel_entry_wide17h0123456789abcdefE

; CHECK-NOT: call i128 @llvm.fptosi.sat.i128
; CHECK: fcmp oge float %x, 0x47E0000000000000
; CHECK: fcmp olt float %x, 0xC7E0000000000000
; CHECK: fcmp uno float %x, %x
; CHECK: fptosi float {{.*}} to i128
; CHECK: select i1 {{.*}}, i128 170141183460469231731687303715884105727,
; CHECK-NOT: call i128 @llvm.fptoui.sat.i128
; CHECK: fcmp oge double %y, 0x47F0000000000000
; CHECK: fcmp ole double %y, -1.000000e+00
; CHECK: fptoui double {{.*}} to i128

; PTX-NOT: __fixsfti
; PTX-NOT: __floattisf
; PTX: .visible .entry

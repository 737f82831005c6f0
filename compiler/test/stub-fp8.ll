; The FP8 conversions are `PureAsm` stubs whose templates mix register
; classes: a 16-bit (`h`) pair of FP8 values from two f32 (`f`) or an f16x2
; (`r`), and back. Each becomes its one `cvt` with the table's constraints
; (LLVM 22 prints f32 operands in `%r` registers too).
; RUN: %oxide-opt -passes=lower-intrinsic-stubs --ptx --arch sm_90 %s | FileCheck %s
;
; sm_89, the oldest target with them, writes a PTX ISA version that has
; them there (8.1; 7.8 had them from sm_90 only, and ptxas refused this
; module for sm_89).
; RUN: %if ptxas %{ %oxide-opt -passes=lower-intrinsic-stubs --ptx --assemble --arch sm_89 %s | FileCheck %s --check-prefix=SM89 %}
; SM89: .version 8.1
; SM89: .target sm_89

target triple = "nvptx64-nvidia-cuda"

declare i16 @__oxide_stub_f8e4m3x2_from_f32(float, float)
declare i16 @__oxide_stub_f8e5m2x2_from_f16x2(i32)
declare i32 @__oxide_stub_f8e4m3x2_to_f16x2(i16)

define ptx_kernel void @convert(float %hi, float %lo, i32 %h2, ptr %out) {
  %a = call i16 @__oxide_stub_f8e4m3x2_from_f32(float %hi, float %lo)
  %b = call i16 @__oxide_stub_f8e5m2x2_from_f16x2(i32 %h2)
  %c = call i32 @__oxide_stub_f8e4m3x2_to_f16x2(i16 %a)
  store i16 %b, ptr %out
  %p = getelementptr i32, ptr %out, i64 1
  store i32 %c, ptr %p
  ret void
}
; CHECK-LABEL: .entry convert(
; CHECK: cvt.rn.satfinite.e4m3x2.f32 %rs{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}};
; CHECK: cvt.rn.satfinite.e5m2x2.f16x2 %rs{{[0-9]+}}, %r{{[0-9]+}};
; CHECK: cvt.rn.f16x2.e4m3x2 %r{{[0-9]+}}, %rs{{[0-9]+}};

; The stubs a target admits assemble at the PTX ISA version that target
; writes, the oldest LLVM allows (7.0 for sm_80). bf16's square root widened
; its operand with `cvt.f32.bf16` (PTX ISA 7.1) and the mbarrier stubs
; named `.shared::cta` (7.8): ptxas refused both for sm_80, so `bf16::sqrt`
; and `mbarrier::init` failed to build for the default target. Found by
; oxide-fuzz's half-precision expressions built with `--arch sm_80`. The
; square root now widens by a shift (exact, as the conversion is; a NaN
; still comes out as the canonical 0x7fff), and `.shared` is `.shared::cta`.
; crates/oxide-tables/tests/stubs_assemble.rs checks every stub this way.
; RUN: %oxide-opt -passes=lower-intrinsic-stubs --ptx --arch sm_80 %s | FileCheck %s
; RUN: %if ptxas %{ %oxide-opt -passes=lower-intrinsic-stubs --ptx --assemble --arch sm_80 %s > /dev/null %}

target triple = "nvptx64-nvidia-cuda"

declare i16 @__oxide_stub_bf16_sqrt(i16)
declare void @__oxide_stub_mbarrier_init(i32, i32)
declare i64 @__oxide_stub_mbarrier_arrive_token(i32)
declare void @__oxide_stub_mbarrier_inval(i32)

define ptx_kernel void @half_root(i16 %x, i32 %bar, ptr %out) {
  %r = call i16 @__oxide_stub_bf16_sqrt(i16 %x)
  store i16 %r, ptr %out
  call void @__oxide_stub_mbarrier_init(i32 %bar, i32 32)
  %t = call i64 @__oxide_stub_mbarrier_arrive_token(i32 %bar)
  call void @__oxide_stub_mbarrier_inval(i32 %bar)
  %p = getelementptr i64, ptr %out, i64 1
  store i64 %t, ptr %p
  ret void
}
; CHECK: .version 7.0
; CHECK: .target sm_80
; CHECK-LABEL: .entry half_root(
; CHECK-NOT: cvt.f32.bf16
; CHECK: shl.b32
; CHECK: sqrt.rn.f32
; CHECK: cvt.rn.bf16.f32
; CHECK: mbarrier.init.shared.b64
; CHECK: mbarrier.arrive.shared.b64
; CHECK: mbarrier.inval.shared.b64

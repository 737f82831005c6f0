; wgmma behind a test of the target's features (`arch::has(Feature::Wgmma)`,
; bit 3 of `target_features`) builds for every target: on sm_90a the wgmma
; is the kernel's, elsewhere O3 deletes it with the branch and the other
; branch (here a plain store) is the kernel; unguarded, it stays an error
; (wgmma-arch.ll).
; RUN: %oxide-opt --ptx --arch sm_90a %s | FileCheck %s --check-prefix=HOPPER
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PLAIN
; RUN: %oxide-opt --ptx --arch sm_80 %s | FileCheck %s --check-prefix=PLAIN

target triple = "nvptx64-nvidia-cuda"

declare i32 @__oxide_stub_target_features()
declare void @__oxide_stub_wgmma_m64n64k16_f32_bf16(ptr, i64, i64, i32)

define ptx_kernel void @mma(ptr %acc, i64 %da, i64 %db) {
  %f = call i32 @__oxide_stub_target_features()
  %bit = and i32 %f, 8
  %has = icmp ne i32 %bit, 0
  br i1 %has, label %tensor, label %fallback
tensor:
  call void @__oxide_stub_wgmma_m64n64k16_f32_bf16(ptr %acc, i64 %da, i64 %db, i32 1)
  ret void
fallback:
  store float 1.0, ptr %acc, align 4
  ret void
}
; HOPPER-LABEL: .entry mma(
; HOPPER: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
; PLAIN-LABEL: .entry mma(
; PLAIN-NOT: wgmma
; PLAIN: st.global.b32 [%rd{{[0-9]+}}], 1065353216;
; PLAIN-NOT: wgmma

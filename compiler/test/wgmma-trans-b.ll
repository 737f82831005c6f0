; The `_trans_b` wgmma stubs read B MN-major: the same lowering as
; wgmma-lower.ll (tied accumulators, descriptors, scale_d's predicate) with
; the instruction's last immediate, imm-trans-b, set to 1; A stays K-major
; (imm-trans-a 0). The plain stubs keep imm-trans-b 0.
; RUN: %oxide-opt -passes=lower-wgmma --arch sm_90a %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --ptx --arch sm_90a %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_wgmma_m64n64k16_f32_bf16_trans_b(ptr, i64, i64, i32)
declare void @__oxide_stub_wgmma_m64n128k16_f32_f16_trans_b(ptr, i64, i64, i32)
declare void @__oxide_stub_wgmma_m64n64k16_f32_bf16(ptr, i64, i64, i32)

define ptx_kernel void @pv(ptr %out, i64 %da, i64 %db) {
  %acc = alloca [32 x float], align 4
  call void @llvm.memset.p0.i64(ptr %acc, i8 0, i64 128, i1 false)
  call void @__oxide_stub_wgmma_m64n64k16_f32_bf16(ptr %acc, i64 %da, i64 %db, i32 0)
  call void @__oxide_stub_wgmma_m64n64k16_f32_bf16_trans_b(ptr %acc, i64 %da, i64 %db, i32 1)
  call void @llvm.memcpy.p0.p0.i64(ptr %out, ptr %acc, i64 128, i1 false)
  ret void
}

define void @wide(ptr %acc, i64 %da, i64 %db) {
  call void @__oxide_stub_wgmma_m64n128k16_f32_f16_trans_b(ptr %acc, i64 %da, i64 %db, i32 1)
  ret void
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; IR-LABEL: define ptx_kernel void @pv(
; IR: asm sideeffect "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, $64, $65, p, 1, 1, 0, 0;
; IR: asm sideeffect "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, $64, $65, p, 1, 1, 0, 1;
; IR-SAME: "=f,{{.*}},=f,0,1,{{.*}},31,l,l,r"
; IR-LABEL: define void @wide(
; IR: asm sideeffect "{{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {$0, {{.*}}, $63}, $128, $129, p, 1, 1, 0, 1;
; IR-NOT: __oxide_stub_wgmma

; PTX-LABEL: .entry pv(
; PTX-NOT: .local
; PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%r[[A:[0-9]+]], {{.*}}, p, 1, 1, 0, 0;
; The transposed one accumulates into the same registers.
; PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%r[[A]], {{.*}}, p, 1, 1, 0, 1;
; PTX-NOT: ld.local
; PTX: ret;

; The `_rs` wgmma stubs take A from registers: the pointer to the thread's
; four b32 words of the A fragment becomes four loads passed as "r"
; operands, written `{$a0, $a1, $a2, $a3}` in place of A's descriptor, and
; the instruction has no imm-trans-a (the register form has none); the
; accumulators are tied and stored back as for the shared-memory form
; (wgmma-lower.ll), and `_rs_trans_b` sets imm-trans-b. After O3 nothing is
; in local memory: the words stay in the registers that computed them.
; RUN: %oxide-opt -passes=lower-wgmma --arch sm_90a %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --ptx --arch sm_90a %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_wgmma_m64n64k16_f32_bf16_rs_trans_b(ptr, ptr, i64, i32)
declare void @__oxide_stub_wgmma_m64n8k16_f32_f16_rs(ptr, ptr, i64, i32)

define ptx_kernel void @pv(ptr %out, i32 %w0, i32 %w1, i32 %w2, i32 %w3, i64 %db) {
  %acc = alloca [32 x float], align 4
  %a = alloca [4 x i32], align 4
  call void @llvm.memset.p0.i64(ptr %acc, i8 0, i64 128, i1 false)
  store i32 %w0, ptr %a
  %p1 = getelementptr inbounds i32, ptr %a, i32 1
  store i32 %w1, ptr %p1
  %p2 = getelementptr inbounds i32, ptr %a, i32 2
  store i32 %w2, ptr %p2
  %p3 = getelementptr inbounds i32, ptr %a, i32 3
  store i32 %w3, ptr %p3
  call void @__oxide_stub_wgmma_m64n64k16_f32_bf16_rs_trans_b(ptr %acc, ptr %a, i64 %db, i32 1)
  call void @llvm.memcpy.p0.p0.i64(ptr %out, ptr %acc, i64 128, i1 false)
  ret void
}

define void @narrow(ptr %acc, ptr %a, i64 %db) {
  call void @__oxide_stub_wgmma_m64n8k16_f32_f16_rs(ptr %acc, ptr %a, i64 %db, i32 0)
  ret void
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; IR-LABEL: define ptx_kernel void @pv(
; IR: %[[A0:[0-9]+]] = load i32, ptr %{{[0-9a-z]+}}, align 4
; IR: asm sideeffect "{{.*}}setp.ne.b32 p, $69, 0;{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
; IR-SAME: "=f,{{.*}},=f,0,1,{{.*}},31,r,r,r,r,l,r"(float {{.*}}, i32 %[[A0]], i32 %{{[0-9]+}}, i32 %{{[0-9]+}}, i32 %{{[0-9]+}}, i64 %db, i32 1)
; IR-LABEL: define void @narrow(
; IR: asm sideeffect "{{.*}}wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, {$8, $9, $10, $11}, $12, p, 1, 1, 0;
; IR-SAME: "=f,=f,=f,=f,0,1,2,3,r,r,r,r,l,r"
; IR-NOT: __oxide_stub_wgmma

; PTX-LABEL: .entry pv(
; PTX-NOT: .local
; PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%r{{[0-9]+}}, {{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
; PTX-NOT: ld.local
; PTX: ret;

; A wgmma stub on a `&mut [f32; N/2]` fragment becomes loads of the fragment,
; the instruction with outputs tied to them ("=f" … "0", "1", …), the
; descriptors and scale_d's predicate, and stores back. After O3 the fragment
; is registers: the PTX has no local memory.
; RUN: %oxide-opt -passes=lower-wgmma --arch sm_90a %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt -passes=lower-intrinsic-stubs %s 2>&1 | FileCheck %s --check-prefix=ERASED
; RUN: %oxide-opt --ptx --arch sm_90a %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_wgmma_m64n8k16_f32_bf16(ptr, i64, i64, i32)
declare void @__oxide_stub_wgmma_m64n256k16_f32_f16(ptr, i64, i64, i32)
declare void @__oxide_stub_wgmma_m64n16k32_f32_e4m3(ptr, i64, i64, i32)
declare void @__oxide_stub_wgmma_m64n8k32_f32_e5m2(ptr, i64, i64, i32)

define ptx_kernel void @mma(ptr %out, i64 %da, i64 %db) {
  %acc = alloca [4 x float], align 4
  call void @llvm.memset.p0.i64(ptr %acc, i8 0, i64 16, i1 false)
  call void @__oxide_stub_wgmma_m64n8k16_f32_bf16(ptr %acc, i64 %da, i64 %db, i32 0)
  call void @__oxide_stub_wgmma_m64n8k16_f32_bf16(ptr %acc, i64 %da, i64 %db, i32 1)
  call void @llvm.memcpy.p0.p0.i64(ptr %out, ptr %acc, i64 16, i1 false)
  ret void
}

define void @wide(ptr %acc, i64 %da, i64 %db) {
  call void @__oxide_stub_wgmma_m64n256k16_f32_f16(ptr %acc, i64 %da, i64 %db, i32 1)
  ret void
}

; FP8: K = 32 and no transpose operands (FP8 operands are K-major only).
define void @fp8(ptr %acc, ptr %acc2, i64 %da, i64 %db) {
  call void @__oxide_stub_wgmma_m64n16k32_f32_e4m3(ptr %acc, i64 %da, i64 %db, i32 1)
  call void @__oxide_stub_wgmma_m64n8k32_f32_e5m2(ptr %acc2, i64 %da, i64 %db, i32 0)
  ret void
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; IR-LABEL: define ptx_kernel void @mma(
; IR: %[[S0:[0-9]+]] = getelementptr inbounds float, ptr %acc, i32 0
; IR-NEXT: %[[V0:[0-9]+]] = load float, ptr %[[S0]], align 4
; IR: %[[S3:[0-9]+]] = getelementptr inbounds float, ptr %acc, i32 3
; IR-NEXT: %[[V3:[0-9]+]] = load float, ptr %[[S3]], align 4
; IR-NEXT: %[[R:[0-9]+]] = call { float, float, float, float } asm sideeffect "{\0A.reg .pred p;\0Asetp.ne.b32 p, $10, 0;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, $8, $9, p, 1, 1, 0, 0;\0A}", "=f,=f,=f,=f,0,1,2,3,l,l,r"(float %[[V0]], float %{{[0-9]+}}, float %{{[0-9]+}}, float %[[V3]], i64 %da, i64 %db, i32 0) #[[ATTR:[0-9]+]], !oxide.stub.asm
; IR: %[[E3:[0-9]+]] = extractvalue { float, float, float, float } %[[R]], 3
; IR-NEXT: store float %[[E3]], ptr %[[S3]], align 4
; IR-LABEL: define void @wide(
; IR: call { float, {{.*}} } asm sideeffect "{{.*}}wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {$0, {{.*}}, $127}, $256, $257, p, 1, 1, 0, 0;
; IR-SAME: "=f,{{.*}},=f,0,1,{{.*}},127,l,l,r"
; IR-LABEL: define void @fp8(
; IR: call { float, float, float, float, float, float, float, float } asm sideeffect "{{.*}}wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {$0, $1, $2, $3, $4, $5, $6, $7}, $16, $17, p, 1, 1;\0A}", "=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,l,l,r"
; IR: call { float, float, float, float } asm sideeffect "{{.*}}wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2 {$0, $1, $2, $3}, $8, $9, p, 1, 1;\0A}"
; IR-NOT: __oxide_stub_wgmma
; IR: attributes #[[ATTR]] = { convergent }

; Left to LowerIntrinsicStubs, a Special stub's calls are dropped: LowerWgmma
; must run first (Compile.cpp).
; ERASED-NOT: call void @__oxide_stub_wgmma

; PTX-LABEL: .entry mma(
; PTX-NOT: .local
; PTX: setp.ne.b32 p, {{.*}}, 0;
; PTX: wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%r[[A:[0-9]+]], %r[[B:[0-9]+]], %r[[C:[0-9]+]], %r[[D:[0-9]+]]}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1, 0, 0;
; The second one accumulates into the same registers, in place.
; PTX: wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%r[[A]], %r[[B]], %r[[C]], %r[[D]]}
; PTX-NOT: ld.local
; PTX-NOT: st.local
; PTX: ret;

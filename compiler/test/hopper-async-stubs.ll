; mbarrier, TMA and wgmma bookkeeping stubs are InlineAsm entries of
; Stubs.def: their PTX with 32-bit shared addresses ("r"), the tensor map's
; generic address ("l") and i32 coordinates; convergent and with side effects.
; RUN: %oxide-opt -passes=lower-intrinsic-stubs --arch sm_90 %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --ptx --arch sm_90a %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_mbarrier_arrive_expect_tx(i32, i32)
declare void @__oxide_stub_mbarrier_wait_parity(i32, i32)
declare i32 @__oxide_stub_mbarrier_try_wait_parity(i32, i32)
declare void @__oxide_stub_tma_load_2d(i32, i64, i32, i32, i32)
declare void @__oxide_stub_tma_store_3d(i64, i32, i32, i32, i32)
declare void @__oxide_stub_tma_load_2d_multicast(i32, i64, i32, i32, i32, i16)
declare void @__oxide_stub_mbarrier_arrive_cluster(i32, i32)
declare void @__oxide_stub_mbarrier_arrive_cluster_after_reads(i32, i32)
declare void @__oxide_stub_bulk_commit_group()
declare void @__oxide_stub_bulk_wait_group_read_0()
declare void @__oxide_stub_fence_proxy_async_shared()
declare void @__oxide_stub_wgmma_fence()
declare void @__oxide_stub_wgmma_commit_group()
declare void @__oxide_stub_wgmma_wait_group_1()
declare i32 @__oxide_stub_bf16x2_from_f32(float, float)

define ptx_kernel void @pipeline(ptr %out, i64 %map, i32 %dst, i32 %bar, i32 %x, i32 %y, float %f) {
  call void @__oxide_stub_mbarrier_arrive_expect_tx(i32 %bar, i32 16384)
  call void @__oxide_stub_tma_load_2d(i32 %dst, i64 %map, i32 %bar, i32 %x, i32 %y)
  call void @__oxide_stub_tma_load_2d_multicast(i32 %dst, i64 %map, i32 %bar, i32 %x, i32 %y, i16 3)
  call void @__oxide_stub_mbarrier_wait_parity(i32 %bar, i32 0)
  call void @__oxide_stub_mbarrier_arrive_cluster(i32 %bar, i32 1)
  call void @__oxide_stub_mbarrier_arrive_cluster_after_reads(i32 %bar, i32 0)
  %done = call i32 @__oxide_stub_mbarrier_try_wait_parity(i32 %bar, i32 1)
  call void @__oxide_stub_wgmma_fence()
  call void @__oxide_stub_wgmma_commit_group()
  call void @__oxide_stub_wgmma_wait_group_1()
  call void @__oxide_stub_fence_proxy_async_shared()
  call void @__oxide_stub_tma_store_3d(i64 %map, i32 %dst, i32 %x, i32 %y, i32 %done)
  call void @__oxide_stub_bulk_commit_group()
  call void @__oxide_stub_bulk_wait_group_read_0()
  %h = call i32 @__oxide_stub_bf16x2_from_f32(float %f, float %f)
  store i32 %h, ptr %out
  ret void
}
; IR: call void asm sideeffect "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}"(i32 %bar, i32 16384) #[[C:[0-9]+]], !oxide.stub.asm
; IR: call void asm sideeffect "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$3, $4}], [$2];", "r,l,r,r,r,~{memory}"(i32 %dst, i64 %map, i32 %bar, i32 %x, i32 %y)
; IR: call void asm sideeffect "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [$0], [$1, {$3, $4}], [$2], $5;", "r,l,r,r,r,h,~{memory}"(i32 %dst, i64 %map, i32 %bar, i32 %x, i32 %y, i16 3)
; IR: call void asm sideeffect "{ .reg .pred p; OXIDE_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1; @!p bra OXIDE_WAIT; }"
; IR: call void asm sideeffect "{ .reg .b32 remote; mapa.shared::cluster.u32 remote, $0, $1; mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote]; }", "r,r,~{memory}"(i32 %bar, i32 1)
; IR: call void asm sideeffect "{ .reg .b32 remote; mapa.shared::cluster.u32 remote, $0, $1; mbarrier.arrive.release.cta.shared::cluster.b64 _, [remote]; }", "r,r,~{memory}"(i32 %bar, i32 0)
; IR: %[[DONE:[0-9]+]] = call i32 asm sideeffect "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; selp.u32 $0, 1, 0, p; }", "=r,r,r,~{memory}"
; IR: call void asm sideeffect "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [$0, {$2, $3, $4}], [$1];", "l,r,r,r,r,~{memory}"
; IR: attributes #[[C]] = { convergent }

; PTX-LABEL: .entry pipeline(
; PTX: mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], %r{{[0-9]+}};
; PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
; PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}], %rs{{[0-9]+}};
; PTX: OXIDE_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [%r{{[0-9]+}}], %r{{[0-9]+}}; @!p bra OXIDE_WAIT;
; PTX: mapa.shared::cluster.u32 remote, %r{{[0-9]+}}, %r{{[0-9]+}}; mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];
; PTX: mapa.shared::cluster.u32 remote, %r{{[0-9]+}}, %r{{[0-9]+}}; mbarrier.arrive.release.cta.shared::cluster.b64 _, [remote];
; PTX: selp.u32
; PTX: wgmma.fence.sync.aligned;
; PTX: wgmma.commit_group.sync.aligned;
; PTX: wgmma.wait_group.sync.aligned 1;
; PTX: fence.proxy.async.shared::cta;
; PTX: cp.async.bulk.commit_group;
; PTX: cp.async.bulk.wait_group.read 0;
; PTX: cvt.rn.bf16x2.f32

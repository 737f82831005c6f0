; Cluster stubs: the special registers, the cluster barrier (arrive, relaxed
; arrive, wait; convergent), and `mapa` on a `shared!` array, whose
; addrspace(3) → addrspace(7) (.shared::cluster) result is cast back to the
; stub's generic pointer; after O3 the loads through it are ld.shared::cluster.
; RUN: %oxide-opt --arch sm_90 -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX
; RUN: not %oxide-opt --arch sm_80 -passes=lower-intrinsic-stubs,reject-unavailable-stubs %s 2>&1 >/dev/null | FileCheck %s --check-prefix=OLD

target triple = "nvptx64-nvidia-cuda"

@PARTIAL = internal global [64 x i8] zeroinitializer, section ".oxide.shared", align 16

declare i32 @__oxide_stub_cluster_ctarank()
declare i32 @__oxide_stub_cluster_nctarank()
declare i32 @__oxide_stub_clusterid_x()
declare void @__oxide_stub_cluster_arrive()
declare void @__oxide_stub_cluster_arrive_relaxed()
declare void @__oxide_stub_cluster_wait()
declare ptr @__oxide_stub_cluster_map_shared(ptr, i32)

define ptx_kernel void @gather(ptr %out) {
  call void @__oxide_stub_cluster_arrive_relaxed()
  call void @__oxide_stub_cluster_wait()
  %rank = call i32 @__oxide_stub_cluster_ctarank()
  %n = call i32 @__oxide_stub_cluster_nctarank()
  %c = call i32 @__oxide_stub_clusterid_x()
  %next = add i32 %rank, 1
  %peer = urem i32 %next, %n
  %remote = call ptr @__oxide_stub_cluster_map_shared(ptr @PARTIAL, i32 %peer)
  %v = load i32, ptr %remote, align 4
  %slot = getelementptr i32, ptr %remote, i32 1
  store i32 %c, ptr %slot, align 4
  store i32 %v, ptr %out, align 4
  call void @__oxide_stub_cluster_arrive()
  call void @__oxide_stub_cluster_wait()
  ret void
}
; IR-LABEL: define ptx_kernel void @gather(
; IR: call void @llvm.nvvm.barrier.cluster.arrive.relaxed() #[[C:[0-9]+]]
; IR: call void @llvm.nvvm.barrier.cluster.wait() #[[C]]
; IR: call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
; IR: call i32 @llvm.nvvm.read.ptx.sreg.cluster.nctarank()
; IR: call i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()
; IR: %[[M:[0-9]+]] = call ptr addrspace(7) @llvm.nvvm.mapa.shared.cluster(ptr addrspace(3) addrspacecast (ptr @PARTIAL to ptr addrspace(3)), i32 %peer)
; IR: %[[G:[0-9]+]] = addrspacecast ptr addrspace(7) %[[M]] to ptr
; IR: load i32, ptr %[[G]]
; IR: call void @llvm.nvvm.barrier.cluster.arrive() #[[C]]
; IR: attributes #[[C]] = { convergent }
; PTX-LABEL: .entry gather(
; PTX: barrier.cluster.arrive.relaxed;
; PTX: barrier.cluster.wait;
; PTX-DAG: mov.u32 %r{{[0-9]+}}, %cluster_ctarank;
; PTX-DAG: mov.u32 %r{{[0-9]+}}, %cluster_nctarank;
; PTX-DAG: mov.u32 %r{{[0-9]+}}, %clusterid.x;
; PTX: mov.b64 %rd[[L:[0-9]+]], PARTIAL;
; PTX: mapa.shared::cluster.u64 %rd[[R:[0-9]+]], %rd[[L]], %r{{[0-9]+}};
; PTX-DAG: ld.shared::cluster.b32 %r{{[0-9]+}}, [%rd[[R]]];
; PTX-DAG: st.shared::cluster.b32 [%rd[[R]]+4], %r{{[0-9]+}};
; PTX: barrier.cluster.arrive;
; PTX: barrier.cluster.wait;
; OLD: error: `cluster_arrive_relaxed` needs sm_90 or newer, but the kernels are being built for sm_80

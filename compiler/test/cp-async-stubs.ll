; cp.async stubs take generic pointers (a `shared!` array, a global slice);
; the lowering casts them to the intrinsics' .shared / .global address spaces,
; and after O3 the copies address the shared array directly. The wait count
; is an immediate; the `_zfill` forms pass the source size.
; RUN: %oxide-opt --arch sm_80 -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --ptx --arch sm_80 %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

@TILE = internal global [1024 x i8] zeroinitializer, section ".oxide.shared", align 16

declare void @__oxide_stub_cp_async_ca_4(ptr, ptr)
declare void @__oxide_stub_cp_async_cg_16(ptr, ptr)
declare void @__oxide_stub_cp_async_ca_8_zfill(ptr, ptr, i32)
declare void @__oxide_stub_cp_async_commit_group()
declare void @__oxide_stub_cp_async_wait_group(i32)
declare void @__oxide_stub_cp_async_wait_all()

define ptx_kernel void @load(ptr %src, i64 %i, i32 %n) {
  %d = getelementptr i8, ptr @TILE, i64 %i
  %s = getelementptr i8, ptr %src, i64 %i
  call void @__oxide_stub_cp_async_ca_4(ptr %d, ptr %s)
  call void @__oxide_stub_cp_async_cg_16(ptr @TILE, ptr %src)
  call void @__oxide_stub_cp_async_ca_8_zfill(ptr %d, ptr %s, i32 %n)
  call void @__oxide_stub_cp_async_commit_group()
  call void @__oxide_stub_cp_async_wait_group(i32 1)
  call void @__oxide_stub_cp_async_wait_all()
  ret void
}
; IR-LABEL: define ptx_kernel void @load(
; IR: %[[D3:[0-9]+]] = addrspacecast ptr %d to ptr addrspace(3)
; IR: %[[S1:[0-9]+]] = addrspacecast ptr %s to ptr addrspace(1)
; IR: call void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3) %[[D3]], ptr addrspace(1) %[[S1]])
; IR: call void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3) addrspacecast (ptr @TILE to ptr addrspace(3)), ptr addrspace(1) %{{[0-9]+}})
; IR: call void @llvm.nvvm.cp.async.ca.shared.global.8.s(ptr addrspace(3) %{{[0-9]+}}, ptr addrspace(1) %{{[0-9]+}}, i32 %n)
; IR: call void @llvm.nvvm.cp.async.commit.group()
; IR: call void @llvm.nvvm.cp.async.wait.group(i32 1)
; IR: call void @llvm.nvvm.cp.async.wait.all()
; IR-NOT: __oxide_stub
; PTX-LABEL: .entry load(
; PTX: cp.async.ca.shared.global [%rd[[D:[0-9]+]]], [%rd[[S:[0-9]+]]], 4;
; PTX: cp.async.cg.shared.global [TILE], [%rd{{[0-9]+}}], 16;
; PTX: cp.async.ca.shared.global [%rd[[D]]], [%rd[[S]]], 8, %r{{[0-9]+}};
; PTX: cp.async.commit_group;
; PTX: cp.async.wait_group 1;
; PTX: cp.async.wait_all;

; ldmatrix returns one i32 per matrix; .x2/.x4 return a struct that the
; lowering packs into the stub's u64/u128 (matrix 0 in the low bits), which
; folds away once the caller splits it again. stmatrix takes the fragments as
; arguments. Both take a shared address (cast from the generic one).
; RUN: %oxide-opt --arch sm_90 -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX
; RUN: not %oxide-opt --arch sm_80 -passes=lower-intrinsic-stubs,reject-unavailable-stubs %s 2>&1 >/dev/null | FileCheck %s --check-prefix=OLD
;
; ldmatrix is sm_75's (PTX ISA 6.5): sm_75's module must be at least that
; version, or LLVM cannot select the instruction and the link crashed. The
; stmatrix calls (sm_90) are taken out for it.
; RUN: grep -v stmatrix %s > %t.ll
; RUN: %if ptxas %{ %oxide-opt --ptx --assemble --arch sm_75 %t.ll | FileCheck %s --check-prefix=SM75 %}
; SM75: .version 6.5
; SM75: ldmatrix.sync.aligned.m8n8.x1.shared.b16

target triple = "nvptx64-nvidia-cuda"

@TILE = internal global [512 x i8] zeroinitializer, section ".oxide.shared", align 16

declare i32 @__oxide_stub_ldmatrix_x1(ptr)
declare i64 @__oxide_stub_ldmatrix_x2_trans(ptr)
declare i128 @__oxide_stub_ldmatrix_x4(ptr)
declare void @__oxide_stub_stmatrix_x4_trans(ptr, i32, i32, i32, i32)
declare void @__oxide_stub_stmatrix_x1(ptr, i32)

define ptx_kernel void @fragments(i64 %row, ptr %out) {
  %p = getelementptr i8, ptr @TILE, i64 %row
  %a = call i32 @__oxide_stub_ldmatrix_x1(ptr %p)
  %b = call i64 @__oxide_stub_ldmatrix_x2_trans(ptr %p)
  %c = call i128 @__oxide_stub_ldmatrix_x4(ptr %p)
  %c0 = trunc i128 %c to i32
  %c3s = lshr i128 %c, 96
  %c3 = trunc i128 %c3s to i32
  %b1s = lshr i64 %b, 32
  %b1 = trunc i64 %b1s to i32
  call void @__oxide_stub_stmatrix_x4_trans(ptr %p, i32 %c0, i32 %c3, i32 %b1, i32 %a)
  call void @__oxide_stub_stmatrix_x1(ptr %p, i32 %c3)
  ret void
}
; IR-LABEL: define ptx_kernel void @fragments(
; IR: %[[P3:[0-9]+]] = addrspacecast ptr %p to ptr addrspace(3)
; IR: call i32 @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x1.b16.p3(ptr addrspace(3) %[[P3]]) #[[C:[0-9]+]]
; IR: %[[B:[0-9]+]] = call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3(
; IR: %[[B0:[0-9]+]] = extractvalue { i32, i32 } %[[B]], 0
; IR: %[[B0W:[0-9]+]] = zext i32 %[[B0]] to i64
; IR: %[[B1:[0-9]+]] = extractvalue { i32, i32 } %[[B]], 1
; IR: %[[B1W:[0-9]+]] = zext i32 %[[B1]] to i64
; IR: %[[B1S:[0-9]+]] = shl i64 %[[B1W]], 32
; IR: or i64 %[[B0W]], %[[B1S]]
; IR: call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(
; IR: shl i128 %{{[0-9]+}}, 96
; IR: call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.trans.b16.p3(ptr addrspace(3) %{{[0-9]+}}, i32 %c0, i32 %c3, i32 %b1, i32 %{{[0-9]+}}) #[[C]]
; IR: attributes #[[C]] = { convergent }
; PTX-LABEL: .entry fragments(
; PTX: ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r[[A:[0-9]+]]}, [%rd[[P:[0-9]+]]];
; PTX: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r{{[0-9]+}}, %r[[B1:[0-9]+]]}, [%rd[[P]]];
; PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r[[C0:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}}, %r[[C3:[0-9]+]]}, [%rd[[P]]];
; PTX: stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%rd[[P]]], {%r[[C0]], %r[[C3]], %r[[B1]], %r[[A]]};
; PTX: stmatrix.sync.aligned.m8n8.x1.shared.b16 [%rd[[P]]], {%r[[C3]]};
; OLD: error: `stmatrix_x4_trans` needs sm_90 or newer, but the kernels are being built for sm_80

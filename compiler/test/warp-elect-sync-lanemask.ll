; elect.sync's two results reach a stub wider than both: the leader's lane is
; zero-extended into bits 0..32 and the predicate lands at bit 32 (the
; packing rule of Stubs.def, where the result may be wider than its fields).
; The %lanemask_* registers lower to their sreg intrinsics.
; On sm_80 (no elect.sync) elect_sync is an error naming the target to build for.
; RUN: %oxide-opt --arch sm_90 -passes=lower-intrinsic-stubs %s | FileCheck %s
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX
; RUN: not %oxide-opt --arch sm_80 -passes=lower-intrinsic-stubs,reject-unavailable-stubs %s 2>&1 >/dev/null | FileCheck %s --check-prefix=OLD

target triple = "nvptx64-nvidia-cuda"

declare i64 @__oxide_stub_elect_sync(i32)
declare i32 @__oxide_stub_lanemask_lt()
declare i32 @__oxide_stub_lanemask_ge()

define ptx_kernel void @elect(ptr %out, i32 %mask) {
  %e = call i64 @__oxide_stub_elect_sync(i32 %mask)
  store i64 %e, ptr %out
  ret void
}
; CHECK-LABEL: define ptx_kernel void @elect(
; CHECK: %[[E:[0-9]+]] = call { i32, i1 } @llvm.nvvm.elect.sync(i32 %mask) #[[C:[0-9]+]]
; CHECK: %[[L:[0-9]+]] = extractvalue { i32, i1 } %[[E]], 0
; CHECK: %[[L64:[0-9]+]] = zext i32 %[[L]] to i64
; CHECK: %[[P:[0-9]+]] = extractvalue { i32, i1 } %[[E]], 1
; CHECK: %[[P64:[0-9]+]] = zext i1 %[[P]] to i64
; CHECK: %[[S:[0-9]+]] = shl i64 %[[P64]], 32
; CHECK: %[[R:[0-9]+]] = or i64 %[[L64]], %[[S]]
; CHECK: store i64 %[[R]], ptr %out

define ptx_kernel void @masks(ptr %out) {
  %lt = call i32 @__oxide_stub_lanemask_lt()
  %ge = call i32 @__oxide_stub_lanemask_ge()
  %both = xor i32 %lt, %ge
  store i32 %both, ptr %out
  ret void
}
; CHECK-LABEL: define ptx_kernel void @masks(
; CHECK: call i32 @llvm.nvvm.read.ptx.sreg.lanemask.lt()
; CHECK: call i32 @llvm.nvvm.read.ptx.sreg.lanemask.ge()
; CHECK: attributes #[[C]] = { convergent }

; PTX: elect.sync %r{{[0-9]+}}|%p{{[0-9]+}}, %r{{[0-9]+}};
; PTX: mov.u32 %r{{[0-9]+}}, %lanemask_lt;
; PTX: mov.u32 %r{{[0-9]+}}, %lanemask_ge;

; OLD: error: `elect_sync` needs sm_90 or newer, but the kernels are being built for sm_80

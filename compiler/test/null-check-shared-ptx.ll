; Regression (found by tests/gpu/target_query in a debug build on the
; device-code emulator): `slice::from_raw_parts` of a `shared!` array checks
; that the pointer is not null; the backend's address-space inference
; compared the shared address with `cvta.to.shared` of 0, which PTX leaves
; undefined (ptx-vm refuses it). The check now stays generic: the shared
; address converted to generic, compared with a zero register.
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s

target triple = "nvptx64-nvidia-cuda"

@STAGE = internal addrspace(3) global [128 x i32] undef, align 16

define ptx_kernel void @checked(ptr %out, i64 %i) {
  %g = addrspacecast ptr addrspace(3) @STAGE to ptr
  %e = getelementptr i32, ptr %g, i64 %i
  %aligned.bits = ptrtoint ptr %e to i64
  %low = and i64 %aligned.bits, 3
  %aligned = icmp eq i64 %low, 0
  %notnull = icmp ne ptr %e, null
  %ok = and i1 %aligned, %notnull
  %v = zext i1 %ok to i32
  store i32 %v, ptr %out, align 4
  ret void
}
; CHECK-LABEL: .entry checked(
; CHECK-NOT: cvta.to.shared
; CHECK: mov.b64 [[ZERO:%rd[0-9]+]], 0;
; CHECK-NOT: cvta.to.shared
; CHECK: setp.ne.b64 %p{{[0-9]+}}, %rd{{[0-9]+}}, [[ZERO]]
; CHECK: ret;

; `shared_address(ptr)` becomes the pointer's 32-bit address in the .shared
; window (cvta.to.shared); for a shared static, the symbol's address.
; RUN: %oxide-opt -passes=lower-shared-address %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

@_ZN1k3BAR17h0000000000000000E = internal global [8 x i8] zeroinitializer, section ".oxide.shared", align 8

declare i32 @__oxide_stub_shared_address(ptr)
declare void @__oxide_stub_mbarrier_init(i32, i32)

define ptx_kernel void @init(ptr %out, ptr %p) {
  %a = call i32 @__oxide_stub_shared_address(ptr @_ZN1k3BAR17h0000000000000000E)
  call void @__oxide_stub_mbarrier_init(i32 %a, i32 1)
  %b = call i32 @__oxide_stub_shared_address(ptr %p)
  store i32 %b, ptr %out
  ret void
}
; IR: call void @__oxide_stub_mbarrier_init(i32 ptrtoint (ptr addrspace(3) addrspacecast (ptr @_ZN1k3BAR17h0000000000000000E to ptr addrspace(3)) to i32), i32 1)
; IR: %[[C:[0-9]+]] = addrspacecast ptr %p to ptr addrspace(3)
; IR: %[[I:[0-9]+]] = ptrtoint ptr addrspace(3) %[[C]] to i64
; IR: %[[T:[0-9]+]] = trunc i64 %[[I]] to i32
; IR: store i32 %[[T]], ptr %out
; IR-NOT: __oxide_stub_shared_address

; PTX-LABEL: .entry init(
; PTX: mov.b64 %rd[[S:[0-9]+]], _ZN1k3BAR17h0000000000000000E;
; PTX: cvt.u32.u64 %r[[A:[0-9]+]], %rd[[S]];
; PTX: mbarrier.init.shared.b64 [%r[[A]]], %r{{[0-9]+}};
; PTX: cvta.to.shared.u64 %rd[[G:[0-9]+]],
; PTX: st.global.b32 [%rd{{[0-9]+}}], %rd[[G]];

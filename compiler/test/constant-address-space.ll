; `#[constant]` statics (section .oxide.constant) move to addrspace(4)
; (PTX .const) with their initialiser, external under a PTX-legal name so the
; host can overwrite them, and are listed for the kernel table.
; RUN: %oxide-opt -passes=assign-address-spaces,select-reachable %s | FileCheck %s

@_ZN4poly6COEFFS17h35c6780d2b4a1848E = internal global [2 x float] [float 1.0, float 2.0], section ".oxide.constant", align 4

define ptx_kernel void @k(ptr %out) {
  %c = load float, ptr getelementptr inbounds (float, ptr @_ZN4poly6COEFFS17h35c6780d2b4a1848E, i64 1)
  store float %c, ptr %out
  ret void
}
; CHECK: @_ZN4poly6COEFFS17h35c6780d2b4a1848E = addrspace(4) externally_initialized global [2 x float] [float 1.000000e+00, float 2.000000e+00], align 4
; CHECK: load float, ptr getelementptr inbounds (float, ptr addrspacecast (ptr addrspace(4) @_ZN4poly6COEFFS17h35c6780d2b4a1848E to ptr), i64 1)
; CHECK: !oxide.constants = !{![[C:[0-9]+]]}
; CHECK: ![[C]] = !{ptr addrspace(4) @_ZN4poly6COEFFS17h35c6780d2b4a1848E, !"_ZN4poly6COEFFS17h35c6780d2b4a1848E"}

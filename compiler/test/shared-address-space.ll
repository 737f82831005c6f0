; Statics in the `.oxide.shared` section move to addrspace(3) (PTX .shared),
; uninitialised, one per declaration; `__oxide_dynamic_shared` becomes the
; extern dynamic shared array. Uses see a generic pointer through a cast.
; RUN: %oxide-opt -passes=assign-address-spaces %s | FileCheck %s

@_ZN1k4TILE17h0000000000000000E = internal global [1024 x i8] zeroinitializer, section ".oxide.shared", align 16
@__oxide_dynamic_shared = global [0 x i8] zeroinitializer, align 16

define float @user(i64 %i) {
  %p = getelementptr float, ptr @_ZN1k4TILE17h0000000000000000E, i64 %i
  %v = load float, ptr %p
  %q = getelementptr float, ptr @__oxide_dynamic_shared, i64 %i
  store float %v, ptr %q
  ret float %v
}
; CHECK-DAG: @_ZN1k4TILE17h0000000000000000E = internal addrspace(3) global [1024 x i8] undef, align 16
; CHECK-DAG: @__oxide_dynamic_shared = external addrspace(3) global [0 x i8], align 16
; CHECK: getelementptr float, ptr addrspacecast (ptr addrspace(3) @_ZN1k4TILE17h0000000000000000E to ptr), i64 %i
; CHECK: getelementptr float, ptr addrspacecast (ptr addrspace(3) @__oxide_dynamic_shared to ptr), i64 %i

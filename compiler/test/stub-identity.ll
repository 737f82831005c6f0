; Host-emulation stubs cost nothing on the device: `block_shared` becomes its
; first argument and `shared_access` disappears.
; RUN: %oxide-opt -passes=lower-intrinsic-stubs %s | FileCheck %s

@TILE = internal global [64 x float] zeroinitializer, align 16

declare ptr @__oxide_stub_block_shared(ptr, i64, i64)
declare void @__oxide_stub_shared_access(ptr, i64, i1)

define float @user(i64 %i) {
  %p = call ptr @__oxide_stub_block_shared(ptr @TILE, i64 256, i64 16)
  %e = getelementptr float, ptr %p, i64 %i
  call void @__oxide_stub_shared_access(ptr %e, i64 4, i1 false)
  %v = load float, ptr %e
  ret float %v
}
; CHECK-LABEL: define float @user(
; CHECK-NEXT: %e = getelementptr float, ptr @TILE, i64 %i
; CHECK-NEXT: %v = load float, ptr %e
; CHECK-NOT: __oxide_stub

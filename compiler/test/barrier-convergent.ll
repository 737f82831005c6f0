; The block barrier lowers to the NON-aligned `barrier.sync 0` (valid when
; threads reach it from different instructions, as after rustc's MIR
; JumpThreading copies it into two branches), and the call is convergent.
; RUN: %oxide-opt -passes=lower-intrinsic-stubs %s | FileCheck %s

declare void @__oxide_stub_sync_threads()

define void @user(i1 %c) {
  br i1 %c, label %a, label %b
a:
  call void @__oxide_stub_sync_threads()
  ret void
b:
  call void @__oxide_stub_sync_threads()
  ret void
}
; CHECK: call void @llvm.nvvm.barrier.cta.sync.all(i32 0) #[[ATTR:[0-9]+]]
; CHECK: call void @llvm.nvvm.barrier.cta.sync.all(i32 0) #[[ATTR]]
; CHECK: attributes #[[ATTR]] = { convergent }

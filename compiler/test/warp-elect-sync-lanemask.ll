; elect.sync's two results reach a stub wider than both: the leader's lane is
; zero-extended into bits 0..32 and the predicate lands at bit 32 (the
; packing rule of Stubs.def, where the result may be wider than its fields).
; The %lanemask_* registers lower to their sreg intrinsics.
; RUN: %oxide-opt --arch sm_90 -passes=lower-intrinsic-stubs %s | FileCheck %s

declare i64 @__oxide_stub_elect_sync(i32)
declare i32 @__oxide_stub_lanemask_lt()
declare i32 @__oxide_stub_lanemask_ge()

define i64 @elect(i32 %mask) {
  %e = call i64 @__oxide_stub_elect_sync(i32 %mask)
  ret i64 %e
}
; CHECK-LABEL: define i64 @elect(
; CHECK: %[[E:[0-9]+]] = call { i32, i1 } @llvm.nvvm.elect.sync(i32 %mask) #[[C:[0-9]+]]
; CHECK: %[[L:[0-9]+]] = extractvalue { i32, i1 } %[[E]], 0
; CHECK: %[[L64:[0-9]+]] = zext i32 %[[L]] to i64
; CHECK: %[[P:[0-9]+]] = extractvalue { i32, i1 } %[[E]], 1
; CHECK: %[[P64:[0-9]+]] = zext i1 %[[P]] to i64
; CHECK: %[[S:[0-9]+]] = shl i64 %[[P64]], 32
; CHECK: %[[R:[0-9]+]] = or i64 %[[L64]], %[[S]]
; CHECK: ret i64 %[[R]]

define i32 @masks() {
  %lt = call i32 @__oxide_stub_lanemask_lt()
  %ge = call i32 @__oxide_stub_lanemask_ge()
  %both = or i32 %lt, %ge
  ret i32 %both
}
; CHECK-LABEL: define i32 @masks(
; CHECK: call i32 @llvm.nvvm.read.ptx.sreg.lanemask.lt()
; CHECK: call i32 @llvm.nvvm.read.ptx.sreg.lanemask.ge()
; CHECK: attributes #[[C]] = { convergent }

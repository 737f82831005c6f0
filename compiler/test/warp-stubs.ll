; Warp collectives lower to their .sync NVVM intrinsics, convergent; the
; barrier reductions take the barrier id first ("0,$" in Stubs.def); elect.sync
; returns a pair and the stub gets its predicate.
; RUN: %oxide-opt --arch sm_90 -passes=lower-intrinsic-stubs %s | FileCheck %s

declare i32 @__oxide_stub_shfl_xor_u32(i32, i32, i32, i32)
declare i32 @__oxide_stub_vote_ballot(i32, i1)
declare i32 @__oxide_stub_sync_threads_count(i1)
declare i32 @__oxide_stub_redux_add_u32(i32, i32)
declare i1 @__oxide_stub_elect_one(i32)

define i1 @user(i32 %v, i1 %p) {
  %a = call i32 @__oxide_stub_shfl_xor_u32(i32 -1, i32 %v, i32 16, i32 31)
  %b = call i32 @__oxide_stub_vote_ballot(i32 -1, i1 %p)
  %c = call i32 @__oxide_stub_sync_threads_count(i1 %p)
  %d = call i32 @__oxide_stub_redux_add_u32(i32 %v, i32 -1)
  %e = call i1 @__oxide_stub_elect_one(i32 -1)
  ret i1 %e
}
; CHECK: call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %v, i32 16, i32 31) #[[C:[0-9]+]]
; CHECK: call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 %p) #[[C]]
; CHECK: call i32 @llvm.nvvm.barrier.cta.red.popc.all(i32 0, i1 %p) #[[C]]
; CHECK: call i32 @llvm.nvvm.redux.sync.add(i32 %v, i32 -1) #[[C]]
; CHECK: %[[E:[0-9]+]] = call { i32, i1 } @llvm.nvvm.elect.sync(i32 -1) #[[C]]
; CHECK: %[[P:[0-9]+]] = extractvalue { i32, i1 } %[[E]], 1
; CHECK: ret i1 %[[P]]
; CHECK: attributes #[[C]] = { convergent }

//===- AlignBarriers.cpp - Block barriers in uniform control flow → aligned ===//
//
// `sync_threads()` lowers to the non-aligned `barrier.sync 0`
// (llvm.nvvm.barrier.cta.sync.all), which is valid wherever the threads of a
// block reach it from (rustc's MIR JumpThreading may copy a barrier call into
// both sides of a branch, DESIGN.md §2). ptxas pays for that generality with a
// divergence check before each one (BRA.DIV + WARPSYNC). The aligned
// `bar.sync 0` (…cta.sync.aligned.all) is what nvcc emits for __syncthreads();
// PTX allows it when every thread of the CTA executes that same instruction:
// in conditional code, only if all threads evaluate the conditions alike.
//
// This pass, run on each kernel after O3 (everything is inlined), rewrites a
// barrier to the aligned form when its block is reached in CTA-uniform control
// flow: it is control-dependent (through the post-dominator tree, where a
// panic's `unreachable` counts as an exit) only on branches whose conditions
// are the same in every thread of the block, themselves in uniform blocks.
//
// The uniformity analysis is optimistic (start uniform, propagate until
// nothing changes) with deliberately few uniform sources:
//   - constants other than undef/poison, globals, the kernel's parameters;
//   - loads from a kernel parameter (the param space is read-only) or marked
//     !invariant.load, at a uniform address;
//   - the coordinates shared by the whole block: %ctaid, %nctaid, %ntid;
//   - pure operations on uniform operands (no freeze: freezing poison may
//     give each thread another value);
//   - a phi whose incoming values are uniform and whose incoming edges come
//     from uniform blocks with uniform terminators (no divergent join).
// Everything else — %tid, %laneid, any other call, atomics, other loads — is
// thread-varying. A bounds check on a thread-varying index counts as a
// divergent branch (a thread that panics never reaches the barrier), so a
// barrier after such a check stays non-aligned; a barrier that rustc copied
// into both sides of a thread-varying branch stays non-aligned too. Kernels
// with a block that cannot reach an exit (an endless loop: no post-dominator
// information) are left alone.
//===----------------------------------------------------------------------===//
#include "BlockCoordinates.h"
#include "oxide/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Analysis/PostDominators.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// Whether P points into the kernel's parameters (byval arguments).
bool isParamAddress(const Value *P, const Function &F) {
  const auto *A = dyn_cast<Argument>(getUnderlyingObject(P));
  return A && A->getParent() == &F && A->hasByValAttr() && A->onlyReadsMemory();
}

class Uniformity {
public:
  Uniformity(Function &F, PostDominatorTree &PDT) : F(F), PDT(PDT) {}

  void compute() {
    // Direct control dependences: B depends on A when B post-dominates a
    // successor of A but not A itself.
    for (BasicBlock &A : F) {
      if (A.getTerminator()->getNumSuccessors() < 2)
        continue;
      for (BasicBlock *S : successors(&A))
        for (DomTreeNode *N = PDT.getNode(S); N && N->getBlock(); N = N->getIDom()) {
          if (PDT.properlyDominates(N->getBlock(), &A))
            break;
          ControllingBlocks[N->getBlock()].insert(&A);
        }
    }
    for (bool Changed = true; Changed;) {
      Changed = false;
      for (BasicBlock &BB : F) {
        if (!DivergentBlocks.contains(&BB) && blockDiverges(BB)) {
          DivergentBlocks.insert(&BB);
          Changed = true;
        }
        for (Instruction &I : BB)
          if (!Divergent.contains(&I) && diverges(I)) {
            Divergent.insert(&I);
            Changed = true;
          }
      }
    }
  }

  bool isUniformBlock(const BasicBlock &BB) const { return !DivergentBlocks.contains(&BB); }

private:
  Function &F;
  PostDominatorTree &PDT;
  DenseMap<const BasicBlock *, SmallPtrSet<BasicBlock *, 4>> ControllingBlocks;
  DenseSet<const Value *> Divergent;
  DenseSet<const BasicBlock *> DivergentBlocks;

  bool isUniform(const Value *V) const {
    if (isa<UndefValue>(V))
      return false;
    if (isa<Constant>(V))
      return true;
    if (const auto *A = dyn_cast<Argument>(V))
      return A->getParent() == &F;
    if (isa<Instruction>(V))
      return !Divergent.contains(V);
    return false;
  }

  bool terminatorDiverges(const BasicBlock &BB) const {
    const Instruction *T = BB.getTerminator();
    if (const auto *Br = dyn_cast<BranchInst>(T))
      return Br->isConditional() && !isUniform(Br->getCondition());
    if (const auto *Sw = dyn_cast<SwitchInst>(T))
      return !isUniform(Sw->getCondition());
    return T->getNumSuccessors() > 1;
  }

  bool blockDiverges(const BasicBlock &BB) const {
    auto It = ControllingBlocks.find(&BB);
    if (It == ControllingBlocks.end())
      return false;
    for (const BasicBlock *A : It->second)
      if (DivergentBlocks.contains(A) || terminatorDiverges(*A))
        return true;
    return false;
  }

  bool diverges(const Instruction &I) const {
    if (I.getType()->isVoidTy())
      return false;
    if (const auto *Phi = dyn_cast<PHINode>(&I)) {
      for (unsigned K = 0; K < Phi->getNumIncomingValues(); ++K) {
        const BasicBlock *From = Phi->getIncomingBlock(K);
        if (!isUniform(Phi->getIncomingValue(K)) || DivergentBlocks.contains(From) ||
            terminatorDiverges(*From))
          return true;
      }
      return false;
    }
    if (const auto *L = dyn_cast<LoadInst>(&I))
      return !L->isSimple() || !isUniform(L->getPointerOperand()) ||
             !(isParamAddress(L->getPointerOperand(), F) ||
               L->hasMetadata(LLVMContext::MD_invariant_load));
    if (const auto *II = dyn_cast<IntrinsicInst>(&I)) {
      // NVVM's pure intrinsics include the thread coordinates (%tid, %laneid):
      // only the block-wide ones are uniform. Other pure intrinsics (umin,
      // abs, …) are uniform on uniform operands.
      if (isBlockWideCoordinate(II->getIntrinsicID()))
        return false;
      if (II->getCalledFunction()->getName().starts_with("llvm.nvvm.") ||
          !II->doesNotAccessMemory() || II->isConvergent() || !II->willReturn())
        return true;
      for (const Value *Op : II->args())
        if (!isUniform(Op))
          return true;
      return false;
    }
    if (isa<CallBase>(I) || isa<FreezeInst>(I) || I.mayReadOrWriteMemory() || I.mayHaveSideEffects())
      return true;
    for (const Value *Op : I.operands())
      if (!isUniform(Op))
        return true;
    return false;
  }
};

/// Whether every block reaches a `ret` or `unreachable`.
bool allBlocksReachAnExit(Function &F) {
  SmallPtrSet<BasicBlock *, 32> Seen;
  SmallVector<BasicBlock *> Work;
  for (BasicBlock &BB : F)
    if (succ_empty(&BB) && Seen.insert(&BB).second)
      Work.push_back(&BB);
  while (!Work.empty())
    for (BasicBlock *P : predecessors(Work.pop_back_val()))
      if (Seen.insert(P).second)
        Work.push_back(P);
  return Seen.size() == F.size();
}

bool alignBarriers(Function &F) {
  SmallVector<CallInst *> Barriers;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB)
      if (auto *II = dyn_cast<IntrinsicInst>(&I);
          II && II->getIntrinsicID() == Intrinsic::nvvm_barrier_cta_sync_all &&
          isa<ConstantInt>(II->getArgOperand(0)))
        Barriers.push_back(II);
  if (Barriers.empty() || !allBlocksReachAnExit(F))
    return false;
  PostDominatorTree PDT(F);
  Uniformity U(F, PDT);
  U.compute();
  bool Changed = false;
  for (CallInst *C : Barriers) {
    if (!U.isUniformBlock(*C->getParent()))
      continue;
    C->setCalledFunction(
        Intrinsic::getOrInsertDeclaration(F.getParent(), Intrinsic::nvvm_barrier_cta_sync_aligned_all));
    Changed = true;
  }
  return Changed;
}

} // namespace

PreservedAnalyses AlignBarriersPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &F : M)
    if (!F.isDeclaration() && F.getCallingConv() == CallingConv::PTX_Kernel)
      Changed |= alignBarriers(F);
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

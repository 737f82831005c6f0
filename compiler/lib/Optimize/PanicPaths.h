//===- PanicPaths.h - What the post-O3 passes may move code across -*- C++ -*-===//
//
// The passes that reorder a kernel's code after O3 (DeferSharedStores,
// HoistBoundsChecks, MergeBoundsChecks, VersionBoundsChecks) share one
// notion of what is free to cross and of which blocks are only the way to
// a panic:
//
//   - a pure instruction touches no memory, has no side effect and is not
//     convergent, so no thread can tell where it ran; a speculatable one is
//     also safe to run where it did not (no trap, not a phi);
//   - an invariant load reads a read-only slice (TagInvariantLoads), which
//     nothing writes while the kernel runs;
//   - a panic call is a call of a function LowerPanics defined (attribute
//     `oxide-panic`) with only constant pointers among its arguments: its
//     body records the panic, prints and traps, and reads no user memory;
//   - a panic-only block runs pure instructions and then such a call, or
//     branches only to panic-only blocks.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_LIB_PANICPATHS_H
#define OXIDE_LIB_PANICPATHS_H

#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"

namespace oxide {

/// No memory access, no side effect, no convergence: free to cross. Phis and
/// markers (assume, lifetime, noalias scope declarations) count as pure;
/// invariant.start/end speak about memory, so they do not.
inline bool isPureInstruction(const llvm::Instruction &I) {
  using namespace llvm;
  if (I.isTerminator())
    return false;
  if (isa<PHINode>(I))
    return true;
  if (const auto *II = dyn_cast<IntrinsicInst>(&I))
    if (II->isAssumeLikeIntrinsic() && II->getIntrinsicID() != Intrinsic::invariant_start &&
        II->getIntrinsicID() != Intrinsic::invariant_end)
      return true;
  if (const auto *CB = dyn_cast<CallBase>(&I))
    if (!isa<IntrinsicInst>(CB) || CB->isConvergent())
      return false;
  return !I.mayReadOrWriteMemory() && !I.mayHaveSideEffects();
}

/// Pure and safe to run on a path that did not run it (no division that
/// could trap, no phi).
inline bool isSpeculatable(const llvm::Instruction &I) {
  return !llvm::isa<llvm::PHINode>(I) && isPureInstruction(I) &&
         llvm::isSafeToSpeculativelyExecute(&I);
}

/// A simple load tagged !invariant.load (through a read-only slice).
inline bool isInvariantLoad(const llvm::Instruction &I) {
  const auto *L = llvm::dyn_cast<llvm::LoadInst>(&I);
  return L && L->isSimple() && L->hasMetadata(llvm::LLVMContext::MD_invariant_load);
}

/// A call of a panic function LowerPanics defined, with only constant
/// pointers (locations, literal messages) among its arguments.
inline bool isPanicCall(const llvm::Instruction &I) {
  const auto *C = llvm::dyn_cast<llvm::CallInst>(&I);
  const llvm::Function *F = C ? C->getCalledFunction() : nullptr;
  if (!F || !F->hasFnAttribute(PanicFunctionAttr))
    return false;
  for (const llvm::Value *A : C->args())
    if (A->getType()->isPointerTy() && !llvm::isa<llvm::Constant>(A))
      return false;
  return true;
}

/// Which blocks lead only to a panic, having done nothing else on the way
/// (memoised; one instance per function while its CFG does not change, or
/// while only blocks that are not panic-only are rewritten).
class PanicOnlyBlocks {
public:
  bool contains(const llvm::BasicBlock *BB) {
    auto [It, New] = Memo.try_emplace(BB, false); // a cycle counts as "no"
    if (!New)
      return It->second;
    bool Result = compute(BB);
    Memo[BB] = Result;
    return Result;
  }

private:
  bool compute(const llvm::BasicBlock *BB) {
    for (const llvm::Instruction &I : *BB) {
      if (isPanicCall(I))
        return true;
      if (isPureInstruction(I))
        continue;
      const auto *Br = llvm::dyn_cast<llvm::BranchInst>(&I);
      if (!Br)
        return false;
      for (const llvm::BasicBlock *S : Br->successors())
        if (!contains(S))
          return false;
      return true;
    }
    return false;
  }

  llvm::DenseMap<const llvm::BasicBlock *, bool> Memo;
};

} // namespace oxide

#endif

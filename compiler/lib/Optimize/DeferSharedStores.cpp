//===- DeferSharedStores.cpp - Shared stores sink below bounds checks -----===//
//
// A tiled kernel copies a tile from global to shared memory, one element per
// unrolled step:
//
//     if row < rows && col < cols { TILE[s] = input[row * cols + col]; }
//
// Each `input[..]` is a bounds check (a branch to a panic block) followed by
// the load, and the shared store of step i sits between the load of step i and
// the check and load of step i + 1. ptxas neither moves the store below the
// branch nor the next load above it, so each load waits for the one before
// (the store consumes it): the tile is loaded one latency at a time. nvcc,
// without checks, issues all the loads first.
//
// This pass moves each store to shared memory (addrspace(3), directly or
// through a generic pointer to a shared global) forward to the first later
// point P that is not one of:
//   - an instruction without memory access or side effects,
//   - a load tagged !invariant.load (a read-only slice: nothing writes it, so
//     it cannot alias the store),
//   - a branch whose other successors lead only to a panic (below),
//   - the join of such branches and of `if`s made only of the above,
//   - a later shared store that moves to the same point (the group is
//     re-emitted there in program order, so shared stores keep their order).
// It moves only when that passes at least one invariant load (a store of the
// group may move without, to make room for an earlier one), and a store that
// needs a flag (below) only when it also passes a bounds check. Without a
// check in the way ptxas predicates the `if`s and issues the loads first by
// itself, as for nvcc's kernels, and the flags and address phis only cost
// registers (a transpose's unchecked entry, VersionBoundsChecks, was slower
// with them). An unconditional store moves for free and still gains
// (SGEMM's unchecked entry; benches/README.md has the figures). When
// the store's block does not dominate P, the store is re-emitted at P under
// a flag that says "the store's block ran since the block dominating both"
// (SSA phis); the shared value and address travel the same way.
//
// Why this keeps Rust's semantics:
//   - On every path that does not panic, the same store happens with the same
//     value and address, in the same order relative to every instruction that
//     touches memory other than read-only slices: only pure instructions,
//     invariant loads and branches are crossed. No barrier, fence, atomic or
//     call is crossed, so no other thread can order itself between the old
//     and new position without a data race (UB in Rust).
//   - On a path that panics between the old and new position, the store is
//     lost. A panic block here is one that runs only pure instructions and then
//     calls a function LowerPanics defined (attribute `oxide-panic`) with only
//     constant pointer arguments: that body records the panic in the host's
//     record, prints and traps, and reads no user memory. The trap ends the
//     whole grid; shared memory belongs to the block and dies with it, and no
//     thread of the block can synchronise with the panicking thread after the
//     store would have happened (the panicking thread reaches no barrier, and
//     other threads only ever meet it through the panic record's state, after
//     which they trap too). So no one can observe that the store is missing.
//   - The flag is exact: P is reached from the store only through the crossed
//     region (every non-panic path out of it goes through P); the walk refuses
//     back edges, and a path from P back to P that avoids both the store's
//     block and the dominating block (which reset the flag) is refused, so the
//     store is emitted exactly once per execution of the original store.
//===----------------------------------------------------------------------===//
#include "PanicPaths.h"
#include "oxide/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/SSAUpdater.h"

using namespace llvm;
using namespace oxide;

namespace {

constexpr unsigned SharedAddressSpace = 3;
/// At most this many blocks are crossed by one store.
constexpr unsigned MaxRegionBlocks = 64;

bool isSharedStore(const StoreInst &S) {
  if (!S.isSimple())
    return false;
  if (S.getPointerAddressSpace() == SharedAddressSpace)
    return true;
  const auto *GV = dyn_cast<GlobalVariable>(getUnderlyingObject(S.getPointerOperand()));
  return GV && GV->getAddressSpace() == SharedAddressSpace;
}

class Deferrer {
public:
  explicit Deferrer(Function &F) : F(F), DT(F) {}

  bool run() {
    // Program order (reverse post-order), so that a group of stores deferred
    // to the same point is re-emitted there in its original order.
    SmallVector<StoreInst *> Stores;
    ReversePostOrderTraversal<Function *> RPOT(&F);
    for (BasicBlock *BB : RPOT)
      for (Instruction &I : *BB)
        if (auto *S = dyn_cast<StoreInst>(&I); S && isSharedStore(*S))
          Stores.push_back(S);
    if (Stores.empty())
      return false;

    DenseMap<StoreInst *, Walk> Walks;
    for (StoreInst *S : Stores)
      if (Walk W = walk(S); !W.Failed)
        Walks[S] = std::move(W);
    // A store may cross a later shared store only if that one moves to the
    // same point too (the two keep their order there); drop stores until
    // that holds for every store left.
    for (bool Dropped = true; Dropped;) {
      Dropped = false;
      for (StoreInst *S : Stores) {
        auto It = Walks.find(S);
        if (It == Walks.end())
          continue;
        for (StoreInst *Crossed : It->second.Crossed) {
          auto C = Walks.find(Crossed);
          if (C == Walks.end() || C->second.Stop != It->second.Stop) {
            Walks.erase(It);
            Dropped = true;
            break;
          }
        }
      }
    }
    // What moves: stores that pass a load (and a check, if they need a
    // flag), and the stores they cross.
    SmallPtrSet<StoreInst *, 16> Moving;
    SmallVector<StoreInst *> Work;
    for (auto &[S, W] : Walks)
      if (W.PassedLoad && (W.PassedCheck || !needsFlag(S, W.Stop)) && Moving.insert(S).second)
        Work.push_back(S);
    while (!Work.empty())
      for (StoreInst *Crossed : Walks[Work.pop_back_val()].Crossed)
        if (Moving.insert(Crossed).second)
          Work.push_back(Crossed);
    // Last first, each just before the ones already placed at its point.
    DenseMap<Instruction *, Instruction *> PlaceBefore;
    bool Changed = false;
    for (StoreInst *S : reverse(Stores)) {
      if (!Moving.contains(S))
        continue;
      Instruction *Stop = Walks[S].Stop;
      auto [It, New] = PlaceBefore.try_emplace(Stop, Stop);
      It->second = place(S, It->second);
      Changed = true;
    }
    return Changed;
  }

private:
  Function &F;
  DominatorTree DT;
  PanicOnlyBlocks PanicOnly;

  struct Walk {
    /// Where the store must be at the latest: the one point every way on
    /// from the store that does not panic reaches first.
    Instruction *Stop = nullptr;
    bool PassedLoad = false;
    /// Whether a branch on the way has a panic on its other side.
    bool PassedCheck = false;
    bool Failed = false;
    SmallPtrSet<BasicBlock *, 16> Region;
    /// Later shared stores on the way.
    SmallVector<StoreInst *, 4> Crossed;
  };

  /// Whether S re-emitted before At runs under a flag (its block does not
  /// run on every way to At).
  bool needsFlag(StoreInst *S, Instruction *At) const {
    return !DT.dominates(S->getParent(), At->getParent());
  }

  void stopAt(Walk &W, Instruction *I) {
    if (W.Stop && W.Stop != I)
      W.Failed = true;
    W.Stop = I;
  }

  /// Scans forward from S to the single point where the store must be, and
  /// checks that it can be emitted there exactly once.
  Walk walk(StoreInst *S) {
    Walk W;
    BasicBlock *Home = S->getParent();
    SmallVector<std::pair<BasicBlock *, Instruction *>> Work{{Home, S->getNextNode()}};
    while (!Work.empty() && !W.Failed) {
      auto [BB, Start] = Work.pop_back_val();
      for (Instruction *I = Start; I; I = I->getNextNode()) {
        if (isInvariantLoad(*I)) {
          W.PassedLoad = true;
          continue;
        }
        if (isPureInstruction(*I))
          continue;
        if (auto *Later = dyn_cast<StoreInst>(I); Later && isSharedStore(*Later)) {
          W.Crossed.push_back(Later);
          continue;
        }
        auto *Br = dyn_cast<BranchInst>(I);
        if (!Br) {
          stopAt(W, I);
          break;
        }
        unsigned Live = 0;
        for (BasicBlock *Succ : Br->successors()) {
          if (PanicOnly.contains(Succ)) {
            W.PassedCheck = true;
            continue;
          }
          ++Live;
          // Never around a loop: the store must reach its point before it
          // runs again.
          if (Succ == Home || DT.dominates(Succ, BB) || DT.dominates(Succ, Home)) {
            W.Failed = true;
            break;
          }
          if (W.Region.insert(Succ).second)
            Work.push_back({Succ, &Succ->front()});
        }
        if (Live == 0) // every way on panics
          W.Failed = true;
        break;
      }
      if (W.Region.size() > MaxRegionBlocks)
        W.Failed = true;
    }
    if (!W.Stop) {
      W.Failed = true;
      return W;
    }
    BasicBlock *Target = W.Stop->getParent();
    if (Target == Home)
      return W;
    if (DT.dominates(Target, Home)) {
      W.Failed = true;
      return W;
    }
    // The point must not be reached again without passing Home (the store
    // runs again) or the common dominator (the flag is reset): otherwise the
    // store would be emitted twice.
    BasicBlock *Head = DT.findNearestCommonDominator(Home, Target);
    SmallVector<BasicBlock *> From(successors(Target));
    SmallPtrSet<BasicBlock *, 2> Resets{Home, Head};
    if (!From.empty() && isPotentiallyReachableFromMany(From, Target, &Resets, &DT))
      W.Failed = true;
    return W;
  }

  /// Re-emits S just before At (its walk's point, or the first store already
  /// placed there); returns the first instruction of what was emitted.
  Instruction *place(StoreInst *S, Instruction *At) {
    // Its noalias scopes were declared where it was (noalias.scope.decl,
    // crossed as a marker); below another declaration they would claim too
    // much, so the moved store keeps none.
    S->setMetadata(LLVMContext::MD_alias_scope, nullptr);
    S->setMetadata(LLVMContext::MD_noalias, nullptr);
    BasicBlock *Home = S->getParent();
    BasicBlock *Target = At->getParent();
    if (!needsFlag(S, At)) {
      S->moveBefore(At->getIterator());
      return S;
    }
    BasicBlock *Head = DT.findNearestCommonDominator(Home, Target);
    LLVMContext &Ctx = F.getContext();
    auto Reaching = [&](Value *AtHome, Value *AtHead, StringRef Name) {
      SSAUpdater SSA;
      SSA.Initialize(AtHome->getType(), Name);
      SSA.AddAvailableValue(Head, AtHead);
      SSA.AddAvailableValue(Home, AtHome);
      return SSA.GetValueInMiddleOfBlock(Target);
    };
    Value *Val = S->getValueOperand(), *Ptr = S->getPointerOperand();
    Value *Ran = Reaching(ConstantInt::getTrue(Ctx), ConstantInt::getFalse(Ctx), "shared.store.ran");
    Value *NewVal = Reaching(Val, PoisonValue::get(Val->getType()), "shared.store.value");
    Value *NewPtr = Reaching(Ptr, PoisonValue::get(Ptr->getType()), "shared.store.addr");
    Instruction *Then = SplitBlockAndInsertIfThen(Ran, At->getIterator(), false);
    auto *New = cast<StoreInst>(S->clone());
    New->setOperand(0, NewVal);
    New->setOperand(1, NewPtr);
    New->insertBefore(Then->getIterator());
    S->eraseFromParent();
    DT.recalculate(F);
    return Target->getTerminator();
  }
};

} // namespace

PreservedAnalyses DeferSharedStoresPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &F : M)
    if (!F.isDeclaration())
      Changed |= Deferrer(F).run();
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

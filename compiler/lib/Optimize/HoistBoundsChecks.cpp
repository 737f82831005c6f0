//===- HoistBoundsChecks.cpp - Bounds checks leave the guarded loads ------===//
//
// A tiled kernel loads its tile element by element, each load guarded by the
// user's own test and checked by Rust:
//
//     let v = if row < rows && col < cols { input[row * cols + col] } else { 0.0 };
//
//   guard:  br %in, label %check, label %join
//   check:  %i = ... ; %ok = icmp ult i64 %i, %len
//           br %ok, label %load, label %panic
//   load:   %x = load float, ptr ... !invariant.load ; (and a conversion, say)
//   join:   %v = phi float [ %x, %load ], [ 0.0, %guard ]
//
// The branch to the panic makes each `if` a region ptxas cannot predicate: it
// stays a real branch with a reconvergence point, the load's first use sits
// before that point, and so every thread waits for each load before it issues
// the next one; a tile of eight loads costs eight memory latencies. nvcc,
// without checks, predicates the `if`s and issues the loads back to back.
//
// This pass moves the checks out of the way, in two steps:
//
//  1. Lift: a check block whose only predecessor is a guard (a conditional
//     branch that is not itself a check), and that computes nothing but pure,
//     speculatable values, moves into the guard:
//
//       guard:  %i = ... ; %ok = ... ; %fail = select i1 %in, i1 !%ok, i1 false
//               br %fail, label %panic, label %guard.split
//       guard.split: br %in, label %check, label %join      ; check: br %load
//
//  2. Merge: a check (one successor only leads to a panic) is merged with the
//     next one when everything between them is pure code, invariant loads and
//     branches among those, every path from the first reaches the second, and
//     the second's condition and its panic's operands can be computed at the
//     first from speculatable instructions:
//
//       first:  ... ; %any = select i1 %fail1, i1 true, i1 %fail2
//               br %any, label %bounds.which, label %on
//       bounds.which: br %fail1, label %bounds.fail (→ panic1),
//                                label %bounds.fail (→ panic2)
//
//     and the second check becomes an unconditional branch. Repeated, all
//     the checks of a tile load become one branch ahead of the loads, and the
//     guarded loads are branch-free `if`s that ptxas predicates.
//
// Why this keeps Rust's semantics:
//   - Lift: the moved instructions are pure and speculatable, so running them
//     when the guard is false has no effect; `select %in, %notok, false` is
//     false there even if they produced poison. When the guard is true the
//     same check runs with the same values, before the same code.
//   - Merge: when no check fails, the same blocks run with the same values
//     (only pure instructions moved up, and the second check always passes).
//     When the first fails, the first panic runs with the same operands. When
//     only the second fails, the second panic runs with the same operands
//     (computed earlier from the same inputs: nothing between writes memory),
//     and what is skipped is pure code and loads of read-only memory, which
//     no one can observe: the panic traps, ending the grid. `select %fail1,
//     true, %fail2` is true whenever the first fails, even if the second's
//     speculated operands are poison. The first failing check in program
//     order is the one that panics, so the message names the same index.
//===----------------------------------------------------------------------===//
#include "PanicPaths.h"
#include "oxide/Passes.h"
#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

using namespace llvm;
using namespace oxide;

namespace {

/// At most this many blocks lie between two checks that are merged.
constexpr unsigned MaxRegionBlocks = 64;

/// Whether a thread running BB waits for one of its read-only loads before
/// leaving it: the loaded value is used in BB by something other than a phi
/// (a conversion, arithmetic). Only then do checks around it cost time; a
/// load whose value just flows into a phi is already overlapped, and moving
/// its check would only keep the index alive longer (registers).
bool waitsOnLoad(const BasicBlock &BB) {
  for (const Instruction &I : BB)
    if (isInvariantLoad(I))
      for (const User *U : I.users())
        if (const auto *UI = dyn_cast<Instruction>(U); UI && UI->getParent() == &BB && !isa<PHINode>(UI))
          return true;
  return false;
}

/// A conditional branch ending a block, one of whose successors only leads to
/// a panic.
struct Check {
  BranchInst *Br;
  unsigned FailIndex; // which successor panics

  BasicBlock *block() const { return Br->getParent(); }
  BasicBlock *fail() const { return Br->getSuccessor(FailIndex); }
  BasicBlock *pass() const { return Br->getSuccessor(1 - FailIndex); }

  /// The i1 that is true when the check fails, created before \p At if the
  /// branch's condition must be negated.
  Value *failCondition(Instruction *At) const {
    Value *C = Br->getCondition();
    return FailIndex == 0 ? C : IRBuilder<>(At).CreateNot(C, "bounds.bad");
  }
};

class Hoister {
public:
  explicit Hoister(Function &F) : F(F) {}

  bool run() {
    bool Changed = liftAll();
    DT.recalculate(F);
    ReversePostOrderTraversal<Function *> RPOT(&F);
    SmallVector<BasicBlock *> Order(RPOT.begin(), RPOT.end());
    for (BasicBlock *BB : Order)
      while (std::optional<Check> X = matchCheck(*BB)) {
        if (!mergeNext(*X))
          break;
        Changed = true;
        DT.recalculate(F);
      }
    return Changed;
  }

private:
  Function &F;
  DominatorTree DT;
  PanicOnlyBlocks PanicOnly;

  std::optional<Check> matchCheck(BasicBlock &BB) {
    auto *Br = dyn_cast<BranchInst>(BB.getTerminator());
    if (!Br || !Br->isConditional() || Br->getSuccessor(0) == Br->getSuccessor(1))
      return std::nullopt;
    bool Fail0 = PanicOnly.contains(Br->getSuccessor(0));
    bool Fail1 = PanicOnly.contains(Br->getSuccessor(1));
    if (Fail0 == Fail1)
      return std::nullopt;
    return Check{Br, Fail0 ? 0u : 1u};
  }

  //===-- Step 1: lift checks out of their guards -------------------------===//

  bool liftAll() {
    bool Changed = false;
    for (bool Again = true; Again;) {
      Again = false;
      SmallVector<BasicBlock *> Blocks;
      for (BasicBlock &BB : F)
        Blocks.push_back(&BB);
      for (BasicBlock *BB : Blocks)
        if (std::optional<Check> C = matchCheck(*BB); C && lift(*C))
          Again = Changed = true;
    }
    return Changed;
  }

  bool lift(const Check &C) {
    BasicBlock *CB = C.block();
    BasicBlock *Guard = CB->getSinglePredecessor();
    if (!Guard || Guard == CB || matchCheck(*Guard) || !waitsOnLoad(*C.pass()))
      return false;
    auto *GuardBr = dyn_cast<BranchInst>(Guard->getTerminator());
    if (!GuardBr || !GuardBr->isConditional() || GuardBr->getSuccessor(0) == GuardBr->getSuccessor(1))
      return false;
    for (Instruction &I : *CB)
      if (&I != C.Br && !isSpeculatable(I))
        return false;

    // The check's computation runs in the guard, before its branch. Poison
    // flags stay: the values reach only the select below (which ignores
    // them when the guard is false) and code the check block dominated.
    while (&CB->front() != C.Br)
      CB->front().moveBefore(GuardBr->getIterator());
    IRBuilder<> B(GuardBr);
    Value *In = GuardBr->getSuccessor(0) == CB ? GuardBr->getCondition()
                                                : B.CreateNot(GuardBr->getCondition(), "guard.not");
    Value *Fail = B.CreateSelect(In, C.failCondition(GuardBr), B.getFalse(), "bounds.fail");

    BasicBlock *Panic = C.fail(), *Pass = C.pass();
    BasicBlock *Rest = Guard->splitBasicBlock(GuardBr->getIterator(), Guard->getName() + ".checked");
    Instruction *ToRest = Guard->getTerminator();
    BranchInst::Create(Panic, Rest, Fail, ToRest->getIterator());
    ToRest->eraseFromParent();
    for (PHINode &Phi : Panic->phis())
      Phi.replaceIncomingBlockWith(CB, Guard);
    BranchInst::Create(Pass, C.Br->getIterator());
    C.Br->eraseFromParent();
    return true;
  }

  //===-- Step 2: merge a check with the next one -------------------------===//

  /// The next check every path from X's passing side reaches, crossing only
  /// pure code, invariant loads and branches, entered only from X's side.
  std::optional<Check> nextCheck(const Check &X, SmallPtrSetImpl<BasicBlock *> &Region) {
    BasicBlock *Start = X.pass();
    SmallVector<BasicBlock *> Work{Start};
    Region.insert(Start);
    std::optional<Check> Next;
    while (!Work.empty()) {
      BasicBlock *BB = Work.pop_back_val();
      if (BB == X.block() || DT.dominates(BB, X.block()))
        return std::nullopt; // around a loop
      for (Instruction &I : *BB)
        if (!I.isTerminator() && !isPureInstruction(I) && !isInvariantLoad(I))
          return std::nullopt;
      if (std::optional<Check> C = matchCheck(*BB)) {
        if (Next && Next->Br != C->Br)
          return std::nullopt;
        Next = C;
        continue;
      }
      auto *Br = dyn_cast<BranchInst>(BB->getTerminator());
      if (!Br)
        return std::nullopt;
      for (BasicBlock *S : Br->successors()) {
        if (PanicOnly.contains(S) || DT.dominates(S, BB))
          return std::nullopt;
        if (Region.insert(S).second)
          Work.push_back(S);
      }
      if (Region.size() > MaxRegionBlocks)
        return std::nullopt;
    }
    if (!Next || none_of(Region, [](BasicBlock *BB) { return waitsOnLoad(*BB); }))
      return std::nullopt;
    // Nothing reaches the region except through X's passing side.
    for (BasicBlock *BB : Region)
      for (BasicBlock *P : predecessors(BB))
        if (!Region.contains(P) && !(BB == Start && P == X.block()))
          return std::nullopt;
    return Next;
  }

  /// Whether V can be made available before \p At by moving speculatable
  /// instructions of \p Region there; those are added to \p Move in an order
  /// that defines operands first.
  bool hoistable(Value *V, Instruction *At, const SmallPtrSetImpl<BasicBlock *> &Region,
                 SetVector<Instruction *> &Move, unsigned Depth = 0) {
    auto *I = dyn_cast<Instruction>(V);
    if (!I || Move.contains(I) || DT.dominates(I, At))
      return true;
    if (Depth > 32 || !Region.contains(I->getParent()) || !isSpeculatable(*I))
      return false;
    for (Value *Op : I->operands())
      if (!hoistable(Op, At, Region, Move, Depth + 1))
        return false;
    Move.insert(I);
    return true;
  }

  /// The blocks of the panic Y's check fails to (its failure block and all
  /// it leads to).
  SmallPtrSet<BasicBlock *, 8> panicBlocks(const Check &Y) {
    SmallPtrSet<BasicBlock *, 8> Chain{Y.fail()};
    SmallVector<BasicBlock *> Work{Y.fail()};
    while (!Work.empty())
      for (BasicBlock *S : successors(Work.pop_back_val()))
        if (Chain.insert(S).second)
          Work.push_back(S);
    return Chain;
  }

  /// The values the panic reached from Y uses that are computed outside the
  /// panic's own blocks (operands, and phi values for edges from Y or from
  /// within those blocks).
  SmallVector<Value *> panicOperands(const Check &Y) {
    SmallPtrSet<BasicBlock *, 8> Chain = panicBlocks(Y);
    SmallVector<Value *> Out;
    for (BasicBlock *BB : Chain)
      for (Instruction &I : *BB) {
        if (auto *Phi = dyn_cast<PHINode>(&I)) {
          for (unsigned K = 0; K < Phi->getNumIncomingValues(); ++K)
            if (BasicBlock *From = Phi->getIncomingBlock(K); From == Y.block() || Chain.contains(From))
              Out.push_back(Phi->getIncomingValue(K));
          continue;
        }
        for (Value *Op : I.operands())
          if (auto *OpI = dyn_cast<Instruction>(Op); OpI && !Chain.contains(OpI->getParent()))
            Out.push_back(Op);
      }
    return Out;
  }

  bool mergeNext(const Check &X) {
    SmallPtrSet<BasicBlock *, 16> Region;
    std::optional<Check> Y = nextCheck(X, Region);
    if (!Y || Y->fail() == X.block())
      return false;
    Instruction *At = X.Br;
    SetVector<Instruction *> Move;
    if (!hoistable(Y->Br->getCondition(), At, Region, Move))
      return false;
    for (Value *V : panicOperands(*Y))
      if (!hoistable(V, At, Region, Move))
        return false;

    for (Instruction *I : Move)
      I->moveBefore(At->getIterator());
    Value *Fail1 = X.failCondition(At);
    Value *Fail2 = Y->failCondition(At);
    IRBuilder<> B(At);
    Value *Any = B.CreateSelect(Fail1, B.getTrue(), Fail2, "bounds.any");

    LLVMContext &Ctx = F.getContext();
    BasicBlock *Panic1 = X.fail(), *Panic2 = Y->fail();
    BasicBlock *Which = BasicBlock::Create(Ctx, "bounds.which", &F, Panic1);
    BasicBlock *To1 = BasicBlock::Create(Ctx, "bounds.first", &F, Panic1);
    BasicBlock *To2 = BasicBlock::Create(Ctx, "bounds.second", &F, Panic1);
    BranchInst::Create(To1, To2, Fail1, Which);
    BranchInst::Create(Panic1, To1);
    BranchInst::Create(Panic2, To2);
    for (PHINode &Phi : Panic1->phis())
      Phi.replaceIncomingBlockWith(X.block(), To1);
    for (PHINode &Phi : Panic2->phis())
      Phi.replaceIncomingBlockWith(Y->block(), To2);

    // The second check always passes now.
    BranchInst::Create(Y->pass(), Y->Br->getIterator());
    Y->Br->eraseFromParent();
    BasicBlock *On = X.pass();
    BranchInst::Create(Which, On, Any, X.Br->getIterator());
    X.Br->eraseFromParent();
    return true;
  }
};

} // namespace

PreservedAnalyses HoistBoundsChecksPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &F : M)
    if (!F.isDeclaration())
      Changed |= Hoister(F).run();
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

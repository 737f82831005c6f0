//===- MergeBoundsChecks.cpp - Checks of one index → one compare ----------===//
//
// `c[i] = a[i] + b[i]` checks `i` against each slice's length in turn:
//
//   A:    %ca = icmp ult i64 %i, %len_a      ; br %ca, label %B, label %panic_a
//   B:    %cb = icmp ult i64 %i, %len_b      ; br %cb, label %C, label %panic_b
//
// two 64-bit compares and two branches on the path every thread takes. When
// the second check follows the first with nothing but pure instructions in
// between, and its failure side ends in `unreachable` (a panic), this pass
// checks once against the smaller length and only sorts out which check
// failed on the way to a panic:
//
//   A:    %m = umin(%len_a, %len_b)  ; %ok = icmp ult %i, %m
//         br %ok, label %B, label %which
//   B:    br label %C
//   which: br %ca, label %panic_b, label %panic_a
//
// Repeated, a chain of checks of the same index becomes one compare against
// the smallest length. The lengths must be available before the first check
// (slice lengths are kernel parameters); a length computed on the way, such
// as the `umin` of an earlier merge, is computed before it when that is safe.
//
// The first compare need not fail to a panic. In
// `if let Some(out) = c.get_mut(i) { *out = a[i] + b[i] }` it is the guard
// `i < c.len` whose other side is the normal exit; merged, the threads that
// do the work test `i < min(c.len, a.len, b.len)` once, as nvcc's
// `if (i < n)` does, and `which` sends a thread that fails it to the exit
// (`!%ca`) or to the panic of the check it failed.
//
// Why this keeps Rust's semantics: when both checks pass, the same blocks run
// in the same order. When the first fails, its failure side runs with the
// same operands (they were available in A). When only the second fails, the
// second panic runs with the same operands; what is skipped is B's pure
// instructions (no memory access, no side effect, nothing convergent), none
// of whose results the panic block uses (the pass checks). `i < min(a, b)` is
// `i < a && i < b` for unsigned integers, so no other path changes.
//===----------------------------------------------------------------------===//
#include "PanicPaths.h"
#include "oxide/Passes.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PatternMatch.h"

using namespace llvm;
using namespace oxide;
using namespace llvm::PatternMatch;

namespace {

struct Check {
  BasicBlock *Block;
  Value *Cond, *Index, *Len;
  BasicBlock *Pass, *Fail;
};

/// Whether every way from BB ends in `unreachable` within a few branches
/// (a panic, or this pass's dispatch to panics): not a path threads take.
bool isCold(const BasicBlock *BB, unsigned Depth = 0) {
  const Instruction *T = BB->getTerminator();
  if (isa<UnreachableInst>(T))
    return true;
  if (!isa<BranchInst>(T) || Depth > 8)
    return false;
  for (const BasicBlock *S : successors(BB))
    if (S == BB || !isCold(S, Depth + 1))
      return false;
  return true;
}

/// `br (icmp ult Index, Len), Pass, Fail` ending BB; Fail cold where asked.
std::optional<Check> matchCheck(BasicBlock &BB, bool FailMustBeCold) {
  auto *Br = dyn_cast<BranchInst>(BB.getTerminator());
  if (!Br || !Br->isConditional())
    return std::nullopt;
  Value *Index, *Len;
  if (!match(Br->getCondition(), m_SpecificICmp(ICmpInst::ICMP_ULT, m_Value(Index), m_Value(Len))))
    return std::nullopt;
  Check C{&BB, Br->getCondition(), Index, Len, Br->getSuccessor(0), Br->getSuccessor(1)};
  if (C.Pass == C.Fail || (FailMustBeCold && !isCold(C.Fail)))
    return std::nullopt;
  return C;
}

/// Whether I, which does not dominate Before, could run there instead: it
/// is safe to run early (no trap, no memory) and its operands dominate it.
bool canComputeAt(const Instruction &I, const Instruction *Before, const DominatorTree &DT) {
  if (!isSpeculatable(I))
    return false;
  for (const Value *Op : I.operands())
    if (const auto *OpDef = dyn_cast<Instruction>(Op); OpDef && !DT.dominates(OpDef, Before))
      return false;
  return true;
}

/// Merges the check ending A with the next check of the same index, if any.
bool mergeNext(const Check &A, DominatorTree &DT) {
  // The way from A to the next check: blocks entered only from the one
  // before, pure, the last ending in the next check.
  SmallVector<BasicBlock *, 4> Between;
  BasicBlock *BB = A.Pass;
  std::optional<Check> B;
  while (true) {
    if (BB->getSinglePredecessor() == nullptr || BB == A.Block || Between.size() > 8)
      return false;
    for (Instruction &I : *BB)
      if (!I.isTerminator() && !isPureInstruction(I))
        return false;
    Between.push_back(BB);
    if ((B = matchCheck(*BB, /*FailMustBeCold=*/true)))
      break;
    auto *Br = dyn_cast<BranchInst>(BB->getTerminator());
    if (!Br || Br->isConditional())
      return false;
    BB = Br->getSuccessor(0);
  }
  if (B->Index != A.Index || B->Len->getType() != A.Len->getType() || B->Fail == B->Block ||
      B->Pass == B->Fail)
    return false;
  Instruction *ATerm = A.Block->getTerminator();
  // B's length is needed at A: a kernel parameter, usually, or the `umin`
  // of an earlier merge on the way, which is then computed in A.
  auto *LenDef = dyn_cast<Instruction>(B->Len);
  bool MoveLen = LenDef && !DT.dominates(LenDef, ATerm);
  if (MoveLen && !canComputeAt(*LenDef, ATerm, DT))
    return false;
  // Nothing computed on the way may be needed by B's panic, which will be
  // reached without passing there.
  SmallPtrSet<BasicBlock *, 8> Skipped(Between.begin(), Between.end());
  for (BasicBlock *S : Between)
    for (Instruction &I : *S) {
      if (&I == LenDef)
        continue;
      for (User *U : I.users())
        if (auto *UI = dyn_cast<Instruction>(U); UI && !Skipped.contains(UI->getParent()) &&
                                                  !DT.dominates(B->Pass, UI->getParent()))
          return false;
    }
  // The failure blocks' phi values from A and B were computed before A or
  // in A (checked above), so they are available in the dispatch block.
  LLVMContext &Ctx = A.Block->getContext();
  Function *F = A.Block->getParent();
  BasicBlock *Which = BasicBlock::Create(Ctx, "bounds.which", F, B->Fail);
  IRBuilder<> W(Which);
  if (A.Fail == B->Fail) {
    for (PHINode &Phi : A.Fail->phis()) {
      Value *FromA = Phi.getIncomingValueForBlock(A.Block);
      Value *FromB = Phi.getIncomingValueForBlock(B->Block);
      Phi.removeIncomingValue(A.Block, false);
      Phi.removeIncomingValue(B->Block, false);
      Phi.addIncoming(FromA == FromB ? FromA : W.CreateSelect(A.Cond, FromB, FromA), Which);
    }
    W.CreateBr(A.Fail);
  } else {
    for (PHINode &Phi : A.Fail->phis())
      Phi.replaceIncomingBlockWith(A.Block, Which);
    for (PHINode &Phi : B->Fail->phis()) {
      Value *FromB = Phi.getIncomingValueForBlock(B->Block);
      Phi.removeIncomingValue(B->Block, false);
      Phi.addIncoming(FromB, Which);
    }
    W.CreateCondBr(A.Cond, B->Fail, A.Fail);
  }
  // B's check always passes now.
  Instruction *BTerm = B->Block->getTerminator();
  BranchInst::Create(B->Pass, BTerm->getIterator());
  BTerm->eraseFromParent();
  // One compare against the smaller length.
  if (MoveLen)
    LenDef->moveBefore(ATerm->getIterator());
  IRBuilder<> AB(ATerm);
  Value *Min = AB.CreateBinaryIntrinsic(Intrinsic::umin, A.Len, B->Len, nullptr, "bounds.len");
  Value *Ok = AB.CreateICmpULT(A.Index, Min, "bounds.ok");
  AB.CreateCondBr(Ok, A.Pass, Which);
  ATerm->eraseFromParent();
  return true;
}

bool mergeChecks(Function &F) {
  bool Changed = false;
  for (bool Again = true; Again;) {
    Again = false;
    DominatorTree DT(F);
    for (BasicBlock &BB : F)
      if (std::optional<Check> C = matchCheck(BB, /*FailMustBeCold=*/false); C && DT.isReachableFromEntry(&BB) &&
                                                   mergeNext(*C, DT)) {
        Again = Changed = true;
        break;
      }
  }
  return Changed;
}

} // namespace

PreservedAnalyses MergeBoundsChecksPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &F : M)
    if (!F.isDeclaration())
      Changed |= mergeChecks(F);
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

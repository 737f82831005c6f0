//===- ShareAddressBases.cpp - One base register for a tile's addresses ---===//
//
// An unrolled loop over a tile's rows reads `tile[base + r]` for r = y, y + 8,
// y + 16, …, each under its own `if`:
//
//     then.0:  %a0 = getelementptr float, ptr %tile, i64 %y
//     then.1:  %r1 = add nuw nsw i64 %y, 8          ; computed before the if
//              %a1 = getelementptr float, ptr %tile, i64 %r1
//
// The NVPTX backend splits each address into a variable part and a constant
// offset (SeparateConstOffsetFromGEP), but the variable part, `%tile + %y*4`,
// stays in each `then` block, and nothing in LLVM's pipeline hoists identical
// instructions out of sibling blocks (GVNHoist is off by default). So every
// access recomputes it, and ptxas does not merge them either: one extra
// dependent add before each shared load of a transpose's second half. nvcc's
// front end hoists it before unrolling and addresses all four loads as
// `[%r + 32·i]`.
//
// This pass finds address computations `getelementptr T, P, X + C` (C a
// constant, also `or disjoint`; X + 0 counts too) that share P and X in at
// least two different blocks, computes `getelementptr T, P, X` once right
// after the later of P's and X's definitions (which dominates every one of
// them), and rewrites each to `getelementptr T, base, C`, a register plus an
// immediate in PTX.
//
// The base is a plain getelementptr (no inbounds): its address is computed
// on paths where none of the original ones was, and the arithmetic is the
// same two's-complement sum either way, so every rewritten address is the
// value it was. Only the index width of the pointer is handled (no implied
// sign extension).
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PatternMatch.h"

using namespace llvm;
using namespace llvm::PatternMatch;

namespace {

/// `getelementptr T, P, X + C` and its C (T, P and X are its group's key).
struct SplitAddress {
  GetElementPtrInst *Gep;
  int64_t Constant;
};

/// X and C of a single index `X + C` / `X | C` (disjoint), or (Idx, 0).
std::pair<Value *, int64_t> splitIndex(Value *Idx) {
  Value *X;
  const APInt *C;
  if (match(Idx, m_Add(m_Value(X), m_APInt(C))) ||
      match(Idx, m_DisjointOr(m_Value(X), m_APInt(C))))
    if (C->getSignificantBits() <= 64)
      return {X, C->getSExtValue()};
  return {Idx, 0};
}

/// Puts B where a computation of both P and X may go: after the one defined
/// later (both dominate every user of the addresses, so one dominates the
/// other).
void setInsertPointAfter(IRBuilder<> &B, Function &F, const DominatorTree &DT, Value *P, Value *X) {
  Instruction *Later = nullptr;
  for (Value *V : {P, X}) {
    auto *I = dyn_cast<Instruction>(V);
    if (!I)
      continue;
    if (!Later || DT.dominates(Later, I))
      Later = I;
  }
  if (!Later)
    B.SetInsertPoint(&F.getEntryBlock(), F.getEntryBlock().getFirstInsertionPt());
  else if (isa<PHINode>(Later))
    B.SetInsertPoint(Later->getParent(), Later->getParent()->getFirstInsertionPt());
  else
    B.SetInsertPoint(Later->getParent(), std::next(Later->getIterator()));
}

bool shareBases(Function &F) {
  const DataLayout &DL = F.getParent()->getDataLayout();
  // Keyed by (element type, P, X); program order within each group.
  using Key = std::tuple<Type *, Value *, Value *>;
  MapVector<Key, SmallVector<SplitAddress, 4>> Groups;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB) {
      auto *Gep = dyn_cast<GetElementPtrInst>(&I);
      if (!Gep || Gep->getNumIndices() != 1 || Gep->getType()->isVectorTy())
        continue;
      Value *Idx = Gep->getOperand(1);
      if (Idx->getType() != DL.getIndexType(Gep->getType()) || isa<Constant>(Idx))
        continue;
      auto [X, C] = splitIndex(Idx);
      Groups[{Gep->getSourceElementType(), Gep->getPointerOperand(), X}].push_back({Gep, C});
    }

  DominatorTree DT(F);
  bool Changed = false;
  for (auto &[K, Members] : Groups) {
    if (Members.size() < 2)
      continue;
    BasicBlock *First = Members.front().Gep->getParent();
    if (all_of(Members, [&](const SplitAddress &A) { return A.Gep->getParent() == First; }))
      continue; // one block: EarlyCSE in the backend already shares it
    // The pointer as it is now: an earlier group may have rewritten it.
    Type *Ty = std::get<0>(K);
    Value *P = Members.front().Gep->getPointerOperand();
    Value *X = std::get<2>(K);
    IRBuilder<> B(F.getContext());
    setInsertPointAfter(B, F, DT, P, X);
    Value *Base = B.CreateGEP(Ty, P, X, "addr.base");
    for (SplitAddress &A : Members) {
      Value *New = Base;
      if (A.Constant != 0) {
        B.SetInsertPoint(A.Gep);
        New = B.CreateGEP(Ty, Base, B.getIntN(X->getType()->getIntegerBitWidth(), A.Constant));
        New->takeName(A.Gep);
      }
      A.Gep->replaceAllUsesWith(New);
      A.Gep->eraseFromParent();
    }
    Changed = true;
  }
  return Changed;
}

} // namespace

PreservedAnalyses oxide::ShareAddressBasesPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &F : M)
    if (!F.isDeclaration())
      Changed |= shareBases(F);
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

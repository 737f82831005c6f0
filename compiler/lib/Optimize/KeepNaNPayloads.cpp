//===- KeepNaNPayloads.cpp - Clamps to a constant keep the NaN they pass ---===//
//
// `if x < 0.5 { 0.5 } else { x }` (and the lower bound of `x.clamp(lo, hi)`)
// is, in LLVM IR,
//
//     %c = fcmp olt float %x, 0.5
//     %r = select i1 %c, float 0.5, float %x
//
// A NaN `x` fails the compare, so Rust returns `x` itself, bit for bit: a
// select copies, it does no arithmetic. ptxas recognises the compare and
// the select as a NaN-propagating maximum and emits one `FMNMX.NAN`, which
// returns the canonical NaN 0x7fffffff instead of `x`'s payload (measured
// on the H200: 0x7fc00001, 0x7fa12345 and 0xffc00000 all came back as
// 0x7fffffff). It does the same when the select is written on the bits
// (`selp.b32`), so the select has to stop looking like one.
//
// This pass rewrites exactly the selects that can lose a payload: a float
// select of `x` and a constant `C` on a compare of `x` with `C` (no NaN),
// where the way a NaN `x` takes is the arm that returns `x`. It becomes a
// merge of the bits under a mask,
//
//     %m = sext i1 %c to i32                 ; all ones where %c
//     %r = xor (F, and (xor (F, T), %m))     ; T where %c, F elsewhere
//
// which is the same value for every input (a pure integer identity), and
// which ptxas emits as a compare, a select of the mask and one `LOP3`:
// two instructions more than `FMNMX.NAN`, on clamps to constants only.
// Selects whose NaN way returns the constant (`if x > 0.5 { x } else { 0.5 }`)
// become a plain `FMNMX`, which returns the constant for a NaN as Rust does,
// and selects of two variables are not turned into `FMNMX` by ptxas; both
// are left alone.
//
// Runs last before code generation, after O3, which would fold the merge
// back into a select.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PatternMatch.h"

using namespace llvm;
using namespace llvm::PatternMatch;

namespace {

/// Whether `select (fcmp Pred X, C), T, F` hands a NaN `X` back as itself
/// while the other arm is the constant: the shape ptxas turns into a
/// NaN-canonicalising minimum or maximum.
bool passesNaNThrough(SelectInst &Sel) {
  Type *Ty = Sel.getType();
  if (!Ty->isFloatTy() && !Ty->isDoubleTy())
    return false;
  CmpPredicate Pred;
  Value *X;
  const APFloat *C;
  if (!match(Sel.getCondition(), m_FCmp(Pred, m_Value(X), m_APFloat(C))) || C->isNaN() ||
      X->getType() != Ty)
    return false;
  // A NaN fails every ordered compare and passes every unordered one.
  bool NaNTakesTrueArm = FCmpInst::isUnordered(Pred);
  Value *NaNArm = NaNTakesTrueArm ? Sel.getTrueValue() : Sel.getFalseValue();
  Value *OtherArm = NaNTakesTrueArm ? Sel.getFalseValue() : Sel.getTrueValue();
  const APFloat *Other;
  return NaNArm == X && match(OtherArm, m_APFloat(Other)) && !Other->isNaN();
}

/// `select %c, T, F` → the bits of F with those of T merged in under the
/// mask `sext %c`.
void mergeUnderMask(SelectInst &Sel) {
  IRBuilder<> B(&Sel);
  Type *Bits = B.getIntNTy(Sel.getType()->getPrimitiveSizeInBits());
  Value *T = B.CreateBitCast(Sel.getTrueValue(), Bits);
  Value *F = B.CreateBitCast(Sel.getFalseValue(), Bits);
  Value *Mask = B.CreateSExt(Sel.getCondition(), Bits, "nan.keep.mask");
  Value *Diff = B.CreateAnd(B.CreateXor(F, T), Mask);
  Value *Merged = B.CreateXor(F, Diff, "nan.keep");
  Sel.replaceAllUsesWith(B.CreateBitCast(Merged, Sel.getType()));
  Sel.eraseFromParent();
}

} // namespace

PreservedAnalyses oxide::KeepNaNPayloadsPass::run(Module &M, ModuleAnalysisManager &) {
  SmallVector<SelectInst *> Work;
  for (Function &F : M)
    for (BasicBlock &BB : F)
      for (Instruction &I : BB)
        if (auto *Sel = dyn_cast<SelectInst>(&I); Sel && passesNaNThrough(*Sel))
          Work.push_back(Sel);
  for (SelectInst *Sel : Work)
    mergeUnderMask(*Sel);
  return Work.empty() ? PreservedAnalyses::all() : PreservedAnalyses::none();
}

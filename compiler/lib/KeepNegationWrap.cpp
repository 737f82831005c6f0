//===- KeepNegationWrap.cpp - Negation and abs wrap at the minimum --------===//
//
// Rust's `wrapping_neg`, `wrapping_abs`, `unsigned_abs`, `overflowing_neg`,
// `checked_neg`, `saturating_neg` and friends all meet one value that has
// no positive counterpart: `iN::MIN`, whose negation and absolute value are
// `iN::MIN` again. LLVM says the same (`sub iN 0, x` wraps; `llvm.abs(x,
// false)` returns MIN for MIN), and so does PTX. ptxas does not, in two
// ways (measured on the H200; PtxasHazards.def lists them):
//   * it keeps a 16-bit value sign-extended in a 32-bit register and does
//     not re-extend after `neg.s16` or `abs.s16`, so -(-32768) stays
//     +32768: a later `setp.lt.s16`, `shr.s16`, `div.s16` or `cvt.s64.s16`
//     reads 32768 (`0i16.overflowing_sub(-32768).1` was false, the i16
//     `wrapping_neg` of -32768 widened to 32768);
//   * it assumes `abs.s32` and `abs.s64` are never negative and folds
//     `abs(x) < 0` to false (`y.checked_add(i64::MIN.wrapping_abs())` said
//     None for y = 0).
// The NVPTX backend picks `neg.s16` for a 16-bit (or promoted 8-bit)
// subtraction from zero, however it was written, and `abs.sN` for
// `llvm.abs` and for every select or xor/sub idiom it recognises as one,
// so no IR rewrite in terms of ordinary instructions can avoid them. This
// pass, last before code generation, replaces each of those operations by
// a PTX sequence ptxas compiles with wrap-around, as inline assembly the
// backend passes through untouched:
//
//   sub i16 0, %x                      →  sub.u16 %r, 0, %x
//   llvm.abs.i16(%x, _)                →  shr.s16 %s, %x, 15
//                                         xor.b16 %r, %x, %s
//                                         sub.u16 %r, %r, %s
//   llvm.abs.i32/i64(%x, _)            →  the same with .s32/.s64 and sub.sN
//   ssub.with.overflow.i16(0, %x)      →  { negation of %x, %x == MIN }
//   usub.with.overflow.i16(0, %x)      →  { negation of %x, %x != 0 }
//   ssub.sat.i16(0, %x)                →  %x == MIN ? MAX : negation of %x
//
// and the i8 forms through i16 (the backend computes them in 16-bit
// registers, as `neg.s16` and `abs.s16`). Each replacement is the same
// function of the operand bits as what it replaces, the minimum included:
// `(x ^ s) - s` with `s = x >> (N-1)` is x for x ≥ 0 and `!x + 1 = -x`
// (mod 2^N) below, and the `.u16` subtraction makes ptxas truncate to 16
// bits (in the sweep of tests/gpu/int_edges it re-extends after `sub.u16`
// where it did not after `neg.s16`). 32- and 64-bit negations (`neg.s32`,
// `neg.s64`) wrap correctly and stay. After the PTX is emitted,
// checkPtxasHazards (PtxasHazards.cpp) refuses any of the listed
// instructions that still got through, so a missed form is a build error,
// not a wrong answer.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PatternMatch.h"

using namespace llvm;
using namespace llvm::PatternMatch;

namespace {

/// The PTX register constraint and type suffix for an integer of `Bits`.
struct PtxInt {
  const char *Constraint;
  const char *Bits;
};

PtxInt ptxInt(unsigned Bits) {
  switch (Bits) {
  case 16:
    return {"h", "16"};
  case 32:
    return {"r", "32"};
  default:
    return {"l", "64"};
  }
}

/// `0 - X` for an i8 or i16 X, as `sub.u16` (i8 through i16: only the low
/// bits of the 16-bit result are read back).
Value *negateNarrow(IRBuilder<> &B, Value *X) {
  Type *Ty = X->getType();
  Value *Wide = B.CreateZExt(X, B.getInt16Ty());
  auto *FTy = FunctionType::get(B.getInt16Ty(), {B.getInt16Ty()}, false);
  Value *Neg = B.CreateCall(InlineAsm::get(FTy, "sub.u16 $0, 0, $1;", "=h,h", /*hasSideEffects=*/false),
                            {Wide}, "neg.wrap");
  return B.CreateTrunc(Neg, Ty);
}

/// |X| with |MIN| = MIN, as a shift, xor and subtract (i8 through i16).
Value *absoluteValue(IRBuilder<> &B, Value *X) {
  Type *Ty = X->getType();
  unsigned Bits = Ty->getIntegerBitWidth();
  unsigned Width = Bits <= 16 ? 16 : Bits;
  Type *WideTy = B.getIntNTy(Width);
  Value *Wide = B.CreateSExt(X, WideTy);
  PtxInt P = ptxInt(Width);
  std::string N = P.Bits;
  // The last step is unsigned at 16 bits: that is what makes ptxas
  // truncate the result to 16 bits.
  std::string Sub = Width == 16 ? "sub.u16" : "sub.s" + N;
  std::string Asm = "{ .reg .b" + N + " %oxide_sign; shr.s" + N + " %oxide_sign, $1, " +
                    std::to_string(Width - 1) + "; xor.b" + N + " $0, $1, %oxide_sign; " + Sub +
                    " $0, $0, %oxide_sign; }";
  std::string Constraints = std::string("=") + P.Constraint + "," + P.Constraint;
  auto *FTy = FunctionType::get(WideTy, {WideTy}, false);
  Value *Abs = B.CreateCall(InlineAsm::get(FTy, Asm, Constraints, /*hasSideEffects=*/false), {Wide},
                            "abs.wrap");
  return B.CreateTrunc(Abs, Ty);
}

bool isNarrow(Type *Ty) { return Ty->isIntegerTy(8) || Ty->isIntegerTy(16); }

/// Rewrites one instruction if it is one of the forms above; returns the
/// replacement, or null.
Value *rewrite(Instruction &I) {
  IRBuilder<> B(&I);
  Value *X;
  if (match(&I, m_Sub(m_Zero(), m_Value(X))) && isNarrow(I.getType()))
    return negateNarrow(B, X);
  auto *II = dyn_cast<IntrinsicInst>(&I);
  if (!II)
    return nullptr;
  switch (II->getIntrinsicID()) {
  case Intrinsic::abs: {
    Type *Ty = II->getType();
    if (!Ty->isIntegerTy(8) && !Ty->isIntegerTy(16) && !Ty->isIntegerTy(32) && !Ty->isIntegerTy(64))
      return nullptr;
    return absoluteValue(B, II->getArgOperand(0));
  }
  case Intrinsic::ssub_with_overflow:
  case Intrinsic::usub_with_overflow: {
    if (!match(II->getArgOperand(0), m_Zero()))
      return nullptr;
    X = II->getArgOperand(1);
    if (!isNarrow(X->getType()))
      return nullptr;
    unsigned Bits = X->getType()->getIntegerBitWidth();
    Value *Overflow = II->getIntrinsicID() == Intrinsic::ssub_with_overflow
                          ? B.CreateICmpEQ(X, B.getInt(APInt::getSignedMinValue(Bits)))
                          : B.CreateICmpNE(X, Constant::getNullValue(X->getType()));
    Value *Pair = PoisonValue::get(II->getType());
    Pair = B.CreateInsertValue(Pair, negateNarrow(B, X), 0);
    return B.CreateInsertValue(Pair, Overflow, 1);
  }
  case Intrinsic::ssub_sat: {
    if (!match(II->getArgOperand(0), m_Zero()))
      return nullptr;
    X = II->getArgOperand(1);
    if (!isNarrow(X->getType()))
      return nullptr;
    unsigned Bits = X->getType()->getIntegerBitWidth();
    Value *IsMin = B.CreateICmpEQ(X, B.getInt(APInt::getSignedMinValue(Bits)));
    return B.CreateSelect(IsMin, B.getInt(APInt::getSignedMaxValue(Bits)), negateNarrow(B, X));
  }
  default:
    return nullptr;
  }
}

} // namespace

PreservedAnalyses oxide::KeepNegationWrapPass::run(Module &M, ModuleAnalysisManager &) {
  SmallVector<Instruction *> Work;
  for (Function &F : M)
    for (Instruction &I : instructions(F))
      if (I.getType()->isIntegerTy() || isa<IntrinsicInst>(I))
        Work.push_back(&I);
  bool Changed = false;
  for (Instruction *I : Work) {
    Value *New = rewrite(*I);
    if (!New)
      continue;
    New->takeName(I);
    I->replaceAllUsesWith(New);
    I->eraseFromParent();
    Changed = true;
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

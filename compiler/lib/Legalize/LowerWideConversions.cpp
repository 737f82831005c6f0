//===- LowerWideConversions.cpp - Float <-> 128-bit integer conversions ---===//
//
// Rust's `x as i128` (and `as u128`) on a float is a *saturating* conversion,
// `llvm.fptosi.sat.i128` / `llvm.fptoui.sat.i128`, and `i128 as f32` is a
// plain `sitofp`. The NVPTX backend lowers conversions wider than 64 bits to
// compiler-rt calls (`__fixsfti`, `__floattisf`, …) that do not exist on the
// GPU, and aborts. Two steps make them integer code instead:
//   * this pass rewrites the saturating intrinsics wider than 64 bits into
//     compares, selects and a plain conversion: NaN → 0, below the range →
//     MIN, above → MAX, else `fptosi`/`fptoui`;
//   * the plain conversions are expanded by LLVM's ExpandFp pass in the
//     backend, which the device linker asks to expand every conversion wider
//     than 64 bits (Compile.cpp, `-expand-fp-convert-bits=64`).
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// The float nearest `Value` towards zero... rounded so that comparisons with
/// it decide the range exactly: 2^k is exact in every IEEE format whose
/// exponent reaches k, and +inf beyond (then only +inf compares greater).
Constant *powerOfTwo(Type *FloatTy, unsigned K, bool Negative) {
  APFloat F(FloatTy->getFltSemantics(), 1);
  F = scalbn(F, K, APFloat::rmNearestTiesToEven);
  if (Negative)
    F.changeSign();
  return ConstantFP::get(FloatTy, F);
}

void lowerSaturating(IntrinsicInst &II) {
  bool Signed = II.getIntrinsicID() == Intrinsic::fptosi_sat;
  auto *IntTy = cast<IntegerType>(II.getType());
  unsigned Bits = IntTy->getBitWidth();
  Value *X = II.getArgOperand(0);
  Type *FloatTy = X->getType();
  IRBuilder<> B(&II);

  APInt Max = Signed ? APInt::getSignedMaxValue(Bits) : APInt::getMaxValue(Bits);
  APInt Min = Signed ? APInt::getSignedMinValue(Bits) : APInt::getMinValue(Bits);
  // In range: [-2^(Bits-1), 2^(Bits-1)) signed, (-1, 2^Bits) unsigned.
  Value *TooBig = B.CreateFCmpOGE(X, powerOfTwo(FloatTy, Signed ? Bits - 1 : Bits, false));
  Value *TooSmall = Signed ? B.CreateFCmpOLT(X, powerOfTwo(FloatTy, Bits - 1, true))
                           : B.CreateFCmpOLE(X, ConstantFP::get(FloatTy, -1.0));
  Value *IsNaN = B.CreateFCmpUNO(X, X);
  // Convert a value that is always in range so the conversion itself is defined.
  Value *Safe = B.CreateSelect(B.CreateOr(B.CreateOr(TooBig, TooSmall), IsNaN),
                               ConstantFP::get(FloatTy, 0.0), X);
  Value *Converted = Signed ? B.CreateFPToSI(Safe, IntTy) : B.CreateFPToUI(Safe, IntTy);
  Value *R = B.CreateSelect(TooBig, ConstantInt::get(IntTy, Max), Converted);
  R = B.CreateSelect(TooSmall, ConstantInt::get(IntTy, Min), R);
  R = B.CreateSelect(IsNaN, ConstantInt::get(IntTy, 0), R);
  II.replaceAllUsesWith(R);
  II.eraseFromParent();
}

} // namespace

PreservedAnalyses LowerWideConversionsPass::run(Module &M, ModuleAnalysisManager &) {
  SmallVector<IntrinsicInst *> Wide;
  for (Function &F : M)
    for (Instruction &I : instructions(F))
      if (auto *II = dyn_cast<IntrinsicInst>(&I))
        if ((II->getIntrinsicID() == Intrinsic::fptosi_sat ||
             II->getIntrinsicID() == Intrinsic::fptoui_sat) &&
            II->getType()->isIntegerTy() && II->getType()->getIntegerBitWidth() > 64)
          Wide.push_back(II);
  for (IntrinsicInst *II : Wide)
    lowerSaturating(*II);
  return Wide.empty() ? PreservedAnalyses::all() : PreservedAnalyses::none();
}

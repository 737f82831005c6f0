//===- LowerSaturatingCasts.cpp - Rust's float `as` casts as one cvt -------===//
//
// Rust's `x as i32` on a float saturates: a value past the integer's range
// gives its MIN or MAX, and NaN gives 0. rustc emits it as
// `llvm.fptosi.sat.i32.f32` (`fptoui.sat` for unsigned), and the NVPTX
// backend expands that generically: a plain conversion, then a compare and
// a select for each bound, and one more for NaN when signed, which is four
// to six instructions for every cast where CUDA C++'s cast is one.
//
// PTX's own conversion already is Rust's: `cvt.rzi` from a float to an
// integer rounds toward zero, clamps to the destination's range and turns
// NaN into 0 (the PTX ISA, `cvt`: .sat is redundant for float-to-integer
// conversions). The NVVM intrinsics `llvm.nvvm.f2i.rz` and its kin are
// that conversion, and LLVM folds them with exactly these semantics. So
// this pass rewrites each scalar saturating cast from f32 or f64
//   * to a 32- or 64-bit integer → the NVVM conversion of that width and
//     signedness (one `cvt.rzi`);
//   * to an 8- or 16-bit integer → the 32-bit conversion, then an integer
//     clamp to the narrow range, then a truncation (the 32-bit result is
//     the exact value wherever the narrow one is not saturated, and
//     saturated past 32 bits in the same direction).
// Casts from half-precision floats, wider than 64 bits (LowerWideConversions
// made those integer code before O3) and on vectors are left alone.
//
// Runs after O3, which knows what `fptosi.sat` means (folds, ranges) and
// nothing about the NVVM intrinsics beyond their constants.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// The NVVM round-toward-zero conversion from `FloatTy` to a `Bits`-wide
/// integer (32 or 64), or not_intrinsic for any other pair.
Intrinsic::ID cvtRzi(Type *FloatTy, unsigned Bits, bool Signed) {
  bool Single = FloatTy->isFloatTy();
  if (!Single && !FloatTy->isDoubleTy())
    return Intrinsic::not_intrinsic;
  if (Bits == 32)
    return Single ? (Signed ? Intrinsic::nvvm_f2i_rz : Intrinsic::nvvm_f2ui_rz)
                  : (Signed ? Intrinsic::nvvm_d2i_rz : Intrinsic::nvvm_d2ui_rz);
  if (Bits == 64)
    return Single ? (Signed ? Intrinsic::nvvm_f2ll_rz : Intrinsic::nvvm_f2ull_rz)
                  : (Signed ? Intrinsic::nvvm_d2ll_rz : Intrinsic::nvvm_d2ull_rz);
  return Intrinsic::not_intrinsic;
}

/// The value of the saturating cast `II` through PTX's conversion, or null
/// when it is none this pass rewrites.
Value *throughCvt(IntrinsicInst &II) {
  bool Signed = II.getIntrinsicID() == Intrinsic::fptosi_sat;
  auto *IntTy = dyn_cast<IntegerType>(II.getType());
  if (!IntTy)
    return nullptr;
  unsigned Bits = IntTy->getBitWidth();
  if (Bits != 8 && Bits != 16 && Bits != 32 && Bits != 64)
    return nullptr;
  Value *X = II.getArgOperand(0);
  Intrinsic::ID Cvt = cvtRzi(X->getType(), Bits < 32 ? 32 : Bits, Signed);
  if (Cvt == Intrinsic::not_intrinsic)
    return nullptr;
  IRBuilder<> B(&II);
  Value *Converted = B.CreateIntrinsic(Cvt, {}, {X});
  if (Bits >= 32)
    return Converted;
  Type *I32 = B.getInt32Ty();
  if (Signed) {
    Value *Max = ConstantInt::get(I32, APInt::getSignedMaxValue(Bits).sext(32));
    Value *Min = ConstantInt::get(I32, APInt::getSignedMinValue(Bits).sext(32));
    Converted = B.CreateBinaryIntrinsic(Intrinsic::smax, B.CreateBinaryIntrinsic(Intrinsic::smin, Converted, Max), Min);
  } else {
    Value *Max = ConstantInt::get(I32, APInt::getMaxValue(Bits).zext(32));
    Converted = B.CreateBinaryIntrinsic(Intrinsic::umin, Converted, Max);
  }
  return B.CreateTrunc(Converted, IntTy);
}

} // namespace

PreservedAnalyses LowerSaturatingCastsPass::run(Module &M, ModuleAnalysisManager &) {
  SmallVector<IntrinsicInst *> Casts;
  for (Function &F : M)
    for (Instruction &I : instructions(F))
      if (auto *II = dyn_cast<IntrinsicInst>(&I))
        if (II->getIntrinsicID() == Intrinsic::fptosi_sat || II->getIntrinsicID() == Intrinsic::fptoui_sat)
          Casts.push_back(II);
  bool Changed = false;
  for (IntrinsicInst *II : Casts)
    if (Value *V = throughCvt(*II)) {
      V->takeName(II);
      II->replaceAllUsesWith(V);
      II->eraseFromParent();
      Changed = true;
    }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

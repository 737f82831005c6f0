//===- ExpandWideShifts.cpp - 128-bit shifts as in-range 64-bit shifts ----===//
//
// A shift of an i128 by an amount only known at run time (`x << s` on a
// u128, `rotate_left`, the funnel shifts O3 forms from them) is split by the
// NVPTX backend into 64-bit halves, and its expansion shifts a half by the
// whole amount, up to 127: correct for PTX's `shl.b64`, which clamps an
// amount past 63 to 64 and so yields 0. But the expansion builds the
// selection DAG's generic shift nodes, for which an amount past 63 is
// undefined, and the DAG combiner then folds as if it could not happen:
// `!(1u128 << s)` loses its low half's select and becomes a 64-bit rotate,
// so `s = 127` gives 0x7fff…ffff instead of all ones in the low word, on
// the GPU, in every profile (tests/fuzz found it; the conformance case
// regress/i128_not_shl_* keeps it).
//
// This pass does the split itself, in IR, before the backend sees the
// shift: with A = s mod 128 (Rust's masked amount; an amount of 128 or more
// is poison in IR, so any value may stand for it) and a = A mod 64,
//
//     x << A     lo' = A < 64 ? lo << a : 0
//                hi' = A < 64 ? hi << a | (lo >> 1) >> (63 - a) : lo << a
//     x >>u A    hi' = A < 64 ? hi >> a : 0
//                lo' = A < 64 ? lo >> a | (hi << 1) << (63 - a) : hi >> a
//     x >>s A    as >>u, the vacated half filled with hi >>s 63
//
// every 64-bit shift amount in 0..=63, so each is defined and the DAG's
// folds are sound on them. (The double shift `(lo >> 1) >> (63 - a)` is
// `lo >> (64 - a)` without the amount 64 at a = 0.) Funnel shifts of i128
// (`u128::rotate_left` is `fshl(x, x, s)`) become the two shifts they are
// made of, with C = s mod 128:
//
//     fshl(x, y, s) = x << C | (y >>u 1) >>u (127 - C)
//     fshr(x, y, s) = y >>u C | (x << 1) << (127 - C)
//
// which are then split the same way; C = 0 gives x (resp. y), as the
// funnel shift does. Shifts by a constant are left to the backend, whose
// expansion of those uses amounts in range. It runs after O3, whose
// InstCombine would join the halves again.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

bool isI128(Type *T) { return T->isIntegerTy(128); }

/// The 64-bit halves of an i128.
struct Halves {
  Value *Lo;
  Value *Hi;
};

Halves split(IRBuilder<> &B, Value *X) {
  Type *I64 = B.getInt64Ty();
  return {B.CreateTrunc(X, I64), B.CreateTrunc(B.CreateLShr(X, 64), I64)};
}

Value *join(IRBuilder<> &B, Halves H) {
  Type *I128 = B.getInt128Ty();
  return B.CreateOr(B.CreateZExt(H.Lo, I128), B.CreateShl(B.CreateZExt(H.Hi, I128), 64));
}

/// `X Op Amount` for an i128 `X`, with every 64-bit shift amount in range.
Value *expandShift(IRBuilder<> &B, Instruction::BinaryOps Op, Value *X, Value *Amount) {
  Type *I64 = B.getInt64Ty();
  Value *A = B.CreateAnd(B.CreateTrunc(Amount, I64), 127);
  Value *InHalf = B.CreateAnd(A, 63);
  Value *Spill = B.CreateXor(InHalf, 63); // 63 - a
  Value *Crosses = B.CreateICmpUGE(A, ConstantInt::get(I64, 64));
  Halves H = split(B, X);
  if (Op == Instruction::Shl) {
    Value *LoShifted = B.CreateShl(H.Lo, InHalf);
    Value *Carried = B.CreateLShr(B.CreateLShr(H.Lo, 1), Spill);
    Value *HiShifted = B.CreateOr(B.CreateShl(H.Hi, InHalf), Carried);
    return join(B, {B.CreateSelect(Crosses, ConstantInt::get(I64, 0), LoShifted),
                    B.CreateSelect(Crosses, LoShifted, HiShifted)});
  }
  bool Arithmetic = Op == Instruction::AShr;
  Value *HiShifted = Arithmetic ? B.CreateAShr(H.Hi, InHalf) : B.CreateLShr(H.Hi, InHalf);
  Value *Carried = B.CreateShl(B.CreateShl(H.Hi, 1), Spill);
  Value *LoShifted = B.CreateOr(B.CreateLShr(H.Lo, InHalf), Carried);
  Value *Vacated = Arithmetic ? B.CreateAShr(H.Hi, 63) : ConstantInt::get(I64, 0);
  return join(B, {B.CreateSelect(Crosses, HiShifted, LoShifted),
                  B.CreateSelect(Crosses, Vacated, HiShifted)});
}

/// A funnel shift of i128s as its two shifts, each split.
Value *expandFunnel(IRBuilder<> &B, bool Left, Value *X, Value *Y, Value *Amount) {
  Type *I128 = B.getInt128Ty();
  Value *C = B.CreateAnd(Amount, 127);
  Value *Rest = B.CreateXor(C, 127); // 127 - C
  if (Left)
    return B.CreateOr(expandShift(B, Instruction::Shl, X, C),
                      expandShift(B, Instruction::LShr, B.CreateLShr(Y, ConstantInt::get(I128, 1)), Rest));
  return B.CreateOr(expandShift(B, Instruction::LShr, Y, C),
                    expandShift(B, Instruction::Shl, B.CreateShl(X, ConstantInt::get(I128, 1)), Rest));
}

} // namespace

PreservedAnalyses ExpandWideShiftsPass::run(Module &M, ModuleAnalysisManager &) {
  SmallVector<Instruction *> Wide;
  for (Function &F : M)
    for (Instruction &I : instructions(F)) {
      if (!isI128(I.getType()))
        continue;
      if (I.isShift() && !isa<Constant>(I.getOperand(1)))
        Wide.push_back(&I);
      else if (auto *II = dyn_cast<IntrinsicInst>(&I))
        if ((II->getIntrinsicID() == Intrinsic::fshl || II->getIntrinsicID() == Intrinsic::fshr) &&
            !isa<Constant>(II->getArgOperand(2)))
          Wide.push_back(&I);
    }
  for (Instruction *I : Wide) {
    IRBuilder<> B(I);
    Value *R;
    if (auto *II = dyn_cast<IntrinsicInst>(I))
      R = expandFunnel(B, II->getIntrinsicID() == Intrinsic::fshl, II->getArgOperand(0),
                       II->getArgOperand(1), II->getArgOperand(2));
    else
      R = expandShift(B, static_cast<Instruction::BinaryOps>(I->getOpcode()), I->getOperand(0),
                      I->getOperand(1));
    R->takeName(I);
    I->replaceAllUsesWith(R);
    I->eraseFromParent();
  }
  return Wide.empty() ? PreservedAnalyses::all() : PreservedAnalyses::none();
}

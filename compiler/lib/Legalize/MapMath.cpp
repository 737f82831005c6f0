//===- MapMath.cpp - Host math → libdevice --------------------------------===//
//
// `f32::sin` and friends reach the bitcode as LLVM intrinsics the NVPTX
// backend cannot select (`llvm.sin.f32`) or as C math library calls
// (`cbrtf`). libdevice implements each of them with the accuracy CUDA C++
// gets; this pass points every such call at its `__nv_*` twin
// (MathFunctions.def). The linker then links libdevice, keeping only what is
// used. The `frem` instruction (Rust's `%` on floats) goes to `__nv_fmodf` /
// `__nv_fmod` too: NVPTX expands it with a division that is not exact, where
// Rust, like C's fmod, defines the exact remainder.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {
struct MathMapping {
  StringRef Host;
  StringRef LibDevice;
};
const MathMapping MathTable[] = {
#define OXIDE_MATH(HOST, LIBDEVICE) {HOST, LIBDEVICE},
#include "oxide/MathFunctions.def"
#undef OXIDE_MATH
};
} // namespace

namespace {
/// `a % b` on floats → `__nv_fmodf(a, b)` / `__nv_fmod(a, b)`.
bool mapFloatRemainders(Module &M) {
  SmallVector<BinaryOperator *> Rems;
  for (Function &F : M)
    for (Instruction &I : instructions(F))
      if (I.getOpcode() == Instruction::FRem && !I.getType()->isVectorTy() &&
          (I.getType()->isFloatTy() || I.getType()->isDoubleTy()))
        Rems.push_back(cast<BinaryOperator>(&I));
  for (BinaryOperator *Rem : Rems) {
    Type *Ty = Rem->getType();
    FunctionCallee Fmod = M.getOrInsertFunction(Ty->isFloatTy() ? "__nv_fmodf" : "__nv_fmod",
                                                FunctionType::get(Ty, {Ty, Ty}, false));
    IRBuilder<> B(Rem);
    CallInst *Call = B.CreateCall(Fmod, {Rem->getOperand(0), Rem->getOperand(1)});
    Call->setDebugLoc(Rem->getDebugLoc());
    Rem->replaceAllUsesWith(Call);
    Rem->eraseFromParent();
  }
  return !Rems.empty();
}
} // namespace

PreservedAnalyses MapMathPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = mapFloatRemainders(M);
  for (const MathMapping &Map : MathTable) {
    Function *Host = M.getFunction(Map.Host);
    if (!Host || !Host->isDeclaration())
      continue;
    FunctionCallee Device = M.getOrInsertFunction(Map.LibDevice, Host->getFunctionType());
    Host->replaceAllUsesWith(Device.getCallee());
    Host->eraseFromParent();
    Changed = true;
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

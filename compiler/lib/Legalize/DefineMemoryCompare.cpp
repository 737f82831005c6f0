//===- DefineMemoryCompare.cpp - memcmp and bcmp on the GPU ----------------===//
//
// core compares slices of bytes and strings with the C library's `memcmp`
// (`[u8] == [u8]`, `str == str`, `Ord for [u8]`, through the
// `compare_bytes` intrinsic) and LLVM's `bcmp` (the substring searcher of
// `str::find`). Neither exists on the GPU: no C library, and libdevice has
// no such function. This pass gives each one the module declares a device
// body with C's meaning, so core's comparisons compile in kernels:
//   * `memcmp(a, b, n)`: 0 if the first n bytes are equal, else the
//     difference of the first bytes that differ, as unsigned chars (C asks
//     only for its sign; Rust uses only the sign);
//   * `bcmp(a, b, n)`: 0 if equal, 1 if not.
// Both read the bytes in order, one at a time, and stop at the first that
// differs, so they read no byte C's would not. A declaration of another
// shape (not `i32 (ptr, ptr, size)`) is left alone for RejectUnsupported.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// Whether F is `i32 name(ptr, ptr, iN)`.
bool hasCompareShape(const Function &F) {
  FunctionType *T = F.getFunctionType();
  return T->getReturnType()->isIntegerTy(32) && T->getNumParams() == 3 && !T->isVarArg() &&
         T->getParamType(0)->isPointerTy() && T->getParamType(1)->isPointerTy() &&
         T->getParamType(2)->isIntegerTy();
}

/// The body: a loop over the bytes that returns at the first difference.
void defineCompare(Function &F, bool Ordered) {
  LLVMContext &Ctx = F.getContext();
  BasicBlock *Entry = BasicBlock::Create(Ctx, "entry", &F);
  BasicBlock *Loop = BasicBlock::Create(Ctx, "byte", &F);
  BasicBlock *Next = BasicBlock::Create(Ctx, "next", &F);
  BasicBlock *Differ = BasicBlock::Create(Ctx, "differ", &F);
  BasicBlock *Equal = BasicBlock::Create(Ctx, "equal", &F);
  Value *A = F.getArg(0), *B = F.getArg(1), *N = F.getArg(2);
  Type *SizeTy = N->getType();

  IRBuilder<> IR(Entry);
  IR.CreateCondBr(IR.CreateIsNull(N), Equal, Loop);

  IR.SetInsertPoint(Loop);
  PHINode *I = IR.CreatePHI(SizeTy, 2, "i");
  I->addIncoming(ConstantInt::get(SizeTy, 0), Entry);
  Value *X = IR.CreateLoad(IR.getInt8Ty(), IR.CreateInBoundsGEP(IR.getInt8Ty(), A, I), "a");
  Value *Y = IR.CreateLoad(IR.getInt8Ty(), IR.CreateInBoundsGEP(IR.getInt8Ty(), B, I), "b");
  IR.CreateCondBr(IR.CreateICmpNE(X, Y), Differ, Next);

  IR.SetInsertPoint(Next);
  Value *After = IR.CreateNUWAdd(I, ConstantInt::get(SizeTy, 1));
  I->addIncoming(After, Next);
  IR.CreateCondBr(IR.CreateICmpULT(After, N), Loop, Equal);

  IR.SetInsertPoint(Differ);
  IR.CreateRet(Ordered ? IR.CreateSub(IR.CreateZExt(X, IR.getInt32Ty()), IR.CreateZExt(Y, IR.getInt32Ty()))
                       : IR.getInt32(1));

  IR.SetInsertPoint(Equal);
  IR.CreateRet(IR.getInt32(0));
  F.setLinkage(GlobalValue::InternalLinkage);
}

} // namespace

PreservedAnalyses DefineMemoryComparePass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (auto [Name, Ordered] : {std::pair{"memcmp", true}, std::pair{"bcmp", false}}) {
    Function *F = M.getFunction(Name);
    if (!F || !F->isDeclaration() || !hasCompareShape(*F))
      continue;
    defineCompare(*F, Ordered);
    Changed = true;
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

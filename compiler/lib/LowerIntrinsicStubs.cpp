//===- LowerIntrinsicStubs.cpp - __oxide_stub_* → NVVM intrinsics ---------===//
//
// `cuda-device` reaches the hardware through functions named
// `__oxide_stub_<name>` (docs/ABI.md §1). Their host bodies only abort. This
// pass rewrites every call to a stub into a call to the NVVM intrinsic that
// Stubs.def names for it, appending the table's immediate operands (for
// example the barrier id 0 of `barrier.sync 0`), marks the calls of
// `Convergent` entries convergent so no optimisation moves them across
// control flow, and then deletes the stubs.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

enum class StubKind { Intrinsic, Convergent, Special };

struct StubEntry {
  StringRef Name;
  StringRef Signature;
  StubKind Kind;
  StringRef IntrinsicName;
  StringRef Immediates;
};

const StubEntry StubTable[] = {
#define OXIDE_STUB(NAME, SIG, KIND, INTRINSIC, IMMEDIATES)                     \
  {#NAME, SIG, StubKind::KIND, INTRINSIC, IMMEDIATES},
#include "oxide/Stubs.def"
#undef OXIDE_STUB
};

class StubLowering {
public:
  StubLowering(Module &M, DiagnosticSink &Diags) : M(M), Diags(Diags) {}

  bool lower(const StubEntry &Stub) {
    Function *F = M.getFunction(("__oxide_stub_" + Stub.Name).str());
    if (!F)
      return false;
    if (Stub.Kind == StubKind::Special) {
      // Consumed by its own pass; any call left over carries no meaning.
      eraseCalls(*F);
    } else if (!rewriteCalls(*F, Stub)) {
      return true;
    }
    if (F->use_empty())
      F->eraseFromParent();
    else
      F->deleteBody(); // still referenced (e.g. its address taken): keep a declaration
    return true;
  }

private:
  Module &M;
  DiagnosticSink &Diags;

  static SmallVector<CallInst *> callsTo(Function &F) {
    SmallVector<CallInst *> Calls;
    for (User *U : F.users())
      if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == &F)
        Calls.push_back(C);
    return Calls;
  }

  void eraseCalls(Function &F) {
    for (CallInst *C : callsTo(F))
      C->eraseFromParent();
  }

  bool rewriteCalls(Function &F, const StubEntry &Stub) {
    Intrinsic::ID Id = Intrinsic::lookupIntrinsicID(Stub.IntrinsicName);
    if (Id == Intrinsic::not_intrinsic) {
      Diags.error({("stub table names an unknown intrinsic `" + Stub.IntrinsicName +
                    "` for `" + Stub.Name + "`").str(),
                   "",
                   {"compiler/include/oxide/Stubs.def must name an LLVM 22 intrinsic"}});
      return false;
    }
    Function *Target = Intrinsic::getOrInsertDeclaration(&M, Id);
    SmallVector<StringRef> Imms;
    Stub.Immediates.split(Imms, ',', -1, false);
    FunctionType *TargetTy = Target->getFunctionType();
    if (TargetTy->getNumParams() != F.arg_size() + Imms.size() ||
        TargetTy->getReturnType() != F.getReturnType()) {
      Diags.error({("stub `" + Stub.Name + "` does not match intrinsic `" +
                    Stub.IntrinsicName + "`").str(),
                   "",
                   {"check its signature and immediates in Stubs.def"}});
      return false;
    }
    for (CallInst *C : callsTo(F)) {
      IRBuilder<> B(C);
      SmallVector<Value *> Args(C->args());
      for (StringRef Imm : Imms)
        Args.push_back(B.getInt32(std::stoi(Imm.trim().str())));
      CallInst *New = B.CreateCall(Target, Args);
      if (Stub.Kind == StubKind::Convergent)
        New->addFnAttr(Attribute::Convergent);
      New->setDebugLoc(C->getDebugLoc());
      if (!C->getType()->isVoidTy())
        C->replaceAllUsesWith(New);
      C->eraseFromParent();
    }
    return true;
  }
};

} // namespace

PreservedAnalyses LowerIntrinsicStubsPass::run(Module &M, ModuleAnalysisManager &) {
  StubLowering Lowering(M, Diags);
  bool Changed = false;
  for (const StubEntry &Stub : StubTable)
    Changed |= Lowering.lower(Stub);
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

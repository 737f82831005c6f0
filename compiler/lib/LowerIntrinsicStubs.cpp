//===- LowerIntrinsicStubs.cpp - __oxide_stub_* → NVVM intrinsics ---------===//
//
// `cuda-device` reaches the hardware through functions named
// `__oxide_stub_<name>` (docs/ABI.md §1). Their host bodies only abort. This
// pass rewrites every call to a stub into a call to the NVVM intrinsic that
// Stubs.def names for it, appending the table's immediate operands (for
// example the barrier id 0 of `barrier.sync 0`), marks the calls of
// `Convergent` entries convergent so no optimisation moves them across
// control flow, replaces calls of `Identity` entries (host-emulation hooks)
// with their first argument, and then deletes the stubs.
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

enum class StubKind { Intrinsic, Convergent, ConvergentField1, Function, Special, Identity };

struct StubEntry {
  StringRef Name;
  StringRef Signature;
  StubKind Kind;
  StringRef IntrinsicName;
  StringRef Immediates;
  unsigned MinSM;
};

const StubEntry StubTable[] = {
#define OXIDE_STUB(NAME, SIG, KIND, INTRINSIC, IMMEDIATES, MIN_SM)             \
  {#NAME, SIG, StubKind::KIND, INTRINSIC, IMMEDIATES, MIN_SM},
#include "oxide/Stubs.def"
#undef OXIDE_STUB
};

/// Where to point the user: the stub call itself, or, when it sits in
/// cuda-device's own wrapper (`warp::elect_one`), the wrapper's caller.
std::string userLocation(const CallInst &C) {
  SourceLoc Loc = sourceLocation(&C);
  if (Loc.empty() || Loc.File.find("cuda-device/src/") == std::string::npos)
    return Loc.empty() ? "" : Loc.str();
  for (const User *U : C.getFunction()->users())
    if (const auto *Caller = dyn_cast<CallInst>(U))
      if (SourceLoc L = sourceLocation(Caller); !L.empty())
        return L.str();
  return Loc.str();
}

class StubLowering {
public:
  StubLowering(Module &M, DiagnosticSink &Diags, unsigned TargetSM)
      : M(M), Diags(Diags), TargetSM(TargetSM) {}

  bool lower(const StubEntry &Stub) {
    Function *F = M.getFunction(("__oxide_stub_" + Stub.Name).str());
    if (!F)
      return false;
    if (Stub.Kind == StubKind::Special) {
      // Consumed by its own pass; any call left over carries no meaning.
      eraseCalls(*F);
    } else if (Stub.Kind == StubKind::Identity) {
      // Host-emulation hooks that are the identity on the device.
      forwardFirstArgument(*F);
    } else if (!checkArchitecture(*F, Stub)) {
      // Calls already removed; fall through to delete the stub.
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
  unsigned TargetSM;

  /// A stub whose instruction the target lacks is the user's error (ptxas or
  /// the backend would otherwise fail on it without naming the Rust code).
  bool checkArchitecture(Function &F, const StubEntry &Stub) {
    if (TargetSM == 0 || TargetSM >= Stub.MinSM)
      return true;
    bool Reported = false;
    for (CallInst *C : callsTo(F)) {
      if (!Reported)
        Diags.error({("`" + Stub.Name + "` needs sm_" + Twine(Stub.MinSM) +
                      " or newer, but the kernels are being built for sm_" + Twine(TargetSM))
                         .str(),
                     userLocation(*C),
                     {("build for a newer GPU: `cargo oxide build --arch sm_" + Twine(Stub.MinSM) +
                       "` (or set OXIDE_ARCH)")
                          .str()}});
      Reported = true;
      // The build fails anyway; drop the call so later passes report nothing
      // about the stub's host body.
      C->replaceAllUsesWith(PoisonValue::get(C->getType()));
      C->eraseFromParent();
    }
    return !Reported;
  }

  static SmallVector<CallInst *> callsTo(Function &F) {
    SmallVector<CallInst *> Calls;
    for (User *U : F.users())
      if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == &F)
        Calls.push_back(C);
    return Calls;
  }

  /// The call's arguments with the table's immediates: after them, or in
  /// place of `$` when the immediates name where the arguments go.
  static SmallVector<Value *> operands(IRBuilder<> &B, CallInst &C, ArrayRef<StringRef> Imms) {
    SmallVector<Value *> Args;
    bool Placed = false;
    for (StringRef Imm : Imms) {
      if (Imm.trim() == "$") {
        Args.append(C.arg_begin(), C.arg_end());
        Placed = true;
      } else {
        Args.push_back(B.getInt32(std::stoi(Imm.trim().str())));
      }
    }
    if (!Placed)
      Args.insert(Args.begin(), C.arg_begin(), C.arg_end());
    return Args;
  }

  void forwardFirstArgument(Function &F) {
    for (CallInst *C : callsTo(F)) {
      C->replaceAllUsesWith(C->getArgOperand(0));
      C->eraseFromParent();
    }
  }

  void eraseCalls(Function &F) {
    for (CallInst *C : callsTo(F))
      C->eraseFromParent();
  }

  /// Points the calls at a device function of the stub's signature.
  bool redirectCalls(Function &F, const StubEntry &Stub) {
    FunctionCallee Target = M.getOrInsertFunction(Stub.IntrinsicName, F.getFunctionType());
    for (CallInst *C : callsTo(F))
      C->setCalledFunction(Target);
    return true;
  }

  bool rewriteCalls(Function &F, const StubEntry &Stub) {
    if (Stub.Kind == StubKind::Function)
      return redirectCalls(F, Stub);
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
    size_t Constants = llvm::count_if(Imms, [](StringRef I) { return I.trim() != "$"; });
    FunctionType *TargetTy = Target->getFunctionType();
    Type *Result = TargetTy->getReturnType();
    if (Stub.Kind == StubKind::ConvergentField1)
      Result = cast<StructType>(Result)->getElementType(1);
    if (TargetTy->getNumParams() != F.arg_size() + Constants || Result != F.getReturnType()) {
      Diags.error({("stub `" + Stub.Name + "` does not match intrinsic `" +
                    Stub.IntrinsicName + "`").str(),
                   "",
                   {"check its signature and immediates in Stubs.def"}});
      return false;
    }
    for (CallInst *C : callsTo(F)) {
      IRBuilder<> B(C);
      SmallVector<Value *> Args = operands(B, *C, Imms);
      CallInst *New = B.CreateCall(Target, Args);
      if (Stub.Kind != StubKind::Intrinsic)
        New->addFnAttr(Attribute::Convergent);
      New->setDebugLoc(C->getDebugLoc());
      Value *Replacement = New;
      if (Stub.Kind == StubKind::ConvergentField1)
        Replacement = B.CreateExtractValue(New, 1);
      if (!C->getType()->isVoidTy())
        C->replaceAllUsesWith(Replacement);
      C->eraseFromParent();
    }
    return true;
  }
};

} // namespace

PreservedAnalyses LowerIntrinsicStubsPass::run(Module &M, ModuleAnalysisManager &) {
  StubLowering Lowering(M, Diags, TargetSM);
  bool Changed = false;
  for (const StubEntry &Stub : StubTable)
    Changed |= Lowering.lower(Stub);
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

unsigned oxide::smNumber(StringRef Arch) {
  unsigned N = 0;
  if (!Arch.consume_front("sm_"))
    return 0;
  Arch.consume_back("a");
  return Arch.getAsInteger(10, N) ? 0 : N;
}

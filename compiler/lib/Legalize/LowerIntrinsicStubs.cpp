//===- LowerIntrinsicStubs.cpp - __oxide_stub_* → NVVM intrinsics ---------===//
//
// `cuda-device` reaches the hardware through functions named
// `__oxide_stub_<name>` (docs/ABI.md §1). Their host bodies only abort. This
// pass rewrites every call to a stub into a call to the NVVM intrinsic that
// Stubs.def names for it, appending the table's immediate operands (for
// example the barrier id 0 of `barrier.sync 0`), marks the calls of
// `Convergent` entries convergent so no optimisation moves them across
// control flow, replaces calls of `Identity` entries (host-emulation hooks)
// with their first argument, and then deletes the stubs. `InlineAsm` entries
// become a call of the table's PTX template with its constraint string
// instead, for instructions LLVM 22 has no intrinsic for (wgmma, …);
// `ConvergentAsm` entries the same for warp collectives, convergent but
// reaching only inaccessible memory, like the vote intrinsics.
// `PureAsm` entries become the same kind of call without side effects and
// not convergent, reading and writing no memory: arithmetic LLVM 22 can only
// reach through `half`/`bfloat` types that Rust's stable toolchain cannot
// spell (f16/bf16 add, fma, cvt), which O3 may then merge, hoist or delete
// like any other arithmetic.
// `Marker` entries keep their calls: the stub becomes a declaration that
// reads and writes no memory and is not convergent (MarkerAttr), so O3 may
// move, merge or delete its calls like arithmetic, and a pass after O3 reads
// what the surviving calls say before replacing each by its first argument.
// `Target` entries (`arch::compute_capability()`, `arch::has`) become the
// target's compute capability or feature bits, constants, so O3 deletes the
// code behind a test of them that the target fails, as nvcc's preprocessor
// does with `__CUDA_ARCH__`. That is why a stub the target lacks (Stubs.def's
// MIN_SM) is not an error here: its calls go to a placeholder that carries
// the error, and RejectUnavailableStubs reports those O3 left, that is,
// those the kernel can reach on this target.
//
// Rust has only generic pointers and no multi-value results, so an intrinsic
// may differ from its stub in two ways: a pointer operand of a specific
// address space (shared, global) receives the stub's generic pointer through
// an addrspacecast (InferAddressSpaces folds it away after O3), a pointer
// result is cast back to generic, and a result struct of N integers (ldmatrix
// .x2/.x4) is packed into the stub's wider integer, field 0 in the low bits.
//===----------------------------------------------------------------------===//
#include "DeferUnavailable.h"
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/StringSaver.h"
#include <vector>

using namespace llvm;
using namespace oxide;

namespace {

enum class StubKind {
  Intrinsic,
  Convergent,
  ConvergentField1,
  Function,
  Special,
  InlineAsm,
  ConvergentAsm,
  PureAsm,
  Identity,
  Marker,
  Target
};

struct StubEntry {
  StringRef Name;
  StringRef Signature;
  StubKind Kind;
  StringRef IntrinsicName;
  StringRef Immediates;
  StringRef MinSM; // "80", or a feature of Targets.def ("setmaxnreg")
};

/// Every stub of Stubs.def in its order, a family row expanded in place
/// into its members, PREFIX<N>SUFFIX for N = FIRST, FIRST + STEP, … LAST.
ArrayRef<StubEntry> stubTable() {
  static const std::vector<StubEntry> Table = [] {
    static BumpPtrAllocator NameStorage;
    StringSaver Names(NameStorage);
    std::vector<StubEntry> T;
#define OXIDE_STUB(NAME, SIG, KIND, INTRINSIC, IMMEDIATES, MIN_SM)                                 \
  T.push_back({#NAME, SIG, StubKind::KIND, INTRINSIC, IMMEDIATES, #MIN_SM});
#define OXIDE_STUB_FAMILY(PREFIX, FIRST, LAST, STEP, SUFFIX, SIG, KIND, INTRINSIC, IMMEDIATES,     \
                          MIN_SM)                                                                  \
  for (unsigned N = FIRST; N <= LAST; N += STEP)                                                   \
    T.push_back({Names.save(#PREFIX + Twine(N) + #SUFFIX), SIG, StubKind::KIND, INTRINSIC,         \
                 IMMEDIATES, #MIN_SM});
#include "oxide/Stubs.def"
#undef OXIDE_STUB
#undef OXIDE_STUB_FAMILY
    return T;
  }();
  return Table;
}

/// Whether L is in cuda-device's own sources (its wrappers around the stubs).
/// The file name is relative to the crate's directory when cuda-device is a
/// path dependency outside the workspace, so the directory counts too.
bool inCudaDevice(const DILocation *L) {
  std::string Path = (L->getDirectory() + "/" + L->getFilename()).str();
  return Path.find("cuda-device/src/") != std::string::npos;
}

SourceLoc locationOf(const DILocation *L) {
  return {L->getFilename().str(), L->getLine(), L->getColumn()};
}

/// Where to point the user: the stub call itself, or, when it sits in
/// cuda-device's own wrapper (`warp::elect_one`), the wrapper's caller (the
/// frame it was inlined into, or a call of the wrapper).
std::string userLocation(const CallInst &C) {
  const DILocation *L = C.getDebugLoc().get();
  if (!L)
    return "";
  while (inCudaDevice(L) && L->getInlinedAt())
    L = L->getInlinedAt();
  if (!inCudaDevice(L))
    return locationOf(L).str();
  for (const User *U : C.getFunction()->users())
    if (const auto *Caller = dyn_cast<CallInst>(U))
      if (const DILocation *CL = Caller->getDebugLoc().get())
        return locationOf(CL).str();
  return locationOf(L).str();
}

class StubLowering {
public:
  StubLowering(Module &M, DiagnosticSink &Diags, const GpuTarget *Target)
      : M(M), Diags(Diags), Target(Target) {}

  bool lower(const StubEntry &Stub) {
    Function *F = M.getFunction(stubSymbol(Stub.Name));
    if (!F)
      return false;
    if (Stub.Kind == StubKind::Special) {
      // Consumed by its own pass; any call left over carries no meaning.
      eraseCalls(*F);
    } else if (Stub.Kind == StubKind::Identity) {
      // Host-emulation hooks that are the identity on the device.
      forwardFirstArgument(*F);
    } else if (Stub.Kind == StubKind::Marker) {
      // Read after O3; until then a pure declaration.
      keepAsMarker(*F);
      return true;
    } else if (Stub.Kind == StubKind::Target) {
      if (!foldTargetQuery(*F, Stub))
        return true;
    } else if (!checkArchitecture(*F, Stub)) {
      // Calls redirected to the error's placeholder; delete the stub.
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
  const GpuTarget *Target;

  /// A stub whose instruction the target lacks is the user's error (ptxas or
  /// the backend would otherwise fail on it without naming the Rust code)
  /// if the optimised kernel still calls it: false, and the calls deferred
  /// to RejectUnavailableStubs (deferUnavailable). MIN_SM is a compute
  /// capability (every target from it on has the instruction) or a feature
  /// of Targets.def (setmaxnreg: only the targets that list it,
  /// architecture- or family-specific ones).
  bool checkArchitecture(Function &F, const StubEntry &Stub) {
    if (!Target)
      return true;
    std::string Message, Fix, Test;
    std::string Building = ", but the kernels are being built for " + std::string(Target->Name);
    unsigned MinSM = 0;
    if (!Stub.MinSM.getAsInteger(10, MinSM)) {
      if (Target->SM >= MinSM)
        return true;
      Message = ("`" + Stub.Name + "` needs sm_" + Stub.MinSM + " or newer" + Building).str();
      Fix = ("build for a newer GPU: `cargo oxide build --arch sm_" + Stub.MinSM +
             "` (or `arch` under [package.metadata.oxide], or OXIDE_ARCH)")
                .str();
      Test = ("arch::compute_capability() >= " + Stub.MinSM).str();
    } else {
      const TargetFeatureInfo *Needed = findTargetFeature(Stub.MinSM);
      if (!Needed)
        report_fatal_error("Stubs.def: `" + Stub.Name + "` names `" + Stub.MinSM +
                           "`, which is neither a number nor a feature of Targets.def");
      if (Target->has(Needed->Bit))
        return true;
      const GpuTarget *Suggested = suggestTargetWith(Needed->Bit, Target);
      Test = "arch::has(Feature::" + std::string(Needed->Id) + ")";
      Message = ("`" + Stub.Name + "` needs a target with " + Stub.MinSM + " (" +
                 targetNamesWith(Needed->Bit) + ")" + Building)
                    .str();
      Fix = "build for one: `cargo oxide build --arch " + std::string(Suggested->Name) +
            "` (or `arch` under [package.metadata.oxide], or OXIDE_ARCH)" +
            (Suggested->Kind == TargetKind::Specific
                 ? "; its PTX runs only on that GPU"
                 : Suggested->Kind == TargetKind::Family ? "; its PTX runs only on that GPU family"
                                                         : "");
    }
    deferUnavailable(F, Stub.Name, Message, Fix, Test, userLocation);
    return false;
  }

  /// Replaces every call of a `Target` stub with the fact of the target its
  /// INTRINSIC column names: `sm`, the compute capability (Targets.def's
  /// SM: 90 for sm_90 and sm_90a); `features`, the bits of its features
  /// (TargetFeature: the rows of OXIDE_TARGET_FEATURE in order).
  bool foldTargetQuery(Function &F, const StubEntry &Stub) {
    if (!Target) {
      Diags.error({("`" + Stub.Name + "` asks for the target, but no target was given").str(),
                   "",
                   {"give the device linker a target (`--arch`)"}});
      return false;
    }
    uint64_t Fact;
    if (Stub.IntrinsicName == "sm")
      Fact = Target->SM;
    else if (Stub.IntrinsicName == "features")
      Fact = Target->Features;
    else
      report_fatal_error("Stubs.def: the Target stub `" + Stub.Name + "` asks for `" +
                         Stub.IntrinsicName + "`, which is neither `sm` nor `features`");
    for (CallInst *C : callsTo(F)) {
      C->replaceAllUsesWith(ConstantInt::get(C->getType(), Fact));
      C->eraseFromParent();
    }
    return true;
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

  /// The types of operands() for calls of F.
  static SmallVector<Type *> operandTypes(Function &F, ArrayRef<StringRef> Imms) {
    SmallVector<Type *> Types;
    Type *I32 = Type::getInt32Ty(F.getContext());
    bool Placed = false;
    for (StringRef Imm : Imms) {
      if (Imm.trim() == "$") {
        Types.append(F.getFunctionType()->param_begin(), F.getFunctionType()->param_end());
        Placed = true;
      } else {
        Types.push_back(I32);
      }
    }
    if (!Placed)
      Types.insert(Types.begin(), F.getFunctionType()->param_begin(),
                   F.getFunctionType()->param_end());
    return Types;
  }

  void forwardFirstArgument(Function &F) {
    for (CallInst *C : callsTo(F)) {
      C->replaceAllUsesWith(C->getArgOperand(0));
      C->eraseFromParent();
    }
  }

  /// The stub as a declaration its calls keep through O3: no memory access,
  /// no side effect, no convergence (Retarget leaves MarkerAttr functions
  /// alone), so it costs the optimiser nothing but keeping its operands.
  static void keepAsMarker(Function &F) {
    F.deleteBody();
    F.setAttributes(AttributeList());
    F.setDoesNotAccessMemory();
    F.setDoesNotThrow();
    F.setWillReturn();
    F.setNoSync();
    F.addFnAttr(Attribute::NoFree);
    F.addFnAttr(Attribute::Speculatable);
    F.addFnAttr(MarkerAttr);
    for (CallInst *C : callsTo(F))
      C->setAttributes(AttributeList());
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

  /// Replaces the calls with the entry's PTX template. The stub's own type
  /// is the asm's type: its arguments are the inputs, its result the output.
  /// A `PureAsm` template is a function of its operands alone: no side
  /// effect, no memory, no convergence, so O3 treats it as arithmetic. A
  /// `ConvergentAsm` template is a warp collective: convergent, touching
  /// only memory no other code can name (as the vote intrinsics are), so
  /// loads and stores move across it but it is never merged or deleted.
  bool emitInlineAsm(Function &F, const StubEntry &Stub) {
    bool Pure = Stub.Kind == StubKind::PureAsm;
    bool Collective = Stub.Kind == StubKind::ConvergentAsm;
    FunctionType *Ty = F.getFunctionType();
    if (Error E = InlineAsm::verify(Ty, Stub.Immediates)) {
      Diags.error({("stub `" + Stub.Name + "` has constraints \"" + Stub.Immediates +
                    "\" that do not fit its signature: " + toString(std::move(E)))
                       .str(),
                   "",
                   {"fix its constraint string in Stubs.def"}});
      return false;
    }
    InlineAsm *Asm = InlineAsm::get(Ty, Stub.IntrinsicName, Stub.Immediates,
                                    /*hasSideEffects=*/!Pure && !Collective);
    for (CallInst *C : callsTo(F)) {
      IRBuilder<> B(C);
      SmallVector<Value *> Args(C->arg_begin(), C->arg_end());
      CallInst *New = B.CreateCall(Ty, Asm, Args);
      if (Pure) {
        New->setDoesNotAccessMemory();
        New->setDoesNotThrow();
        New->addFnAttr(Attribute::WillReturn);
      } else if (Collective) {
        New->setOnlyAccessesInaccessibleMemory();
        New->setDoesNotThrow();
        New->addFnAttr(Attribute::Convergent);
      } else {
        New->addFnAttr(Attribute::Convergent);
      }
      New->setMetadata(StubAsmMetadata, MDNode::get(M.getContext(), {}));
      New->setDebugLoc(C->getDebugLoc());
      if (!C->getType()->isVoidTy())
        C->replaceAllUsesWith(New);
      C->eraseFromParent();
    }
    return true;
  }

  /// The declaration of intrinsic Id. An overloaded one (ldmatrix, stmatrix
  /// are overloaded on their pointer) must be overloaded on pointers only,
  /// and the table's name carries the address space as LLVM mangles it
  /// (`….b16.p3`: shared); nullptr otherwise.
  Function *declareIntrinsic(Intrinsic::ID Id, StringRef Name) {
    if (!Intrinsic::isOverloaded(Id))
      return Intrinsic::getOrInsertDeclaration(&M, Id);
    unsigned AddrSpace = 0;
    size_t Suffix = Name.rfind(".p");
    if (Suffix == StringRef::npos || Name.substr(Suffix + 2).getAsInteger(10, AddrSpace))
      return nullptr;
    SmallVector<Intrinsic::IITDescriptor> Table;
    Intrinsic::getIntrinsicInfoTableEntries(Id, Table);
    SmallVector<Type *> Overloads;
    for (const Intrinsic::IITDescriptor &D : Table) {
      if (D.Kind != Intrinsic::IITDescriptor::Argument)
        continue;
      if (D.getArgumentKind() != Intrinsic::IITDescriptor::AK_AnyPointer)
        return nullptr;
      Overloads.push_back(PointerType::get(M.getContext(), AddrSpace));
    }
    return Intrinsic::getOrInsertDeclaration(&M, Id, Overloads);
  }

  /// Whether a stub operand of type From can be passed to an intrinsic
  /// parameter of type To (equal, or pointers of different address spaces).
  static bool argumentFits(Type *From, Type *To) {
    return From == To || (From->isPointerTy() && To->isPointerTy());
  }

  /// Whether the intrinsic's result From can become the stub's result To:
  /// equal, pointers, or N integer fields packed into one integer at least
  /// as wide (zero-extended above the last field).
  static bool resultFits(Type *From, Type *To) {
    if (argumentFits(From, To))
      return true;
    auto *Fields = dyn_cast<StructType>(From);
    if (!Fields || !To->isIntegerTy() || Fields->getNumElements() == 0)
      return false;
    unsigned Bits = 0;
    for (Type *Field : Fields->elements()) {
      if (!Field->isIntegerTy())
        return false;
      Bits += Field->getIntegerBitWidth();
    }
    return Bits <= To->getIntegerBitWidth();
  }

  /// The intrinsic's result V as a value of the stub's result type To.
  static Value *adaptResult(IRBuilder<> &B, Value *V, Type *To) {
    if (V->getType() == To)
      return V;
    if (V->getType()->isPointerTy())
      return B.CreateAddrSpaceCast(V, To);
    auto *Fields = cast<StructType>(V->getType());
    Value *Packed = nullptr;
    unsigned Shift = 0;
    for (unsigned I = 0; I < Fields->getNumElements(); ++I) {
      Value *Field = B.CreateZExt(B.CreateExtractValue(V, I), To);
      Packed = Packed ? B.CreateOr(Packed, B.CreateShl(Field, Shift)) : Field;
      Shift += Fields->getElementType(I)->getIntegerBitWidth();
    }
    return Packed;
  }

  bool rewriteCalls(Function &F, const StubEntry &Stub) {
    if (Stub.Kind == StubKind::Function)
      return redirectCalls(F, Stub);
    if (Stub.Kind == StubKind::InlineAsm || Stub.Kind == StubKind::ConvergentAsm || Stub.Kind == StubKind::PureAsm)
      return emitInlineAsm(F, Stub);
    Intrinsic::ID Id = Intrinsic::lookupIntrinsicID(Stub.IntrinsicName);
    if (Id == Intrinsic::not_intrinsic) {
      Diags.error({("stub table names an unknown intrinsic `" + Stub.IntrinsicName +
                    "` for `" + Stub.Name + "`").str(),
                   "",
                   {"compiler/include/oxide/Stubs.def must name an LLVM 22 intrinsic"}});
      return false;
    }
    Function *Target = declareIntrinsic(Id, Stub.IntrinsicName);
    if (!Target) {
      Diags.error({("stub table names the overloaded intrinsic `" + Stub.IntrinsicName + "` for `" +
                    Stub.Name + "` without a pointer overload it can pick")
                       .str(),
                   "",
                   {"name the overload with LLVM's suffix in Stubs.def (`.p3`)"}});
      return false;
    }
    SmallVector<StringRef> Imms;
    Stub.Immediates.split(Imms, ',', -1, false);
    size_t Constants = llvm::count_if(Imms, [](StringRef I) { return I.trim() != "$"; });
    FunctionType *TargetTy = Target->getFunctionType();
    Type *Result = TargetTy->getReturnType();
    if (Stub.Kind == StubKind::ConvergentField1)
      Result = cast<StructType>(Result)->getElementType(1);
    bool Fits = TargetTy->getNumParams() == F.arg_size() + Constants &&
                resultFits(Result, F.getReturnType());
    if (Fits) {
      SmallVector<Type *> Operands = operandTypes(F, Imms);
      for (unsigned I = 0; I < Operands.size(); ++I)
        Fits &= argumentFits(Operands[I], TargetTy->getParamType(I));
    }
    if (!Fits) {
      Diags.error({("stub `" + Stub.Name + "` does not match intrinsic `" +
                    Stub.IntrinsicName + "`").str(),
                   "",
                   {"check its signature and immediates in Stubs.def"}});
      return false;
    }
    for (CallInst *C : callsTo(F)) {
      IRBuilder<> B(C);
      SmallVector<Value *> Args = operands(B, *C, Imms);
      for (unsigned I = 0; I < Args.size(); ++I)
        if (Type *Param = TargetTy->getParamType(I); Args[I]->getType() != Param)
          Args[I] = B.CreateAddrSpaceCast(Args[I], Param);
      CallInst *New = B.CreateCall(Target, Args);
      if (Stub.Kind != StubKind::Intrinsic)
        New->addFnAttr(Attribute::Convergent);
      New->setDebugLoc(C->getDebugLoc());
      Value *Replacement = New;
      if (Stub.Kind == StubKind::ConvergentField1)
        Replacement = B.CreateExtractValue(New, 1);
      else if (!C->getType()->isVoidTy())
        Replacement = adaptResult(B, New, C->getType());
      if (!C->getType()->isVoidTy())
        C->replaceAllUsesWith(Replacement);
      C->eraseFromParent();
    }
    return true;
  }
};

} // namespace

/// A stub the table does not name comes from a cuda-device newer than this
/// device linker: left alone, its host body (an emulator hook, or nothing
/// at all for a hint) would be compiled for the GPU in the instruction's
/// place, and the kernel would run without it and without a word. Reported
/// at its first call, once per stub.
static void reportUnknownStubs(Module &M, DiagnosticSink &Diags) {
  StringSet<> Known;
  for (const StubEntry &Stub : stubTable())
    Known.insert(Stub.Name);
  for (Function &F : M) {
    StringRef Name = F.getName();
    if (!Name.consume_front(StubPrefix) || Known.contains(Name))
      continue;
    const CallInst *FirstCall = nullptr;
    for (const User *U : F.users())
      if (const auto *C = dyn_cast<CallInst>(U); C && !FirstCall)
        FirstCall = C;
    Diags.error({("`cuda-device` calls the intrinsic stub `" + Name +
                  "`, which this device linker does not know (it is older than the cuda-device crate)")
                     .str(),
                 FirstCall ? userLocation(*FirstCall) : "",
                 {"rebuild oxide from the checkout the crates come from (`bash scripts/setup.sh`, or "
                  "`ninja -C build oxide-link`), or use the cuda-device of this oxide's release"}});
  }
}

PreservedAnalyses LowerIntrinsicStubsPass::run(Module &M, ModuleAnalysisManager &) {
  StubLowering Lowering(M, Diags, Target);
  bool Changed = false;
  for (const StubEntry &Stub : stubTable())
    Changed |= Lowering.lower(Stub);
  reportUnknownStubs(M, Diags);
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

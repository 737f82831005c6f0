//===- LowerInlinePtx.cpp - ptx_asm! sites → NVPTX inline asm ---------------===//
//
// Kernels are compiled by rustc for the host, so Rust's `asm!` cannot carry
// PTX. `cuda_device::ptx_asm!` instead expands, at each use, to a small Rust
// function of its own (the *site*) whose parameters are the operands, in the
// order the user wrote them: an input by value, an output or in-out operand
// as a pointer to the Rust place. The site's body calls the stub
// `__oxide_stub_ptx_asm(spec, len)` (Stubs.def, kind Special) with a static
// byte string, the *spec*, that the macro wrote (and then passes each output's
// place and pointer operand to `__oxide_stub_ptx_asm_output`, which on the
// host keeps them from counting as never written; deleted here with the rest
// of the body):
//
//     OPTIONS \0 CONSTRAINTS \0 TEMPLATE
//
//   OPTIONS      comma-separated: `pure` (no side effect), `nomem` (reads and
//                writes no memory), `readonly` (reads memory, writes none)
//   CONSTRAINTS  one per site parameter, comma-separated: `=X` an output,
//                `+X` an in-out operand, `X` an input, `n` an immediate; X a
//                constraint letter of InlinePtx.def
//   TEMPLATE     the PTX, its operands already numbered as LLVM numbers
//                them: the outputs and in-out operands in the order written,
//                then the inputs and immediates in the order written
//
// This pass replaces every call of a site with one LLVM inline asm call of
// that template: outputs first, then inputs, then one input tied to each
// in-out operand's output, then `~{memory}` unless `nomem`/`readonly`. The
// in-out operands are loaded from their place before and every output is
// stored to its place after, which SROA turns back into registers. A bool is
// a predicate register (`b`): it is loaded and stored as Rust's byte. A
// pointer is passed as its 64-bit address (`l`).
//
// Why Rust's semantics hold: the asm is, by default, what `asm!` is in Rust:
// it may read and write any memory and has side effects, so nothing moves
// across it or deletes it; `pure`, `nomem` and `readonly` are the user's
// promises, as they are for `asm!`. Every call is convergent, whatever its
// options: a warp collective in the PTX (shfl, vote) must not be moved into
// or out of control flow.
//
// Each template starts with a PTX comment naming the user's Rust line
// (`// ptx_asm! at src/main.rs:12:9`): when ptxas rejects a line of the PTX,
// inlinePtxDiagnostics() finds the comment above it and reports the error at
// that Rust line.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Diagnostics.h"
#include "oxide/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

using namespace llvm;
using namespace oxide;

namespace {

constexpr StringLiteral SiteMarker = "// ptx_asm! at ";

/// The LLVM type of a constraint letter (InlinePtx.def); null for an unknown one.
Type *registerType(LLVMContext &C, StringRef Letter) {
  auto Named = [&](StringRef T) -> Type * {
    if (T == "i1")
      return Type::getInt1Ty(C);
    if (T == "i16")
      return Type::getInt16Ty(C);
    if (T == "i32")
      return Type::getInt32Ty(C);
    if (T == "i64")
      return Type::getInt64Ty(C);
    if (T == "f32")
      return Type::getFloatTy(C);
    if (T == "f64")
      return Type::getDoubleTy(C);
    return nullptr;
  };
#define OXIDE_PTX_OPERAND(RUST_TYPE, CONSTRAINT, LLVM_TYPE, PTX_REGISTER)                          \
  if (Letter == #CONSTRAINT)                                                                       \
    return Named(#LLVM_TYPE);
#define OXIDE_PTX_IMMEDIATE(CONSTRAINT, LLVM_TYPE)                                                 \
  if (Letter == #CONSTRAINT)                                                                       \
    return Named(#LLVM_TYPE);
#include "oxide/InlinePtx.def"
  return nullptr;
}

enum class Role { Output, InOut, Input, Immediate };

struct Operand {
  Role R;
  std::string Letter;
  Type *Ty;
};

struct Spec {
  bool Pure = false, NoMem = false, ReadOnly = false;
  std::vector<Operand> Operands;
  std::string Template;
};

/// The bytes of the spec the site passes to the stub: a constant global
/// and its length, as the macro writes them.
std::optional<StringRef> specBytes(CallInst &C) {
  auto *GV = dyn_cast<GlobalVariable>(C.getArgOperand(0)->stripPointerCasts());
  auto *Len = dyn_cast<ConstantInt>(C.getArgOperand(1));
  if (!GV || !Len || !GV->hasInitializer())
    return std::nullopt;
  // rustc writes a static's bytes as a one-field packed struct.
  Constant *Init = GV->getInitializer();
  if (auto *Wrapper = dyn_cast<ConstantStruct>(Init); Wrapper && Wrapper->getNumOperands() == 1)
    Init = Wrapper->getOperand(0);
  auto *Data = dyn_cast<ConstantDataSequential>(Init);
  if (!Data || !Data->isString() || Data->getNumElements() < Len->getZExtValue())
    return std::nullopt;
  return Data->getRawDataValues().take_front(Len->getZExtValue());
}

Expected<Spec> parseSpec(LLVMContext &Ctx, StringRef Bytes) {
  SmallVector<StringRef, 3> Parts;
  Bytes.split(Parts, '\0', 2);
  if (Parts.size() != 3)
    return createStringError("the spec has no three parts");
  Spec S;
  SmallVector<StringRef> Words;
  Parts[0].split(Words, ',', -1, false);
  for (StringRef W : Words) {
    if (W == "pure")
      S.Pure = true;
    else if (W == "nomem")
      S.NoMem = true;
    else if (W == "readonly")
      S.ReadOnly = true;
    else
      return createStringError("unknown option `" + W + "`");
  }
  SmallVector<StringRef> Codes;
  Parts[1].split(Codes, ',', -1, false);
  for (StringRef Code : Codes) {
    Operand O;
    if (Code.consume_front("="))
      O.R = Role::Output;
    else if (Code.consume_front("+"))
      O.R = Role::InOut;
    else
      O.R = Code == "n" ? Role::Immediate : Role::Input;
    O.Letter = Code.str();
    O.Ty = registerType(Ctx, Code);
    if (!O.Ty)
      return createStringError("unknown constraint `" + Code + "`");
    S.Operands.push_back(std::move(O));
  }
  S.Template = Parts[2].str();
  return S;
}

/// The user's line, as `file:line:col`, or empty without debug info.
std::string siteLocation(const CallInst &C) {
  SourceLoc L = sourceLocation(&C);
  return L.empty() ? "" : L.str();
}

class InlinePtxLowering {
public:
  InlinePtxLowering(Module &M, DiagnosticSink &Diags) : M(M), Diags(Diags) {}

  bool run() {
    Function *Stub = M.getFunction(stubSymbol("ptx_asm"));
    if (!Stub)
      return false;
    SmallVector<CallInst *> SpecCalls;
    for (User *U : Stub->users())
      if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == Stub)
        SpecCalls.push_back(C);
    for (CallInst *SpecCall : SpecCalls)
      lowerSite(*SpecCall);
    return !SpecCalls.empty();
  }

private:
  Module &M;
  DiagnosticSink &Diags;

  void internalError(const Twine &Why, const Function &Site) {
    Diags.error({("ptx_asm!: the device linker cannot read the site `" + Site.getName() +
                  "`: " + Why)
                     .str(),
                 "",
                 {"cuda-device's ptx_asm! and this oxide-link come from different oxide "
                  "versions; rebuild with matching ones"}});
  }

  void lowerSite(CallInst &SpecCall) {
    Function &Site = *SpecCall.getFunction();
    std::optional<StringRef> Bytes = specBytes(SpecCall);
    if (!Bytes)
      return internalError("its spec is not a constant byte string", Site);
    Expected<Spec> S = parseSpec(M.getContext(), *Bytes);
    if (!S)
      return internalError(toString(S.takeError()), Site);
    if (S->Operands.size() != Site.arg_size())
      return internalError("it has " + Twine(Site.arg_size()) + " parameters for " +
                               Twine(S->Operands.size()) + " operands",
                           Site);
    for (User *U : make_early_inc_range(Site.users()))
      if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == &Site)
        if (!lowerCall(*C, *S))
          return;
    // Its body is the host's (the stub call); the device never runs it.
    if (Site.use_empty())
      Site.eraseFromParent();
    else
      Site.deleteBody();
  }

  /// A value of register type Ty read from Rust's place P (a bool is a byte).
  static Value *loadPlace(IRBuilder<> &B, Value *P, Type *Ty) {
    if (Ty->isIntegerTy(1))
      return B.CreateTrunc(B.CreateLoad(B.getInt8Ty(), P), Ty);
    return B.CreateLoad(Ty, P);
  }

  static void storePlace(IRBuilder<> &B, Value *V, Value *P) {
    if (V->getType()->isIntegerTy(1))
      V = B.CreateZExt(V, B.getInt8Ty());
    B.CreateStore(V, P);
  }

  /// An input value as its register type: a pointer as its address.
  static Value *asRegister(IRBuilder<> &B, Value *V, Type *Ty) {
    if (V->getType() == Ty)
      return V;
    if (V->getType()->isPointerTy() && Ty->isIntegerTy())
      return B.CreatePtrToInt(V, Ty);
    if (V->getType()->isIntegerTy() && Ty->isIntegerTy())
      return B.CreateZExtOrTrunc(V, Ty);
    return nullptr;
  }

  bool lowerCall(CallInst &C, const Spec &S) {
    IRBuilder<> B(&C);
    SmallVector<std::string> Constraints;
    SmallVector<Type *> OutTypes;
    SmallVector<Value *> OutPlaces;
    SmallVector<Value *> Inputs;
    SmallVector<std::string> InputConstraints;
    SmallVector<Value *> Tied;
    SmallVector<std::string> TiedConstraints;
    for (unsigned I = 0; I < S.Operands.size(); ++I) {
      const Operand &O = S.Operands[I];
      Value *Arg = C.getArgOperand(I);
      switch (O.R) {
      case Role::Output:
      case Role::InOut:
        if (!Arg->getType()->isPointerTy()) {
          internalError("output operand " + Twine(I) + " is not a pointer", *C.getCalledFunction());
          return false;
        }
        if (O.R == Role::InOut) {
          Tied.push_back(loadPlace(B, Arg, O.Ty));
          TiedConstraints.push_back(std::to_string(OutTypes.size()));
        }
        Constraints.push_back("=" + O.Letter);
        OutTypes.push_back(O.Ty);
        OutPlaces.push_back(Arg);
        break;
      case Role::Input:
      case Role::Immediate: {
        Value *V = asRegister(B, Arg, O.Ty);
        if (!V || (O.R == Role::Immediate && !isa<ConstantInt>(V))) {
          Diags.error({O.R == Role::Immediate
                           ? "a `const` operand of ptx_asm! must be a constant integer"
                           : ("ptx_asm!: operand " + std::to_string(I) + " does not fit its register"),
                       siteLocation(C),
                       {"write `const` operands as constant expressions (`N = const 4`)"}});
          return false;
        }
        Inputs.push_back(V);
        InputConstraints.push_back(O.Letter);
        break;
      }
      }
    }
    Constraints.append(InputConstraints.begin(), InputConstraints.end());
    Constraints.append(TiedConstraints.begin(), TiedConstraints.end());
    Inputs.append(Tied.begin(), Tied.end());
    if (!S.NoMem && !S.ReadOnly)
      Constraints.push_back("~{memory}");
    std::string ConstraintString = join(Constraints, ",");

    Type *Result = OutTypes.empty()          ? B.getVoidTy()
                   : OutTypes.size() == 1    ? OutTypes[0]
                                             : StructType::get(M.getContext(), OutTypes);
    SmallVector<Type *> InTypes;
    for (Value *V : Inputs)
      InTypes.push_back(V->getType());
    FunctionType *Ty = FunctionType::get(Result, InTypes, false);
    if (Error E = InlineAsm::verify(Ty, ConstraintString)) {
      internalError("constraints \"" + ConstraintString + "\": " + toString(std::move(E)),
                    *C.getCalledFunction());
      return false;
    }
    // `$` in the location would read as an operand.
    std::string Loc = siteLocation(C);
    std::string Where;
    for (char Ch : Loc.empty() ? std::string("(no debug info)") : Loc)
      Where += Ch == '$' ? std::string("$$") : std::string(1, Ch);
    std::string Template = (SiteMarker + Where + "\n\t" + S.Template).str();
    InlineAsm *Asm = InlineAsm::get(Ty, Template, ConstraintString,
                                    /*hasSideEffects=*/!S.Pure);
    CallInst *New = B.CreateCall(Ty, Asm, Inputs);
    New->addFnAttr(Attribute::Convergent);
    New->addFnAttr(Attribute::NoUnwind);
    if (S.NoMem)
      New->setDoesNotAccessMemory();
    else if (S.ReadOnly)
      New->setOnlyReadsMemory();
    New->setMetadata(StubAsmMetadata, MDNode::get(M.getContext(), {}));
    New->setDebugLoc(C.getDebugLoc());
    for (unsigned I = 0; I < OutPlaces.size(); ++I) {
      Value *V = OutTypes.size() == 1 ? static_cast<Value *>(New) : B.CreateExtractValue(New, I);
      storePlace(B, V, OutPlaces[I]);
    }
    C.eraseFromParent();
    return true;
  }
};

} // namespace

PreservedAnalyses LowerInlinePtxPass::run(Module &M, ModuleAnalysisManager &) {
  return InlinePtxLowering(M, Diags).run() ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

void oxide::inlinePtxDiagnostics(StringRef Ptx, StringRef PtxasLog, StringRef Arch,
                                 DiagnosticSink &Diags) {
  SmallVector<StringRef> PtxLines;
  Ptx.split(PtxLines, '\n');
  SmallVector<StringRef> LogLines;
  PtxasLog.split(LogLines, '\n');
  // ptxas may say several things about one line: one error per PTX line.
  std::vector<std::pair<unsigned, std::string>> Found; // PTX line, messages
  for (StringRef Line : LogLines) {
    // `ptxas /tmp/oxide-1a2b.ptx, line 57; error   : Unknown modifier '.s33'`
    size_t At = Line.find(", line ");
    if (At == StringRef::npos || !Line.contains("error"))
      continue;
    unsigned N = 0;
    StringRef Rest = Line.substr(At + 7);
    if (Rest.consumeInteger(10, N) || N == 0 || N > PtxLines.size())
      continue;
    StringRef Message = Rest.contains(':') ? Rest.split(':').second.trim() : Rest.trim();
    auto Same = llvm::find_if(Found, [&](const auto &F) { return F.first == N; });
    if (Same != Found.end())
      Same->second += "; " + Message.str();
    else
      Found.push_back({N, Message.str()});
  }
  for (const auto &[N, Message] : Found) {
    for (unsigned I = N; I-- > 0;) {
      StringRef Text = PtxLines[I].trim();
      if (Text.starts_with("// end inline asm") || Text.starts_with("// begin inline asm"))
        break;
      if (!Text.consume_front(SiteMarker))
        continue;
      Diags.error({"ptxas rejected the inline PTX of this ptx_asm!: " + Message,
                   Text == "(no debug info)" ? "" : Text.str(),
                   {("the PTX line: `" + PtxLines[N - 1].trim() + "`").str(),
                    ("check the instruction and its operands' types against the PTX ISA for " +
                     Arch)
                        .str()}});
      break;
    }
  }
}

//===- LinkReachable.cpp - One module of what the device can reach --------===//
//
// The device module is built from the unoptimised bitcode of every codegen
// unit of the program (Gather.cpp): the user's crates, oxide's host crates
// (cuda-host, the emulator, ptx-vm), their dependencies. Most of it is host
// code, which SelectReachable would delete after legalisation; reading it
// all first (every function body of every unit) and running the legalising
// passes over it was the largest fixed cost of a device link that only one
// kernel's edit made necessary.
//
// So the units are read lazily (function bodies stay in the file until
// asked for) and only what a device root reaches is linked:
//   * roots: the kernel entry wrappers (KernelEntryPrefix; and what is a
//     kernel or a device export already, as in hand-written IR), the statics the
//     host reaches by name (#[constant], #[device_global]: their link
//     sections; the panic record), the device export markers
//     (DeviceExportPrefix), and what appending globals other than
//     llvm.used/llvm.compiler.used hold (Retarget deletes those two before
//     SelectReachable looks, so their members were never roots);
//   * a root's body, initialiser or aliasee is read and everything it names
//     is reached in turn: an internal symbol in its own unit, an external
//     one at its definition in whichever unit defines it (the strongest
//     definition: a strong one over a weak or linkonce one, any of those
//     over available_externally, as the IR linker would choose);
//   * what nothing reaches is made a declaration (external) or deleted
//     (internal), before the IR linker sees it, so it is never read.
// Roots that are internal are kept through the IR linker by
// llvm.compiler.used, and llvm.used loses what was not reached.
// This is the closure SelectReachable computes with GlobalDCE later, taken
// earlier and over the whole symbol graph, every operand, metadata operands
// and debug records included: it keeps a superset of what the kernels
// reach, and the passes that run before SelectReachable add references only
// to intrinsics, libdevice and symbols they define themselves, so the
// module they see holds the same device code as before, and the device code
// that comes out is the same. What differs is only host code that was about
// to be deleted.
//
// Each unit's definitions of the kernel entry wrappers are counted before
// anything is dropped: each is a host copy the kernel table must resolve
// (Embed.cpp).
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugProgramInstruction.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include <deque>

using namespace llvm;
using namespace oxide;

namespace {

Error makeError(const Twine &Msg) { return createStringError(inconvertibleErrorCode(), Msg); }

/// How strongly a definition claims its name: the IR linker keeps a strong
/// definition over a weak or linkonce one, and any of them over an
/// available_externally copy.
int strength(const GlobalValue &GV) {
  if (GV.hasAvailableExternallyLinkage())
    return 0;
  if (GV.isWeakForLinker())
    return 1;
  return 2;
}

/// Whether the host or the device runtime needs GV whether or not a kernel
/// names it.
bool isRoot(const GlobalValue &GV) {
  if (GV.isDeclaration())
    return false;
  StringRef Name = GV.getName();
  if (const auto *F = dyn_cast<Function>(&GV))
    return Name.contains(KernelEntryPrefix) || F->getCallingConv() == CallingConv::PTX_Kernel ||
           F->hasFnAttribute(DeviceExportAttr);
  const auto *Var = dyn_cast<GlobalVariable>(&GV);
  if (!Var)
    return false;
  if (Name == "llvm.used" || Name == "llvm.compiler.used")
    return false;
  return Var->hasAppendingLinkage() || Name.starts_with(DeviceExportPrefix) ||
         Name == PanicRecordGlobal || Var->getSection() == ConstantSection ||
         Var->getSection() == GlobalSection;
}

/// The units and the walk over their symbol graph.
class Reachability {
public:
  explicit Reachability(std::vector<std::unique_ptr<Module>> &Units) : Units(Units) {
    for (auto &U : Units)
      for (GlobalValue &GV : U->global_values())
        if (!GV.isDeclaration() && !GV.hasLocalLinkage()) {
          auto [It, New] = Definitions.try_emplace(GV.getName(), &GV);
          if (!New && strength(GV) > strength(*It->second))
            It->second = &GV;
        }
  }

  Error run() {
    for (auto &U : Units)
      for (GlobalValue &GV : U->global_values())
        if (isRoot(GV))
          reach(&GV);
    while (!Work.empty()) {
      GlobalValue *GV = Work.front();
      Work.pop_front();
      if (Error E = walk(*GV))
        return E;
    }
    return Error::success();
  }

  /// Makes what was not reached a declaration, or deletes it when it is
  /// internal, so that linking the unit never reads it.
  void dropUnreached(Module &M) {
    // The IR linker keeps an internal symbol only when something it links
    // names it: an internal root (an entry wrapper rustc made internal) is
    // held by llvm.compiler.used, where a host static (a kept-alive launch
    // address) held it before, and which Retarget deletes as before.
    removeFromUsedLists(M, [&](Constant *C) {
      auto *GV = dyn_cast<GlobalValue>(C->stripPointerCasts());
      return !GV || !Reached.contains(GV);
    });
    std::vector<GlobalValue *> LocalRoots;
    for (GlobalValue &GV : M.global_values())
      if (GV.hasLocalLinkage() && isRoot(GV))
        LocalRoots.push_back(&GV);
    appendToCompilerUsed(M, LocalRoots);

    std::vector<GlobalValue *> Locals;
    // Aliases first: they name other symbols.
    for (GlobalAlias &GA : make_early_inc_range(M.aliases())) {
      if (Reached.contains(&GA))
        continue;
      if (GA.hasLocalLinkage()) {
        Locals.push_back(&GA);
        continue;
      }
      GlobalValue *Decl;
      if (auto *FT = dyn_cast<FunctionType>(GA.getValueType()))
        Decl = Function::Create(FT, GlobalValue::ExternalLinkage, "", &M);
      else
        Decl = new GlobalVariable(M, GA.getValueType(), false, GlobalValue::ExternalLinkage,
                                  nullptr, "");
      Decl->takeName(&GA);
      GA.replaceAllUsesWith(Decl);
      GA.eraseFromParent();
    }
    for (GlobalVariable &Var : M.globals())
      if (!Var.isDeclaration() && !Reached.contains(&Var) && !Var.hasAppendingLinkage()) {
        Var.setInitializer(nullptr);
        Var.setComdat(nullptr);
        if (Var.hasLocalLinkage())
          Locals.push_back(&Var);
        else
          Var.setLinkage(GlobalValue::ExternalLinkage);
      }
    for (Function &F : M)
      if (!F.isDeclaration() && !Reached.contains(&F)) {
        bool Local = F.hasLocalLinkage();
        F.deleteBody(); // external, and no longer materialisable
        F.setComdat(nullptr);
        if (Local)
          Locals.push_back(&F);
      }
    // What was unreached named them, and is gone; metadata may still.
    for (GlobalValue *GV : Locals) {
      if (!GV->use_empty())
        GV->replaceAllUsesWith(PoisonValue::get(GV->getType()));
      GV->eraseFromParent();
    }
  }

private:
  std::vector<std::unique_ptr<Module>> &Units;
  StringMap<GlobalValue *> Definitions;
  DenseSet<const GlobalValue *> Reached;
  DenseSet<const Constant *> SeenConstants;
  std::deque<GlobalValue *> Work;

  void reach(GlobalValue *GV) {
    // A name another unit defines: that definition is the one linked.
    if (!GV->hasLocalLinkage())
      if (auto It = Definitions.find(GV->getName()); It != Definitions.end())
        GV = It->second;
    if (GV->isDeclaration() || !Reached.insert(GV).second)
      return;
    Work.push_back(GV);
  }

  void visit(const Value *V) {
    if (auto *GV = dyn_cast<GlobalValue>(V)) {
      reach(const_cast<GlobalValue *>(GV));
    } else if (auto *C = dyn_cast<Constant>(V)) {
      if (isa<ConstantData>(C) || !SeenConstants.insert(C).second)
        return;
      for (const Value *Op : C->operands())
        visit(Op);
    } else if (auto *MV = dyn_cast<MetadataAsValue>(V)) {
      visitMetadata(MV->getMetadata());
    }
  }

  void visitMetadata(const Metadata *MD) {
    if (auto *VM = dyn_cast_or_null<ValueAsMetadata>(MD))
      visit(VM->getValue());
    else if (auto *Args = dyn_cast_or_null<DIArgList>(MD))
      for (ValueAsMetadata *A : Args->getArgs())
        visit(A->getValue());
  }

  Error walk(GlobalValue &GV) {
    if (auto *F = dyn_cast<Function>(&GV)) {
      if (Error E = F->materialize())
        return E;
      if (F->hasPersonalityFn())
        visit(F->getPersonalityFn());
      if (F->hasPrefixData())
        visit(F->getPrefixData());
      if (F->hasPrologueData())
        visit(F->getPrologueData());
      for (BasicBlock &BB : *F)
        for (Instruction &I : BB) {
          for (const Value *Op : I.operands())
            visit(Op);
          for (DbgVariableRecord &DVR : filterDbgVars(I.getDbgRecordRange()))
            for (Value *Loc : DVR.location_ops())
              visit(Loc);
        }
    } else if (auto *Var = dyn_cast<GlobalVariable>(&GV)) {
      if (Var->hasInitializer())
        visit(Var->getInitializer());
    } else if (auto *GA = dyn_cast<GlobalAlias>(&GV)) {
      visit(GA->getAliasee());
    } else if (auto *GI = dyn_cast<GlobalIFunc>(&GV)) {
      visit(GI->getResolver());
    }
    return Error::success();
  }
};

/// One codegen unit, lazily when it is bitcode (rustc's), whole when it is
/// textual IR (the lit tests').
Expected<std::unique_ptr<Module>> readUnit(LLVMContext &Ctx, const std::string &Path) {
  auto Buf = MemoryBuffer::getFile(Path);
  if (!Buf)
    return makeError("cannot read " + Path + ": " + Buf.getError().message());
  auto Fail = [&](const Twine &Why) {
    return makeError("cannot read " + Path + ": " + Why +
                     " (is rustc's LLVM newer than oxide's? run `cargo oxide doctor`)");
  };
  if (isBitcode(reinterpret_cast<const unsigned char *>((*Buf)->getBufferStart()),
                reinterpret_cast<const unsigned char *>((*Buf)->getBufferEnd()))) {
    auto M = getOwningLazyBitcodeModule(std::move(*Buf), Ctx);
    if (!M)
      return Fail(toString(M.takeError()));
    return std::move(*M);
  }
  SMDiagnostic Diag;
  std::unique_ptr<Module> M = parseIR((*Buf)->getMemBufferRef(), Diag, Ctx);
  if (!M) {
    std::string Msg;
    raw_string_ostream OS(Msg);
    Diag.print("oxide-link", OS);
    return Fail(Msg);
  }
  return std::move(M);
}

} // namespace

Expected<std::unique_ptr<Module>>
oxide::linkReachableBitcode(LLVMContext &Ctx, const std::vector<std::string> &Files,
                            std::map<std::string, unsigned> &EntryCopies) {
  std::vector<std::unique_ptr<Module>> Units;
  for (const std::string &Path : Files) {
    auto M = readUnit(Ctx, Path);
    if (!M)
      return M.takeError();
    for (Function &F : **M)
      if (!F.isDeclaration() && F.getName().contains(KernelEntryPrefix))
        ++EntryCopies[F.getName().str()];
    Units.push_back(std::move(*M));
  }

  Reachability Reach(Units);
  if (Error E = Reach.run())
    return std::move(E);

  auto Merged = std::make_unique<Module>("oxide-device", Ctx);
  Linker L(*Merged);
  for (size_t I = 0; I < Units.size(); ++I) {
    Module &M = *Units[I];
    Reach.dropUnreached(M);
    if (Error E = M.materializeAll())
      return makeError("cannot read " + Files[I] + ": " + toString(std::move(E)));
    M.setTargetTriple(Merged->getTargetTriple());
    M.setDataLayout(Merged->getDataLayout());
    if (NamedMDNode *Flags = M.getModuleFlagsMetadata())
      M.eraseNamedMetadata(Flags);
    if (L.linkInModule(std::move(Units[I])))
      return makeError("cannot link " + Files[I] + " into the device module");
  }
  return std::move(Merged);
}

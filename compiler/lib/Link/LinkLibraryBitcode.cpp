//===- LinkLibraryBitcode.cpp - The standard library's bodies the kernels need ===//
//
// The device module is the unoptimised bitcode of the crates cargo built
// (Gather.cpp). What kernels use of `core` is mostly generic or #[inline] and
// so compiled into those crates, but not all of it:
//   * core's ordinary functions (`<u8 as Display>::fmt`, `fmt::write`,
//     `str::from_utf8`, …) are compiled once, into libcore;
//   * in debug builds rustc shares generic instances (`-Zshare-generics` is
//     on for the dev profile): a crate that needs `Iterator::zip` over
//     `slice::Iter<u16>` links to the copy an upstream crate already made,
//     and that copy may be in any rlib of the standard library (`std`,
//     `miniz_oxide`, …), not in the user's bitcode.
// Those rlibs carry their own bitcode: every object in them has an `.llvmbc`
// section (rust-std is built with -Cembed-bitcode). This pass links from it
// exactly the definitions of core the kernels reach and the user's crates do
// not have, and what those need in turn:
//   1. walk the code the kernel entries reach (calls, function addresses,
//      initialisers of the globals they name) and collect the Rust symbols it
//      declares but nothing defines and that are core's: a function of
//      core, or an instance of a generic item of core over core's and
//      primitive types (namesOnlyCore); none: done, nothing is read;
//   2. for each library archive, in link order (each rlib comes before the
//      ones it depends on), read the symbol table of each member's bitcode
//      (no IR is parsed) and, if it defines some of those symbols, open the
//      member lazily and link it with Linker::LinkOnlyNeeded into a module
//      that declares just those symbols, which pulls in their definitions
//      and, transitively, what they reference from that member; then link
//      that module into the device module;
//   3. repeat from 1 while a round linked anything (a shared instance from
//      `miniz_oxide` may call functions that live in libcore).
// The bitcode is the library's optimised x86_64 code, which the passes after
// this one retarget like the user's (Retarget.cpp); invokes and landing pads
// go with LowerUnwinding as for any crate.
//
// What is not linked:
//   * core's panic functions (PanicFunctions.h): LowerPanics gives them
//     device bodies, so they are made declarations in the library before it
//     is linked (their host bodies format and unwind);
//   * what a kernel hands its panics (the `&dyn Debug` of assert_eq!'s
//     operands), and the `fmt` methods whose addresses it only stores into
//     an `fmt::Arguments` unless it also reaches `core::fmt::write`, the one
//     function that calls them: a panic message's values are read by
//     LowerPanics, never formatted on the device;
//   * what is not core's (std's I/O, alloc's heap, their generic
//     instances): host code, which RejectUnsupported reports where the
//     kernel calls it;
//   * symbols that are not Rust's (`memcmp`, `cbrtf`, libdevice's, the
//     stubs): other passes or the GPU provide those.
// Whatever no library defines stays declared, and RejectUnsupported says why
// it cannot run (heap allocation, host I/O, …).
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/PanicFunctions.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/IRSymtab.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include <deque>
#include <map>
#include <set>

using namespace llvm;
using namespace oxide;

namespace {

/// A Rust symbol: only those are looked for in the libraries.
bool isRustSymbol(StringRef Name) { return Name.starts_with("_R") || Name.starts_with("_ZN"); }

/// Whether every path in a Rust path starts at `core` (`core::fmt::write`,
/// `<u32 as core::fmt::Display>::fmt`, `<core::slice::iter::Iter<u16> as
/// core::iter::…>::size`): an item of core, generic arguments included. What
/// names std, alloc or another crate (`std::io::_print`,
/// `core::ptr::drop_in_place::<alloc::string::String>`) is host code the
/// device has no use for, and stays declared for RejectUnsupported to name.
bool namesOnlyCore(StringRef Path) {
  bool Core = false; // a name that does not demangle has no paths at all
  for (size_t At = Path.find("::"); At != StringRef::npos; At = Path.find("::", At + 2)) {
    size_t Start = At;
    while (Start > 0 && (isAlnum(Path[Start - 1]) || Path[Start - 1] == '_'))
      --Start;
    // The first segment of a path: not preceded by another `::`.
    if (Start == At || (Start > 0 && Path[Start - 1] == ':'))
      continue;
    if (Path.slice(Start, At) != "core")
      return false;
    Core = true;
  }
  return Core;
}

//===-- What the kernels need ----------------------------------------------===//

/// The globals (functions and variables) the kernel entries of M reach.
/// `WithFormatters`: also through the addresses of `fmt` methods.
class Reach {
public:
  Reach(Module &M, bool WithFormatters) : WithFormatters(WithFormatters) {
    for (Function &F : M)
      if (F.getCallingConv() == CallingConv::PTX_Kernel)
        add(&F);
    while (!Work.empty()) {
      Function *F = Work.front();
      Work.pop_front();
      for (BasicBlock *BB : blocksWithoutUnwinding(*F))
        for (Instruction &I : *BB) {
          auto *Call = dyn_cast<CallBase>(&I);
          // What a panic is handed (its message's vtables and arguments) is
          // read by LowerPanics, never run: the panic functions get bodies
          // that only record and trap.
          bool Panics = Call && isPanicFunction(Call->getCalledFunction());
          for (const Use &Op : I.operands())
            if (!Panics || !Call->isArgOperand(&Op))
              visit(Op.get(), Call && Call->isCallee(&Op));
        }
    }
  }

  const SetVector<GlobalValue *> &reached() const { return Reached; }
  bool reachesFormatWrite() const { return FormatWrite; }

private:
  bool WithFormatters;
  bool FormatWrite = false;
  SetVector<GlobalValue *> Reached;
  std::set<const Constant *> SeenConstants;
  std::deque<Function *> Work;
  std::map<const Function *, bool> PanicFunctions;

  /// The blocks of F that run without a panic unwinding: a GPU thread never
  /// unwinds (LowerUnwinding deletes the landing pads and what only they
  /// reach, such as the drops of an unwinding sort).
  static std::vector<BasicBlock *> blocksWithoutUnwinding(Function &F) {
    std::vector<BasicBlock *> Blocks{&F.getEntryBlock()};
    std::set<BasicBlock *> Seen{&F.getEntryBlock()};
    for (size_t I = 0; I < Blocks.size(); ++I) {
      Instruction *T = Blocks[I]->getTerminator();
      if (auto *II = dyn_cast_or_null<InvokeInst>(T)) {
        if (Seen.insert(II->getNormalDest()).second)
          Blocks.push_back(II->getNormalDest());
        continue;
      }
      if (T)
        for (BasicBlock *Next : successors(T))
          if (Seen.insert(Next).second)
            Blocks.push_back(Next);
    }
    return Blocks;
  }

  bool isPanicFunction(const Function *F) {
    if (!F)
      return false;
    auto [It, New] = PanicFunctions.try_emplace(F, false);
    if (New)
      It->second = isRustSymbol(F->getName()) && findPanicFunction(demangleRust(F->getName()), true);
    return It->second;
  }

  void add(GlobalValue *GV) {
    if (!Reached.insert(GV))
      return;
    if (auto *F = dyn_cast<Function>(GV)) {
      FormatWrite |= isRustSymbol(F->getName()) && isFormatWrite(demangleRust(F->getName()));
      if (!F->isDeclaration())
        Work.push_back(F);
    } else if (auto *Var = dyn_cast<GlobalVariable>(GV); Var && Var->hasInitializer()) {
      visit(Var->getInitializer(), false);
    }
  }

  void visit(Value *V, bool IsCallee) {
    if (auto *F = dyn_cast<Function>(V)) {
      if (!IsCallee && !WithFormatters && !F->isIntrinsic() &&
          formattingMethod(demangleRust(F->getName())))
        return;
      add(F);
    } else if (auto *GV = dyn_cast<GlobalValue>(V)) {
      if (auto *GA = dyn_cast<GlobalAlias>(GV))
        visit(GA->getAliasee(), IsCallee);
      else
        add(GV);
    } else if (auto *C = dyn_cast<Constant>(V);
               C && (isa<ConstantExpr>(C) || isa<ConstantAggregate>(C)) && SeenConstants.insert(C).second) {
      for (Value *Op : C->operands())
        visit(Op, false);
    }
  }
};

/// The Rust symbols the kernels reach that M declares but does not define,
/// other than core's panic functions.
std::vector<std::string> missingSymbols(Module &M) {
  Reach Without(M, /*WithFormatters=*/false);
  std::optional<Reach> With;
  if (Without.reachesFormatWrite())
    With.emplace(M, /*WithFormatters=*/true);
  std::vector<std::string> Out;
  for (GlobalValue *GV : (With ? *With : Without).reached()) {
    if (!GV->isDeclaration() || !isRustSymbol(GV->getName()))
      continue;
    std::string Path = demangleRust(GV->getName());
    if ((isa<Function>(GV) && findPanicFunction(Path, true)) || !namesOnlyCore(Path))
      continue;
    Out.push_back(GV->getName().str());
  }
  return Out;
}

//===-- The libraries --------------------------------------------------------===//

/// One bitcode module a library offers, and the symbols it defines.
struct Member {
  MemoryBufferRef Bitcode; // a .bc file, textual IR (lit tests), or an `.llvmbc` section
  bool IsText = false;
  StringSet<> Defines;
};

/// The symbols a bitcode file defines, from the symbol table LLVM writes
/// into it. The table is read as stored; only if its format is not this
/// LLVM's is it rebuilt from the IR (which reads the module's globals).
Error readDefinitions(MemoryBufferRef Bitcode, StringSet<> &Defines) {
  Expected<BitcodeFileContents> Contents = getBitcodeFileContents(Bitcode);
  if (!Contents)
    return Contents.takeError();
  auto Add = [&](const irsymtab::Reader &R) {
    for (const irsymtab::Reader::SymbolRef &S : R.symbols())
      if (!S.isUndefined())
        Defines.insert(S.getIRName().empty() ? S.getName() : S.getIRName());
  };
  StringRef Symtab = Contents->Symtab, Strtab = Contents->StrtabForSymtab;
  if (Symtab.size() >= sizeof(irsymtab::storage::Header) &&
      reinterpret_cast<const irsymtab::storage::Header *>(Symtab.data())->Version ==
          irsymtab::storage::Header::kCurrentVersion) {
    Add(irsymtab::Reader(Symtab, Strtab));
    return Error::success();
  }
  Expected<irsymtab::FileContents> Rebuilt = irsymtab::readBitcode(*Contents);
  if (!Rebuilt)
    return Rebuilt.takeError();
  Add(Rebuilt->TheReader);
  return Error::success();
}

/// The bitcode rustc embeds in an object file (`-Cembed-bitcode`): the
/// section `.llvmbc`, which LLVM's own lookup (`.llvm.lto`) does not know.
std::optional<MemoryBufferRef> embeddedBitcode(const object::ObjectFile &Obj) {
  for (const object::SectionRef &Sec : Obj.sections()) {
    Expected<StringRef> Name = Sec.getName();
    if (!Name) {
      consumeError(Name.takeError());
      continue;
    }
    if (*Name != ".llvmbc")
      continue;
    Expected<StringRef> Contents = Sec.getContents();
    if (!Contents) {
      consumeError(Contents.takeError());
      return std::nullopt;
    }
    if (Contents->empty())
      return std::nullopt;
    return MemoryBufferRef(*Contents, Obj.getFileName());
  }
  return std::nullopt;
}

/// A library whose bitcode may be linked: an rlib (each object's `.llvmbc`),
/// or a bitcode or IR file.
class Library {
public:
  explicit Library(std::string Path) : Path(std::move(Path)) {}

  const std::string &path() const { return Path; }

  /// Reads the archive or file and the symbol tables, once. A library
  /// without bitcode (or one that cannot be read) offers nothing.
  std::vector<Member> &members(LLVMContext &Ctx) {
    if (!Opened) {
      Opened = true;
      if (Error E = open(Ctx))
        consumeError(std::move(E));
    }
    return Members;
  }

private:
  std::string Path;
  bool Opened = false;
  std::unique_ptr<MemoryBuffer> File;
  std::vector<Member> Members;

  Error open(LLVMContext &Ctx) {
    auto Buf = MemoryBuffer::getFile(Path);
    if (!Buf)
      return errorCodeToError(Buf.getError());
    File = std::move(*Buf);
    StringRef Bytes = File->getBuffer();
    if (Bytes.starts_with("!<arch>\n"))
      return openArchive();
    Member Mem{File->getMemBufferRef(), !isBitcode(reinterpret_cast<const unsigned char *>(Bytes.begin()),
                                                   reinterpret_cast<const unsigned char *>(Bytes.end())),
               {}};
    if (Mem.IsText) {
      // Textual IR (the lit tests' libraries): parse it to see what it defines.
      SMDiagnostic Diag;
      std::unique_ptr<Module> M = parseIR(Mem.Bitcode, Diag, Ctx);
      if (!M)
        return createStringError(inconvertibleErrorCode(), "cannot parse " + Path);
      for (GlobalValue &GV : M->global_values())
        if (!GV.isDeclaration() && !GV.hasLocalLinkage())
          Mem.Defines.insert(GV.getName());
    } else if (Error E = readDefinitions(Mem.Bitcode, Mem.Defines)) {
      return E;
    }
    Members.push_back(std::move(Mem));
    return Error::success();
  }

  Error openArchive() {
    Expected<std::unique_ptr<object::Archive>> Archive = object::Archive::create(File->getMemBufferRef());
    if (!Archive)
      return Archive.takeError();
    Error Err = Error::success();
    for (const object::Archive::Child &C : (*Archive)->children(Err)) {
      Expected<MemoryBufferRef> Data = C.getMemoryBufferRef();
      if (!Data) {
        consumeError(Data.takeError());
        continue;
      }
      Expected<std::unique_ptr<object::ObjectFile>> Obj = object::ObjectFile::createObjectFile(*Data);
      if (!Obj) {
        consumeError(Obj.takeError()); // lib.rmeta and other non-objects
        continue;
      }
      std::optional<MemoryBufferRef> Bitcode = embeddedBitcode(**Obj);
      if (!Bitcode)
        continue;
      Member Mem{*Bitcode, false, {}};
      if (Error E = readDefinitions(Mem.Bitcode, Mem.Defines)) {
        consumeError(std::move(E));
        continue;
      }
      Members.push_back(std::move(Mem));
    }
    return Err;
  }
};

/// Links the definitions of `Wanted` (and what they need) from one library
/// member into M. False if the member could not be read or linked.
bool linkFromMember(Module &M, const Member &Mem, ArrayRef<std::string> Wanted) {
  LLVMContext &Ctx = M.getContext();
  std::unique_ptr<Module> Lib;
  if (Mem.IsText) {
    SMDiagnostic Diag;
    Lib = parseIR(Mem.Bitcode, Diag, Ctx);
  } else {
    Expected<std::unique_ptr<Module>> Lazy = getLazyBitcodeModule(Mem.Bitcode, Ctx);
    if (!Lazy) {
      consumeError(Lazy.takeError());
      return false;
    }
    Lib = std::move(*Lazy);
  }
  if (!Lib)
    return false;
  if (Error E = Lib->materializeMetadata()) {
    consumeError(std::move(E));
    return false;
  }
  Lib->setTargetTriple(M.getTargetTriple());
  Lib->setDataLayout(M.getDataLayout());
  if (NamedMDNode *Flags = Lib->getModuleFlagsMetadata())
    Lib->eraseNamedMetadata(Flags);
  // `llvm.used` and its kin would be linked whether needed or not, and with
  // them the host code they keep alive.
  for (GlobalVariable &Var : make_early_inc_range(Lib->globals()))
    if (Var.hasAppendingLinkage())
      Var.eraseFromParent();
  // core's panic functions keep their declarations: LowerPanics defines them.
  for (Function &F : *Lib)
    if (F.getName().contains("panic") && findPanicFunction(demangleRust(F.getName()), true))
      F.deleteBody();

  // A module that declares exactly what is wanted: linking the library into
  // it with LinkOnlyNeeded pulls in those definitions and their closure, and
  // nothing the host code of the device module happens to declare.
  auto Needs = std::make_unique<Module>("oxide-library-needs", Ctx);
  Needs->setTargetTriple(M.getTargetTriple());
  Needs->setDataLayout(M.getDataLayout());
  for (const std::string &Name : Wanted) {
    GlobalValue *Def = Lib->getNamedValue(Name);
    if (auto *F = dyn_cast_or_null<Function>(Def))
      Function::Create(F->getFunctionType(), GlobalValue::ExternalLinkage, Name, *Needs);
    else if (auto *Var = dyn_cast_or_null<GlobalVariable>(Def))
      new GlobalVariable(*Needs, Var->getValueType(), Var->isConstant(), GlobalValue::ExternalLinkage,
                         nullptr, Name);
  }
  if (Linker::linkModules(*Needs, std::move(Lib), Linker::LinkOnlyNeeded))
    return false;
  // What the device module already defines stays its own.
  for (GlobalValue &GV : Needs->global_values())
    if (GlobalValue *Own = M.getNamedValue(GV.getName());
        Own && !Own->isDeclaration() && !GV.isDeclaration() && !GV.hasLocalLinkage()) {
      if (auto *F = dyn_cast<Function>(&GV))
        F->deleteBody();
      else if (auto *Var = dyn_cast<GlobalVariable>(&GV))
        Var->setInitializer(nullptr);
      GV.setLinkage(GlobalValue::ExternalLinkage);
    }
  return !Linker::linkModules(M, std::move(Needs));
}

} // namespace

PreservedAnalyses LinkLibraryBitcodePass::run(Module &M, ModuleAnalysisManager &) {
  std::vector<Library> Libs;
  for (const std::string &Path : Libraries)
    Libs.emplace_back(Path);
  bool Changed = false;
  // Each round links, library by library, what the kernels still miss; a
  // round that links nothing ends it (every library is read at most once
  // per round, and usually the first round finds everything).
  for (bool Linked = true; Linked;) {
    Linked = false;
    std::vector<std::string> Missing = missingSymbols(M);
    for (Library &Lib : Libs) {
      if (Missing.empty())
        break;
      for (Member &Mem : Lib.members(M.getContext())) {
        std::vector<std::string> Wanted;
        for (const std::string &Name : Missing)
          if (Mem.Defines.contains(Name))
            Wanted.push_back(Name);
        if (Wanted.empty())
          continue;
        if (Verbose) {
          errs() << "oxide-link: " << Wanted.size() << " definition(s) from " << Lib.path() << ":\n";
          for (const std::string &Name : Wanted)
            errs() << "oxide-link:   " << demangleRust(Name) << "\n";
        }
        if (!linkFromMember(M, Mem, Wanted)) {
          Diags.fail("cannot link the bitcode of " + Lib.path() + " into the device module");
          return PreservedAnalyses::none();
        }
        Linked = Changed = true;
        // Defined now; what they reference is looked for from here on.
        Missing = missingSymbols(M);
      }
    }
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

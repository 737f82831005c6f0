//===- RejectUnsupported.cpp - What the GPU cannot run is a compile error -===//
//
// After SelectReachable, the module holds exactly the code the kernels reach.
// Whatever in it has no device implementation must stop the build with an
// error that points at the user's code, never a crash in ptxas or a kernel
// that fails at run time:
//   * a call to a function that is only declared (its body lives in a host
//     library: heap allocation, I/O, threads, …) other than intrinsics,
//     libdevice and vprintf;
//   * inline assembly (Rust `asm!` written for the host);
//   * thread-local statics;
//   * a store into a mutable host static.
// Each error names the kernel, the call chain from it to the offending
// function, and the Rust source location when debug info has one.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include <deque>
#include <map>
#include <set>

using namespace llvm;
using namespace oxide;

namespace {

/// A short description of why a host function cannot run on the device.
std::string explainMissing(StringRef Path) {
  static const std::pair<StringRef, StringRef> Reasons[] = {
      {"__rust_alloc", "heap allocation (Box, Vec, String, format!) is not available in kernels"},
      {"__rust_dealloc", "heap allocation (Box, Vec, String, format!) is not available in kernels"},
      {"__rust_realloc", "heap allocation (Box, Vec, String, format!) is not available in kernels"},
      {"alloc::", "heap allocation (Box, Vec, String, format!) is not available in kernels"},
      {"std::io::", "host I/O (println!, print!, files, stdin) is not available in kernels; use gpu_printf!"},
      {"std::thread::", "host threads are not available in kernels"},
      {"std::sync::", "host synchronisation primitives are not available in kernels"},
      {"std::fs::", "the file system is not available in kernels"},
      {"std::net::", "the network is not available in kernels"},
      {"std::process::", "processes are not available in kernels"},
      {"std::env::", "the environment is not available in kernels"},
      {"std::time::", "host clocks are not available in kernels; use cuda_device::thread::clock64"},
      {"core::fmt::", "string formatting (format_args!, Debug, Display) is not available in kernels"},
      {"std::", "this part of std needs the host operating system"},
  };
  for (const auto &[Prefix, Why] : Reasons)
    if (Path.starts_with(Prefix) || Path.contains(Prefix))
      return Why.str();
  return "its body is not part of any crate the device linker was given";
}

bool isDeviceProvided(const Function &F) {
  StringRef N = F.getName();
  return F.isIntrinsic() || N.starts_with("__nv_") || N == "vprintf" || N == "malloc" ||
         N == "free";
}

/// A source location like `src/main.rs:12:9`, from an instruction's debug info.
std::string sourceLocation(const Instruction *I) {
  if (!I)
    return "";
  const DebugLoc &DL = I->getDebugLoc();
  if (!DL)
    return "";
  auto *Scope = cast<DIScope>(DL.getScope());
  return (Scope->getFilename() + ":" + Twine(DL.getLine()) + ":" + Twine(DL.getCol())).str();
}

/// Whether a source path is inside Rust's standard library (rustc records
/// those as `library/core/…` or under the toolchain's `rustlib/`).
bool isLibraryPath(StringRef File) {
  for (StringRef Lib : {"library/core/", "library/alloc/", "library/std/"})
    if (File.starts_with(Lib) || File.contains(("/" + Lib).str()))
      return true;
  return File.contains("/rustc/") || File.contains("/rustlib/");
}

/// Breadth-first search over the call graph from each kernel, remembering the
/// call that first reached every function, so a chain can be printed.
class CallGraphWalk {
public:
  struct Step {
    Function *Caller = nullptr;
    Instruction *Site = nullptr;
  };

  explicit CallGraphWalk(Function &Kernel) : Kernel(Kernel) {
    std::deque<Function *> Work{&Kernel};
    Reached[&Kernel] = {};
    while (!Work.empty()) {
      Function *F = Work.front();
      Work.pop_front();
      if (F->isDeclaration())
        continue;
      for (Instruction &I : instructions(*F)) {
        auto *Call = dyn_cast<CallBase>(&I);
        if (!Call)
          continue;
        auto *Callee = dyn_cast<Function>(Call->getCalledOperand()->stripPointerCasts());
        if (Callee && !Reached.count(Callee)) {
          Reached[Callee] = {F, &I};
          Work.push_back(Callee);
        }
      }
    }
  }

  bool reaches(Function *F) const { return Reached.count(F); }
  const std::map<Function *, Step> &reached() const { return Reached; }

  /// Kernel → … → F, as Rust paths.
  std::vector<Function *> chainTo(Function *F) const {
    std::vector<Function *> Chain;
    for (Function *Cur = F; Cur; Cur = Reached.at(Cur).Caller)
      Chain.insert(Chain.begin(), Cur);
    return Chain;
  }

  /// The innermost call site on the chain to F that is in the user's code.
  std::string userLocation(Function *F) const {
    std::string Fallback;
    for (Function *Cur = F; Cur && Cur != &Kernel; Cur = Reached.at(Cur).Caller) {
      std::string Loc = sourceLocation(Reached.at(Cur).Site);
      if (Loc.empty())
        continue;
      if (!isLibraryPath(Loc))
        return Loc;
      if (Fallback.empty())
        Fallback = Loc;
    }
    return Fallback;
  }

private:
  Function &Kernel;
  std::map<Function *, Step> Reached;
};

std::string kernelName(Function &Entry) {
  StringRef Name = Entry.getName();
  Name.consume_back(".oxide.body");
  return kernelPathOf(Name);
}

std::string displayName(Function *F) {
  std::string Path = demangleRust(F->getName());
  // Legacy mangling spells a leading `<` as `_<`.
  if (StringRef(Path).starts_with("_<"))
    Path.erase(0, 1);
  return Path;
}

/// `kernel` → `helper` → … → `offender`: the generated entry and the entry
/// wrapper are left out, the kernel itself starts the chain.
std::string formatChain(const std::vector<Function *> &Chain) {
  std::string Out;
  for (size_t I = 2; I < Chain.size(); ++I) {
    if (I > 2)
      Out += " → ";
    Out += "`" + displayName(Chain[I]) + "`";
  }
  return Out;
}

class Rejecter {
public:
  Rejecter(Module &M, DiagnosticSink &Diags) : M(M), Diags(Diags) {}

  void checkKernel(Function &Kernel) {
    CallGraphWalk Walk(Kernel);
    std::string KName = kernelName(Kernel);
    for (const auto &[F, Step] : Walk.reached()) {
      if (F->isDeclaration() && !isDeviceProvided(*F) && Reported.insert(F).second) {
        std::string Path = displayName(F);
        std::string Why = explainMissing(Path);
        std::string Loc = Walk.userLocation(F);
        // One error per place in the user's code and reason: a `Vec` reaches
        // several allocator functions, but the user wrote one `collect()`.
        if (!ReportedSites.insert(KName + "|" + Loc + "|" + Why).second)
          continue;
        Diags.error({"`" + Path + "` cannot be called on the GPU: " + Why, Loc,
                     {"in kernel `" + KName + "`", "call chain: " + formatChain(Walk.chainTo(F))}});
      }
      if (!F->isDeclaration())
        checkBody(*F, Walk, KName);
    }
  }

private:
  Module &M;
  DiagnosticSink &Diags;
  std::set<const void *> Reported;
  std::set<std::string> ReportedSites;

  void report(const std::string &What, Instruction &I, Function &In, const CallGraphWalk &Walk,
              const std::string &KName) {
    if (!Reported.insert(&I).second)
      return;
    std::string Loc = sourceLocation(&I);
    if (Loc.empty())
      Loc = Walk.userLocation(&In);
    Diags.error({What, Loc, {"in kernel `" + KName + "`", "call chain: " + formatChain(Walk.chainTo(&In))}});
  }

  void checkBody(Function &F, const CallGraphWalk &Walk, const std::string &KName) {
    for (Instruction &I : instructions(F)) {
      if (auto *Call = dyn_cast<CallBase>(&I); Call && Call->isInlineAsm()) {
        report("inline assembly cannot be compiled for the GPU (asm! written for the host)", I, F,
               Walk, KName);
        continue;
      }
      for (Value *Op : I.operands()) {
        auto *GV = dyn_cast<GlobalVariable>(Op->stripPointerCasts());
        if (!GV)
          continue;
        if (GV->isThreadLocal())
          report("thread-local static `" + demangleRust(GV->getName()) +
                     "` is not available on the GPU",
                 I, F, Walk, KName);
        else if (auto *St = dyn_cast<StoreInst>(&I);
                 St && St->getPointerOperand()->stripPointerCasts() == GV && !GV->isConstant() &&
                 GV->getAddressSpace() == 0)
          report("kernel writes the host static `" + demangleRust(GV->getName()) +
                     "`: host statics are not shared with the GPU",
                 I, F, Walk, KName);
      }
    }
  }
};

} // namespace

PreservedAnalyses RejectUnsupportedPass::run(Module &M, ModuleAnalysisManager &) {
  Rejecter R(M, Diags);
  for (Function &F : M)
    if (F.getCallingConv() == CallingConv::PTX_Kernel)
      R.checkKernel(F);
  return PreservedAnalyses::all();
}

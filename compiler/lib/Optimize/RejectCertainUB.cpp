//===- RejectCertainUB.cpp - A kernel that is always UB is a compile error -===//
//
// LLVM treats undefined behaviour it can prove as impossible: a store
// through null, a call through a null function pointer, a value of an
// uninhabited enum variant (its `match` arm is `unreachable`), or
// `unreachable_unchecked()` become `unreachable`, and O3 then deletes every
// path that leads there. When that is every path from a kernel's entry, the
// kernel that is left is `unreachable` at once: it can never run without
// undefined behaviour, and what the GPU runs instead is an `exit` (or a
// trap) that the user never wrote. That is an error here, at the Rust code,
// rather than a kernel that silently does nothing.
//
// A block is doomed when it ends in such an `unreachable`, or when it has
// successors and all of them are doomed (the least fixpoint: a loop that
// can spin forever is not doomed). The kernel is rejected when its entry is
// doomed. Left alone:
//   * an `unreachable` only some paths reach: a `match` arm rustc marks
//     unreachable, an `unreachable_unchecked()` behind a condition; the
//     condition may always hold, which only the user knows;
//   * an `unreachable` after a call that does not return: a panic, which
//     LowerPanics made a located report and a trap, is defined behaviour
//     even when a kernel always panics.
// Nothing is rewritten.
//
// The error names the kernel and points at the instruction's Rust line when
// the device code keeps line tables (OXIDE_DEVICE_DEBUG=lines), else at the
// kernel: DeviceDebugInfo strips the debug info before O3 by default, so
// RecordKernelSourcesPass (run right after BuildKernelEntries) keeps each
// entry's Rust line as an attribute first.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Diagnostics.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include <set>

using namespace llvm;
using namespace oxide;

namespace {

/// The kernel entries with their Rust paths, from the list BuildKernelEntries
/// writes.
std::vector<std::pair<Function *, std::string>> kernelEntries(Module &M) {
  std::vector<std::pair<Function *, std::string>> Entries;
  if (NamedMDNode *MD = M.getNamedMetadata(KernelsMetadata))
    for (MDNode *N : MD->operands()) {
      auto *Entry = mdconst::dyn_extract_or_null<Function>(N->getOperand(0));
      auto *Host = N->getNumOperands() > 1 ? dyn_cast<MDString>(N->getOperand(1)) : nullptr;
      if (Entry && !Entry->isDeclaration())
        Entries.push_back({Entry, Host ? kernelPathOf(Host->getString()) : Entry->getName().str()});
    }
  return Entries;
}

/// An `unreachable` that no call leads to: undefined behaviour LLVM proved,
/// not the end of a panic (a call that does not return) or of inline asm.
bool isUndefinedEnd(const BasicBlock &BB) {
  if (!isa<UnreachableInst>(BB.getTerminator()))
    return false;
  const Instruction *Prev = BB.getTerminator()->getPrevNode();
  return !(Prev && isa<CallBase>(Prev));
}

/// The blocks every path from which ends in undefined behaviour.
std::set<const BasicBlock *> doomedBlocks(const Function &F) {
  std::set<const BasicBlock *> Doomed;
  for (const BasicBlock &BB : F)
    if (isUndefinedEnd(BB))
      Doomed.insert(&BB);
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (const BasicBlock &BB : F) {
      if (Doomed.count(&BB) || succ_empty(&BB))
        continue;
      if (all_of(successors(&BB), [&](const BasicBlock *S) { return Doomed.count(S) != 0; })) {
        Doomed.insert(&BB);
        Changed = true;
      }
    }
  }
  return Doomed;
}

/// The Rust line of the undefined behaviour when line tables survived: the
/// last located instruction of the first doomed path from the entry.
SourceLoc undefinedBehaviourLocation(const Function &F, const std::set<const BasicBlock *> &Doomed) {
  SourceLoc Last;
  std::set<const BasicBlock *> Seen;
  for (const BasicBlock *BB = &F.getEntryBlock(); BB && Seen.insert(BB).second;) {
    for (const Instruction &I : *BB)
      if (SourceLoc L = sourceLocation(&I); !L.empty() && !L.isLibrary())
        Last = L;
    const BasicBlock *Next = nullptr;
    for (const BasicBlock *S : successors(BB))
      if (Doomed.count(S)) {
        Next = S;
        break;
      }
    BB = Next;
  }
  return Last;
}

} // namespace

PreservedAnalyses RecordKernelSourcesPass::run(Module &M, ModuleAnalysisManager &) {
  for (auto &[Entry, Kernel] : kernelEntries(M)) {
    // The entry calls the #[kernel] wrapper, which carries the Rust line.
    for (Instruction &I : Entry->getEntryBlock())
      if (auto *Call = dyn_cast<CallInst>(&I))
        if (Function *Callee = Call->getCalledFunction())
          if (DISubprogram *SP = Callee->getSubprogram()) {
            Entry->addFnAttr(KernelSourceAttr, (SP->getFilename() + ":" + Twine(SP->getLine())).str());
            break;
          }
  }
  return PreservedAnalyses::all();
}

PreservedAnalyses RejectCertainUBPass::run(Module &M, ModuleAnalysisManager &) {
  for (auto &[Entry, Kernel] : kernelEntries(M)) {
    std::set<const BasicBlock *> Doomed = doomedBlocks(*Entry);
    if (!Doomed.count(&Entry->getEntryBlock()))
      continue;
    SourceLoc At = undefinedBehaviourLocation(*Entry, Doomed);
    std::vector<std::string> Notes = {
        "in kernel `" + Kernel + "`",
        "the compiler proved that every run of the kernel reaches undefined behaviour and "
        "removed its body: for example a null pointer written or called, a `transmute` to an "
        "enum variant that cannot exist (an uninhabited one), or `unreachable_unchecked()` "
        "reached on every path; fix that code, or use `unreachable!()`/`panic!()` where it "
        "must fail (a panic is reported at its line)"};
    std::string Where = At.empty() ? "" : At.str();
    if (At.empty()) {
      if (Attribute A = Entry->getFnAttribute(KernelSourceAttr); A.isValid())
        Where = A.getValueAsString().str();
      Notes.push_back("to see the line of the undefined behaviour, build with "
                      "OXIDE_DEVICE_DEBUG=lines (and, in a profile without debug info, "
                      "`debug = \"line-tables-only\"`)");
    }
    Diags.error({"kernel `" + Kernel + "` cannot run without undefined behaviour", Where, Notes});
  }
  return PreservedAnalyses::all();
}

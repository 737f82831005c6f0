//===- CheckUnrollHints.cpp - full unroll hints O3 could not honour → errors -===//
//
// `unroll!(full, …)` / `#[unroll]` asks for a loop to disappear into copies
// of its body (LowerUnrollHints gives it `llvm.loop.unroll.full` and the
// hint's Rust line). After O3 a fully unrolled loop is gone; a loop that
// still carries the hint was not unrolled: its trip count is not a
// constant (run-time bounds, or an exit that can leave it early), or its
// unrolled body would be too large. That is an error at
// the hint, asking for a count, rather than a silent slow kernel. Nothing
// is rewritten.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Diagnostics.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include <set>

using namespace llvm;
using namespace oxide;

namespace {

/// The Rust line of the full unroll hint in loop ID `ID`, if it has one.
std::optional<std::string> fullUnrollHint(const MDNode *ID) {
  for (const MDOperand &Op : drop_begin(ID->operands()))
    if (auto *Prop = dyn_cast<MDNode>(Op.get()); Prop && Prop->getNumOperands() == 2)
      if (auto *Name = dyn_cast<MDString>(Prop->getOperand(0)); Name && Name->getString() == UnrollFullMetadata)
        if (auto *Where = dyn_cast<MDString>(Prop->getOperand(1)))
          return Where->getString().str();
  return std::nullopt;
}

} // namespace

PreservedAnalyses CheckUnrollHintsPass::run(Module &M, ModuleAnalysisManager &) {
  std::set<std::string> Reported;
  for (Function &F : M)
    for (BasicBlock &BB : F) {
      MDNode *ID = BB.getTerminator() ? BB.getTerminator()->getMetadata(LLVMContext::MD_loop) : nullptr;
      if (!ID)
        continue;
      std::optional<std::string> Where = fullUnrollHint(ID);
      if (!Where || !Reported.insert(*Where).second)
        continue;
      Diags.error({"this loop cannot be unrolled fully: its trip count is not a constant once the "
                   "kernel is optimised (bounds known only at run time, or a `break`, `return` or "
                   "outer `continue` that can leave it early), or its unrolled body would be too large",
                   *Where,
                   {"in `" + demangleRust(F.getName()) + "`",
                    "give a count instead: `unroll!(4, …)` or `#[unroll(4)]` (a remainder loop "
                    "takes the last iterations), or make the bounds constants"}});
    }
  return PreservedAnalyses::all();
}

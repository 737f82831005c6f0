//===- LowerUnwinding.cpp - No unwinding on the GPU -----------------------===//
//
// rustc's bitcode for a `panic=unwind` build calls through `invoke` so that
// destructors run while a panic unwinds. A GPU thread cannot unwind: on the
// device every panic traps (LowerPanics.cpp), so no call ever takes its unwind
// edge. This pass turns each `invoke` into a plain `call` followed by a branch
// to the normal destination, deletes the landing pads that become unreachable,
// and drops personality functions, which NVPTX cannot emit.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/Local.h"

using namespace llvm;
using namespace oxide;

PreservedAnalyses LowerUnwindingPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    SmallVector<InvokeInst *> Invokes;
    for (BasicBlock &BB : F)
      if (auto *II = dyn_cast<InvokeInst>(BB.getTerminator()))
        Invokes.push_back(II);
    for (InvokeInst *II : Invokes)
      changeToCall(II);
    // rustc also leaves cleanup blocks ending in `resume` that no invoke
    // reaches; they must go with the personality.
    if (!Invokes.empty() || F.hasPersonalityFn())
      removeUnreachableBlocks(F);
    if (F.hasPersonalityFn()) {
      F.setPersonalityFn(nullptr);
      Changed = true;
    }
    Changed |= !Invokes.empty();
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

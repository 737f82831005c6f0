//===- RejectUnavailableStubs.cpp - stubs the target lacks, left by O3 → errors -===//
//
// A kernel may test the target it is built for (`arch::compute_capability()`,
// `arch::has`: constants once LowerIntrinsicStubs has folded them) and use
// an instruction of newer GPUs only behind that test, as CUDA C++ does with
// `__CUDA_ARCH__`. So LowerIntrinsicStubs and LowerWgmma do not refuse a
// stub the target lacks: they point its calls at a placeholder carrying the
// error (UnavailableStubAttr) and the user's line (UnavailableMetadata;
// Legalize/DeferUnavailable.h). O3 deletes the calls the target's
// test rules out; a call that is left can run, and is an error here, once
// per stub, at the first such call, before the backend or ptxas would fail
// on the instruction without naming the Rust code. Nothing is rewritten
// when no call is left; otherwise the link stops.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Diagnostics.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// The user's line recorded on a placeholder's call, if O3 kept it (merging
/// two calls drops what they do not share).
std::string recordedLocation(const CallBase &Call) {
  if (const MDNode *Where = Call.getMetadata(UnavailableMetadata))
    if (Where->getNumOperands() == 1)
      if (auto *Text = dyn_cast<MDString>(Where->getOperand(0)))
        return Text->getString().str();
  return "";
}

} // namespace

PreservedAnalyses RejectUnavailableStubsPass::run(Module &M, ModuleAnalysisManager &) {
  // In the module's order, so that each stub's error is at its first call
  // in the code as written.
  SmallPtrSet<const Function *, 4> Reported;
  for (Function &F : M)
    for (Instruction &I : instructions(F)) {
      auto *Call = dyn_cast<CallBase>(&I);
      const Function *Placeholder = Call ? Call->getCalledFunction() : nullptr;
      if (!Placeholder || !Placeholder->hasFnAttribute(UnavailableStubAttr) ||
          !Reported.insert(Placeholder).second)
        continue;
      auto [Message, Rest] =
          Placeholder->getFnAttribute(UnavailableStubAttr).getValueAsString().split('\n');
      auto [Fix, Test] = Rest.split('\n');
      std::string Where = recordedLocation(*Call);
      std::vector<std::string> Notes;
      if (Where.empty())
        Notes.push_back("in `" + demangleRust(F.getName()) + "`");
      Notes.push_back(Fix.str());
      Notes.push_back(("or keep the call behind `if " + Test +
                       " { … }` (cuda_device::arch), which this target fails")
                          .str());
      Diags.error({Message.str(), Where, Notes});
    }
  return PreservedAnalyses::all();
}

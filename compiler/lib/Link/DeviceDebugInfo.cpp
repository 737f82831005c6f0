//===- DeviceDebugInfo.cpp - The debug info the device code keeps ---------===//
//
// The host's bitcode carries rustc's debug info. By default the device code
// keeps none of it (smaller PTX, nothing for the JIT to carry). For `cargo
// oxide debug` and `sanitize`, OXIDE_DEVICE_DEBUG asks for `lines` (line
// tables: PTX .loc/.file, for cuda-gdb and compute-sanitizer's file:line) or
// `full` (all of it). Anything else warns and strips.
//
// Kept debug info must also be complete: the module flags the backend needs
// are restored, and the functions the passes created get a subprogram, so
// that the lines of the code O3 inlines into them survive. Debug info that
// fails the verifier after all this is stripped with a warning rather than
// failing the link: it only serves the debugger.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/DIBuilder.h"
#include "llvm/IR/DebugInfo.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace oxide;

bool DeviceDebugInfoPass::keepsDebugInfo(StringRef Mode) { return Mode == "full" || Mode == "lines"; }

PreservedAnalyses DeviceDebugInfoPass::run(Module &M, ModuleAnalysisManager &) {
  if (keepsDebugInfo(Mode)) {
    if (Mode == "lines")
      stripNonLineTableDebugInfo(M);
    // The host modules' flags were dropped on the way (linkBitcode, Retarget);
    // without these two the backend emits no .loc/.file. PTX wants DWARF 2.
    if (!M.getModuleFlag("Debug Info Version"))
      M.addModuleFlag(Module::Warning, "Debug Info Version", DEBUG_METADATA_VERSION);
    if (!M.getModuleFlag("Dwarf Version"))
      M.addModuleFlag(Module::Max, "Dwarf Version", uint32_t(2));
    // Functions the passes create (the kernel entry wrappers around
    // `<kernel>.oxide.body`) have no DISubprogram, and the backend emits .loc
    // only inside a function that has one: once O3 inlines the body into
    // the wrapper, its lines would be lost. Give each such function an
    // artificial subprogram next to the first one it calls or points to,
    // and its unlocated instructions that subprogram's line, so inlined
    // code gets proper inlinedAt chains.
    for (Function &F : M) {
      if (F.isDeclaration() || F.getSubprogram())
        continue;
      DISubprogram *Ref = nullptr;
      for (Instruction &I : instructions(F)) {
        if (const DILocation *DL = I.getDebugLoc().get())
          Ref = DL->getInlinedAtScope()->getSubprogram();
        else if (auto *CB = dyn_cast<CallBase>(&I))
          if (Function *Callee = CB->getCalledFunction())
            Ref = Callee->getSubprogram();
        if (Ref)
          break;
      }
      if (!Ref || !Ref->getUnit())
        continue;
      DIBuilder DIB(M, /*AllowUnresolved=*/false, Ref->getUnit());
      DISubprogram *SP = DIB.createFunction(
          Ref->getFile(), Ref->getName(), F.getName(), Ref->getFile(), Ref->getLine(),
          DIB.createSubroutineType(DIB.getOrCreateTypeArray({})), Ref->getLine(),
          DINode::FlagArtificial,
          DISubprogram::SPFlagDefinition | DISubprogram::SPFlagLocalToUnit);
      DIB.finalizeSubprogram(SP);
      F.setSubprogram(SP);
      for (Instruction &I : instructions(F)) {
        const DILocation *DL = I.getDebugLoc().get();
        if (!DL || DL->getInlinedAtScope()->getSubprogram() != SP)
          I.setDebugLoc(DILocation::get(M.getContext(), DL ? DL->getLine() : SP->getLine(),
                                        DL ? DL->getColumn() : 0, SP));
      }
    }
    bool BrokenDebugInfo = false;
    if (verifyModule(M, nullptr, &BrokenDebugInfo) || BrokenDebugInfo) {
      errs() << "oxide-link: warning: OXIDE_DEVICE_DEBUG=" << Mode
             << ": the device debug info is inconsistent; stripped\n";
      StripDebugInfo(M);
    }
    return PreservedAnalyses::none();
  }
  if (!Mode.empty() && Mode != "0" && Mode != "none")
    errs() << "oxide-link: warning: OXIDE_DEVICE_DEBUG=" << Mode
           << " is not lines or full; device debug info stripped\n";
  StripDebugInfo(M);
  return PreservedAnalyses::none();
}

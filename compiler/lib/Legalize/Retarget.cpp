//===- Retarget.cpp - Host bitcode becomes NVPTX bitcode ------------------===//
//
// rustc compiled every function for x86_64. Type layouts agree with NVPTX (both
// are 64-bit little-endian with the same integer and float alignments), so the
// IR itself carries over; what does not is the target description around it:
//   * the module's triple and data layout;
//   * host-only attributes (target-cpu, target-features, probe-stack,
//     uwtable, nonlazybind) and module flags (PIC/PIE levels), which would
//     make NVPTX codegen or the libdevice link fail;
//   * comdats, which PTX has no notion of;
//   * `llvm.used` lists that keep host-only statics alive.
// And it adds what SIMT execution needs: every function and every call is
// marked `convergent`, as clang does for CUDA, so that no optimisation may
// make a barrier or warp collective depend on more control flow than the
// source had. Intrinsics are left to their own attributes, and so are the
// markers (Stubs.def kind Marker), pure declarations that only carry
// operands to a pass after O3, and so is the memory-free inline asm of
// Stubs.def kind PureAsm (f16 arithmetic), which no thread waits on.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/TargetParser/Triple.h"

using namespace llvm;
using namespace oxide;

namespace {

void stripHostAttributes(Function &F) {
  for (StringRef Kind : {"target-cpu", "target-features", "tune-cpu", "probe-stack",
                         "frame-pointer", "stack-protector-buffer-size"})
    F.removeFnAttr(Kind);
  for (Attribute::AttrKind Kind :
       {Attribute::UWTable, Attribute::NonLazyBind, Attribute::SanitizeAddress,
        Attribute::SanitizeThread, Attribute::SanitizeMemory, Attribute::StackProtect,
        Attribute::StackProtectReq, Attribute::StackProtectStrong})
    F.removeFnAttr(Kind);
  F.setPersonalityFn(nullptr);
}

/// Intrinsics and markers keep the attributes they were declared with.
bool keepsOwnAttributes(const Function &F) { return F.isIntrinsic() || F.hasFnAttribute(MarkerAttr); }

/// Inline asm that touches no memory (LowerIntrinsicStubs' `PureAsm`: f16
/// arithmetic) is a function of its operands, as an intrinsic is.
bool isPureAsm(const CallBase &Call) { return Call.isInlineAsm() && Call.doesNotAccessMemory(); }

void markConvergent(Function &F) {
  if (keepsOwnAttributes(F))
    return;
  F.addFnAttr(Attribute::Convergent);
  for (Instruction &I : instructions(F))
    if (auto *Call = dyn_cast<CallBase>(&I))
      if (!isPureAsm(*Call) &&
          (!Call->getCalledFunction() || !keepsOwnAttributes(*Call->getCalledFunction())))
        Call->addFnAttr(Attribute::Convergent);
}

} // namespace

PreservedAnalyses RetargetPass::run(Module &M, ModuleAnalysisManager &) {
  M.setTargetTriple(Triple(DeviceTriple));
  M.setDataLayout(DeviceDataLayout);

  if (NamedMDNode *Flags = M.getModuleFlagsMetadata())
    M.eraseNamedMetadata(Flags);
  M.addModuleFlag(Module::Override, "nvvm-reflect-ftz", uint32_t(0));

  for (const char *Name : {"llvm.used", "llvm.compiler.used"})
    if (GlobalVariable *GV = M.getGlobalVariable(Name))
      GV->eraseFromParent();

  for (GlobalObject &GO : M.global_objects())
    GO.setComdat(nullptr);
  M.getComdatSymbolTable().clear();

  for (Function &F : M) {
    stripHostAttributes(F);
    markConvergent(F);
  }
  return PreservedAnalyses::none();
}

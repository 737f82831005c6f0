//===- SelectReachable.cpp - Keep what the kernels reach ------------------===//
//
// The device module starts as the whole program: host `main`, std glue, every
// function of every crate. Only the kernel entries are device code; everything
// else either is reached from them or must vanish before anything looks for
// unsupported constructs (a `println!` in host code is not an error).
//
// This pass makes every symbol except the `ptx_kernel` entries, the
// functions exported to CUDA C++ (MarkDeviceExports), and the
// globals the host writes (the panic record pointer, constant memory,
// device globals)
// internal and lets GlobalDCE delete what no entry reaches.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/IPO/Internalize.h"

using namespace llvm;
using namespace oxide;

PreservedAnalyses SelectReachablePass::run(Module &M, ModuleAnalysisManager &MAM) {
  internalizeModule(M, [](const GlobalValue &GV) {
    // The host writes these by name: the panic record pointer,
    // #[constant] statics (constant memory) and #[device_global] statics
    // (global memory, externally initialised: AssignAddressSpaces made them).
    const auto *Var = dyn_cast<GlobalVariable>(&GV);
    if (GV.getName() == PanicRecordGlobal || GV.getAddressSpace() == 4 ||
        (Var && Var->getAddressSpace() == 1 && Var->isExternallyInitialized()))
      return true;
    const auto *F = dyn_cast<Function>(&GV);
    return F && (F->getCallingConv() == CallingConv::PTX_Kernel ||
                 F->hasFnAttribute(DeviceExportAttr));
  });
  GlobalDCEPass().run(M, MAM);
  return PreservedAnalyses::none();
}

//===- MarkDeviceExports.cpp - #[device] functions CUDA C++ may call ------===//
//
// `#[device] #[no_mangle] pub extern "C" fn f(..)` exports f to CUDA C++:
// nvcc-compiled code links against oxide's PTX and calls it. No kernel need
// reach it, so SelectReachable would drop it; #[device] therefore writes a
// marker static beside it, `DeviceExportPrefix` + the name, holding the
// function's address. This pass gives each marked function DeviceExportAttr
// (SelectReachable keeps it, external; RejectUnsupported checks everything
// it reaches as it checks a kernel's code) and deletes the markers, which are
// host data.
//
// The function keeps Rust's semantics as any device function does; the C
// calling convention is what makes its PTX prototype the one nvcc expects.
// A marker naming something that is not a defined function with the C
// calling convention is an error: the macro checks the signature, this is
// the last line of defence for hand-written markers.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

PreservedAnalyses MarkDeviceExportsPass::run(Module &M, ModuleAnalysisManager &) {
  std::vector<GlobalVariable *> Markers;
  for (GlobalVariable &GV : M.globals())
    if (GV.getName().starts_with(DeviceExportPrefix))
      Markers.push_back(&GV);
  if (Markers.empty())
    return PreservedAnalyses::all();
  for (GlobalVariable *GV : Markers) {
    StringRef Name = GV->getName().drop_front(DeviceExportPrefix.size());
    // rustc writes a static with a relocation as a packed struct of it.
    Constant *Init = GV->hasInitializer() ? GV->getInitializer() : nullptr;
    if (Init && Init->getType()->isAggregateType())
      Init = Init->getAggregateElement(0u);
    auto *F = Init ? dyn_cast<Function>(Init->stripPointerCasts()) : nullptr;
    if (!F || F->isDeclaration() || F->getName() != Name)
      Diags.error({"the device export marker `" + GV->getName().str() +
                       "` does not hold the address of the function `" + Name.str() + "`",
                   "",
                   {"help: export a device function with `#[device] #[no_mangle] pub extern "
                    "\"C\" fn " + Name.str() + "(..)`"}});
    else
      F->addFnAttr(DeviceExportAttr);
  }
  // Out of llvm.used / llvm.compiler.used first, then gone.
  for (StringRef Used : {"llvm.used", "llvm.compiler.used"}) {
    GlobalVariable *U = M.getGlobalVariable(Used);
    if (!U || !U->hasInitializer())
      continue;
    auto *Init = dyn_cast<ConstantArray>(U->getInitializer());
    if (!Init)
      continue;
    std::vector<Constant *> Kept;
    for (Use &Op : Init->operands())
      if (!cast<Constant>(Op.get())->stripPointerCasts()->getName().starts_with(DeviceExportPrefix))
        Kept.push_back(cast<Constant>(Op.get()));
    U->eraseFromParent();
    if (!Kept.empty()) {
      auto *Ty = ArrayType::get(Kept.front()->getType(), Kept.size());
      auto *NewU = new GlobalVariable(M, Ty, false, GlobalValue::AppendingLinkage,
                                      ConstantArray::get(Ty, Kept), Used);
      NewU->setSection("llvm.metadata");
    }
  }
  for (GlobalVariable *GV : Markers) {
    GV->replaceAllUsesWith(PoisonValue::get(GV->getType()));
    GV->eraseFromParent();
  }
  return PreservedAnalyses::none();
}

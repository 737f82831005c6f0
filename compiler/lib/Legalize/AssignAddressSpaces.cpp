//===- AssignAddressSpaces.cpp - Statics that live in GPU memory spaces ---===//
//
// Rust has no address spaces, so `cuda-device` marks statics that belong in a
// GPU memory space by their link section (docs/ABI.md §6):
//   .oxide.shared   `shared!` arrays → addrspace(3), one allocation per
//                   declaration site, uninitialised (PTX `.shared`);
//   the static `__oxide_dynamic_shared` → the kernel's dynamic shared memory,
//                   an `extern` addrspace(3) array of unknown size (CUDA's
//                   `extern __shared__`), sized by the launch;
//   .oxide.constant `#[constant]` statics → addrspace(4) (PTX `.const`) with
//                   their Rust initialiser, visible under a PTX-legal name so
//                   the host can overwrite them before a launch; each is
//                   listed in `oxide.constants` for the kernel table;
//   .oxide.global   `#[device_global]` statics → addrspace(1) (PTX `.global`)
//                   with their Rust initialiser: one mutable copy that every
//                   kernel of the module shares for the module's lifetime,
//                   visible and listed like a constant so the host can read
//                   and write it between launches.
// This pass moves each such static into its address space and rewrites its
// uses through an addrspacecast to a generic pointer, which is what the Rust
// code holds; the NVPTX backend's address-space inference then turns most
// accesses into `ld.shared`/`st.shared`.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

constexpr unsigned GlobalAddressSpace = 1;
constexpr unsigned SharedAddressSpace = 3;
constexpr unsigned ConstantAddressSpace = 4;

/// Lists a constant or device global in `oxide.constants`: !{ptr addrspace(4) @g, !"host symbol"}.
void recordConstant(Module &M, GlobalVariable *GV, StringRef HostSymbol) {
  LLVMContext &Ctx = M.getContext();
  Metadata *Ops[] = {ValueAsMetadata::get(GV), MDString::get(Ctx, HostSymbol)};
  M.getOrInsertNamedMetadata(ConstantsMetadata)->addOperand(MDNode::get(Ctx, Ops));
}

/// Replaces `Old` by a new global in address space `AS` built by `Make`.
void moveToAddressSpace(GlobalVariable &Old, GlobalVariable *New) {
  New->takeName(&Old);
  New->setAlignment(Old.getAlign());
  Constant *Generic = ConstantExpr::getAddrSpaceCast(New, Old.getType());
  Old.replaceAllUsesWith(Generic);
  Old.eraseFromParent();
}

} // namespace

PreservedAnalyses AssignAddressSpacesPass::run(Module &M, ModuleAnalysisManager &) {
  SmallVector<GlobalVariable *> Shared, Constants, Globals;
  GlobalVariable *Dynamic = nullptr;
  for (GlobalVariable &GV : M.globals()) {
    if (GV.getName() == DynamicSharedGlobal)
      Dynamic = &GV;
    else if (GV.hasSection() && GV.getSection().starts_with(SharedSection))
      Shared.push_back(&GV);
    else if (GV.hasSection() && GV.getSection() == ConstantSection && GV.hasInitializer())
      Constants.push_back(&GV);
    else if (GV.hasSection() && GV.getSection() == GlobalSection && GV.hasInitializer())
      Globals.push_back(&GV);
  }
  // Both kinds keep their initialiser, are written by the host (so nothing
  // may fold their loads) and are found by the host under a PTX-legal name.
  auto moveNamed = [&](GlobalVariable *GV, unsigned AddressSpace) {
    std::string Host = GV->getName().str();
    auto *New = new GlobalVariable(M, GV->getValueType(), false, GlobalValue::ExternalLinkage,
                                   GV->getInitializer(), "", nullptr,
                                   GlobalValue::NotThreadLocal, AddressSpace);
    New->setExternallyInitialized(true); // the host may overwrite it
    moveToAddressSpace(*GV, New);
    New->setName(ptxIdentifier(Host));
    recordConstant(M, New, Host);
  };
  for (GlobalVariable *GV : Constants)
    moveNamed(GV, ConstantAddressSpace);
  for (GlobalVariable *GV : Globals)
    moveNamed(GV, GlobalAddressSpace);
  for (GlobalVariable *GV : Shared) {
    auto *New = new GlobalVariable(M, GV->getValueType(), false, GlobalValue::InternalLinkage,
                                   UndefValue::get(GV->getValueType()), "", nullptr,
                                   GlobalValue::NotThreadLocal, SharedAddressSpace);
    moveToAddressSpace(*GV, New);
  }
  if (Dynamic) {
    Type *Bytes = ArrayType::get(Type::getInt8Ty(M.getContext()), 0);
    auto *New = new GlobalVariable(M, Bytes, false, GlobalValue::ExternalLinkage, nullptr, "",
                                   nullptr, GlobalValue::NotThreadLocal, SharedAddressSpace);
    MaybeAlign A = Dynamic->getAlign();
    moveToAddressSpace(*Dynamic, New);
    New->setAlignment(std::max(A.valueOrOne(), Align(16)));
  }
  return (Shared.empty() && Constants.empty() && Globals.empty() && !Dynamic) ? PreservedAnalyses::all()
                                                            : PreservedAnalyses::none();
}

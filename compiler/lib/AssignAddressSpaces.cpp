//===- AssignAddressSpaces.cpp - Statics that live in GPU memory spaces ---===//
//
// Rust has no address spaces, so `cuda-device` marks statics that belong in a
// GPU memory space by their link section (docs/ABI.md §6):
//   .oxide.shared   `shared!` arrays → addrspace(3), one allocation per
//                   declaration site, uninitialised (PTX `.shared`);
//   the static `__oxide_dynamic_shared` → the kernel's dynamic shared memory,
//                   an `extern` addrspace(3) array of unknown size (CUDA's
//                   `extern __shared__`), sized by the launch.
// This pass moves each such static into its address space and rewrites its
// uses through an addrspacecast to a generic pointer, which is what the Rust
// code holds; the NVPTX backend's address-space inference then turns most
// accesses into `ld.shared`/`st.shared`.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

constexpr unsigned SharedAddressSpace = 3;

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
  SmallVector<GlobalVariable *> Shared;
  GlobalVariable *Dynamic = nullptr;
  for (GlobalVariable &GV : M.globals()) {
    if (GV.getName() == DynamicSharedGlobal)
      Dynamic = &GV;
    else if (GV.hasSection() && GV.getSection().starts_with(SharedSection))
      Shared.push_back(&GV);
  }
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
  return (Shared.empty() && !Dynamic) ? PreservedAnalyses::all() : PreservedAnalyses::none();
}

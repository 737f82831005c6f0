//===- LowerSharedAddress.cpp - shared_address stub → 32-bit .shared address ===//
//
// mbarrier, TMA and wgmma name shared memory by its 32-bit address in the
// .shared window, not by a generic pointer. `cuda_device::mbarrier` gets it
// with `__oxide_stub_shared_address(ptr)`; this pass rewrites each call into
//   trunc (ptrtoint (addrspacecast ptr to ptr addrspace(3)) to i64) to i32
// which NVPTX emits as `cvta.to.shared` (or, once AssignAddressSpaces has put
// the static in addrspace(3) and O3 folded the casts, as the symbol's address
// itself: `mov.u32 %r, SMEM;`). The pointer must point into shared memory
// (the Rust wrappers take `shared!` statics or dynamic shared memory).
// Runs before LowerIntrinsicStubs, which deletes the leftover Special stubs.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

/// The address space of PTX `.shared` in NVPTX.
static constexpr unsigned SharedAddressSpace = 3;

PreservedAnalyses LowerSharedAddressPass::run(Module &M, ModuleAnalysisManager &) {
  Function *F = M.getFunction(stubSymbol("shared_address"));
  if (!F)
    return PreservedAnalyses::all();
  SmallVector<CallInst *> Calls;
  for (User *U : F->users())
    if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == F)
      Calls.push_back(C);
  for (CallInst *C : Calls) {
    IRBuilder<> B(C);
    Value *Shared = B.CreateAddrSpaceCast(C->getArgOperand(0),
                                          PointerType::get(M.getContext(), SharedAddressSpace));
    // Through i64 and a truncation: the data layout gives shared pointers
    // 64 bits (the .shared window's addresses fit in 32).
    Value *Address = B.CreateTrunc(B.CreatePtrToInt(Shared, B.getInt64Ty()), C->getType());
    C->replaceAllUsesWith(Address);
    C->eraseFromParent();
  }
  return Calls.empty() ? PreservedAnalyses::all() : PreservedAnalyses::none();
}

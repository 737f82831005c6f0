//===- RecordKernelDimensions.cpp - Which thread indices a kernel writes by ===//
//
// After O3, appends to each `oxide.kernels` entry a fourth operand, `i64
// flags` (KernelIndexes1d/2d/3d of Abi.def): which kinds of ThreadIndex the
// entry can hand `DisjointSlice::get_mut`, read from the markers get_mut
// leaves (DisjointIndexMarkers.h) in every function the entry reaches. The
// host refuses a launch whose grid or block extends in a dimension one of
// those kinds ignores (a 1-D index with y or z > 1, a 2-D one with z > 1):
// its threads would share indices, and two `&mut` from get_mut would alias
// (docs/ABI.md §3).
//
// It runs on the optimised module so that get_mut calls the optimiser
// deleted do not count. A call through a pointer counts as a call of every
// function whose address is taken, so a marker the entry might reach is
// never missed; counting one it cannot reach only makes the host stricter.
//===----------------------------------------------------------------------===//
#include "DisjointIndexMarkers.h"
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

PreservedAnalyses RecordKernelDimensionsPass::run(Module &M, ModuleAnalysisManager &) {
  NamedMDNode *MD = M.getNamedMetadata(KernelsMetadata);
  if (!MD)
    return PreservedAnalyses::all();
  LLVMContext &Ctx = M.getContext();
  for (unsigned I = 0; I < MD->getNumOperands(); ++I) {
    MDNode *N = MD->getOperand(I);
    auto *Entry = mdconst::dyn_extract_or_null<Function>(N->getOperand(0));
    if (!Entry || N->getNumOperands() != 3)
      continue;
    uint64_t Flags = 0;
    for (auto [Call, Kind] : markerCallsIn(functionsReachedFrom(*Entry)))
      Flags |= kernelFlag(Kind);
    Metadata *Ops[] = {N->getOperand(0), N->getOperand(1), N->getOperand(2),
                       ConstantAsMetadata::get(ConstantInt::get(Type::getInt64Ty(Ctx), Flags))};
    MD->setOperand(I, MDNode::get(Ctx, Ops));
  }
  return PreservedAnalyses::all();
}

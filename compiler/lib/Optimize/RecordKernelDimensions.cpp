//===- RecordKernelDimensions.cpp - Which thread coordinates a kernel reads ===//
//
// After O3, appends to each `oxide.kernels` entry a fourth operand, `i64
// flags` (KernelReadsX, KernelReadsYZ of Abi.def): which thread coordinates
// the entry can read. The host refuses a 2-D/3-D launch of a kernel that
// reads only x coordinates: its threads would share indices, and two `&mut`
// from DisjointSlice::get_mut would alias (docs/ABI.md §3).
//
// It runs on the optimised module so that reads the optimiser deleted do not
// count; a read it cannot see through (inline asm, an indirect call) counts
// as reading every coordinate, which only makes the host stricter.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// The KernelFlags bit an intrinsic that reads a special register sets.
uint64_t coordinateBit(const Function &Callee) {
  StringRef Name = Callee.getName();
  if (!Name.consume_front("llvm.nvvm.read.ptx.sreg."))
    return 0;
  if (!Name.consume_front("tid.") && !Name.consume_front("ctaid."))
    return 0;
  if (Name == "x")
    return KernelReadsX;
  if (Name == "y" || Name == "z")
    return KernelReadsYZ;
  return 0;
}

/// The coordinates `Entry` can read, through every function it reaches.
/// Inline asm and indirect calls might read any of them. Reads of y/z inside
/// a `noreturn` function do not count: those are the panic paths
/// (LowerPanics), which read every coordinate to say which thread panicked,
/// and nothing a thread does before it traps can make a later launch shape
/// safe. Leaving a read out only makes the host stricter.
uint64_t coordinatesReadFrom(Function &Entry) {
  uint64_t Flags = 0;
  SmallVector<Function *> Work{&Entry};
  SmallPtrSet<Function *, 32> Seen{&Entry};
  while (!Work.empty()) {
    Function *F = Work.pop_back_val();
    for (Instruction &I : instructions(*F)) {
      auto *Call = dyn_cast<CallBase>(&I);
      if (!Call)
        continue;
      if (Call->isInlineAsm()) {
        Flags |= KernelReadsYZ;
        continue;
      }
      Function *Callee = Call->getCalledFunction();
      if (!Callee) {
        Flags |= KernelReadsYZ;
        continue;
      }
      uint64_t Bit = coordinateBit(*Callee);
      if (Bit == KernelReadsYZ && F->doesNotReturn())
        Bit = 0;
      Flags |= Bit;
      if (!Callee->isDeclaration() && Seen.insert(Callee).second)
        Work.push_back(Callee);
    }
  }
  return Flags;
}

} // namespace

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
    Metadata *Ops[] = {N->getOperand(0), N->getOperand(1), N->getOperand(2),
                       ConstantAsMetadata::get(ConstantInt::get(
                           Type::getInt64Ty(Ctx), coordinatesReadFrom(*Entry)))};
    MD->setOperand(I, MDNode::get(Ctx, Ops));
  }
  return PreservedAnalyses::all();
}

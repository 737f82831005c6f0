//===- RecordReadOnlyParams.cpp - Which entry params hold read-only pointers ===//
//
// A kernel parameter `&[T]` with `T` free of interior mutability (`Freeze`)
// promises that nothing writes the slice while the kernel runs. rustc states
// this where the entry wrapper calls the kernel: the slice's data pointer is
// passed as `ptr noalias readonly` (it leaves both out when `T` contains an
// `UnsafeCell`, e.g. `&[AtomicU32]`). The PTX entry receives the slice as
// bytes of a byval parameter, and after inlining the attribute is gone, so
// NVPTX reads such slices with plain `ld.global` where nvcc, for a
// `const T *__restrict__`, emits the non-coherent `ld.global.nc`.
//
// This pass keeps the fact: for each PTX entry it finds, in its
// `.oxide.body` wrapper (BuildKernelEntries.cpp), every pointer that is
// loaded straight from parameter `i` at byte offset `o`, used only as a
// `noalias readonly` argument of a call, and records the pair as `i:o` in
// the entry's string attribute `oxide-readonly-pointers`. Since the entry does
// nothing but that call, the memory is unchanged for the whole entry.
// TagInvariantLoads.cpp uses the attribute after O3. Nothing else changes.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// The wrapper an entry calls with its own parameters, or null.
Function *wrapperOf(Function &Entry) {
  for (Instruction &I : instructions(Entry)) {
    auto *Call = dyn_cast<CallInst>(&I);
    Function *Callee = Call ? Call->getCalledFunction() : nullptr;
    if (!Callee || Callee->isDeclaration() || Callee->arg_size() != Entry.arg_size())
      continue;
    if (all_of(Entry.args(),
               [&](Argument &A) { return Call->getArgOperand(A.getArgNo()) == &A; }))
      return Callee;
  }
  return nullptr;
}

/// Whether every use of `V` is as an argument that `Call` promises neither to
/// write through nor to share with another pointer.
bool onlyReadOnlyNoAliasArgument(const Value &V) {
  if (V.use_empty())
    return false;
  for (const Use &U : V.uses()) {
    auto *Call = dyn_cast<CallBase>(U.getUser());
    if (!Call || !Call->isArgOperand(&U))
      return false;
    unsigned No = Call->getArgOperandNo(&U);
    if (!Call->paramHasAttr(No, Attribute::NoAlias) || !Call->onlyReadsMemory(No))
      return false;
  }
  return true;
}

/// "i:o" for a pointer loaded from parameter `i` of `Wrapper` at byte offset `o`.
std::optional<std::string> paramSlot(const LoadInst &Load, const Function &Wrapper) {
  if (!Load.isSimple() || !Load.getType()->isPointerTy())
    return std::nullopt;
  const DataLayout &DL = Wrapper.getDataLayout();
  APInt Offset(DL.getIndexTypeSizeInBits(Load.getPointerOperandType()), 0);
  const Value *Base =
      Load.getPointerOperand()->stripAndAccumulateConstantOffsets(DL, Offset, true);
  auto *Param = dyn_cast<Argument>(Base);
  if (!Param || Param->getParent() != &Wrapper || Offset.isNegative())
    return std::nullopt;
  return std::to_string(Param->getArgNo()) + ":" + std::to_string(Offset.getZExtValue());
}

} // namespace

PreservedAnalyses RecordReadOnlyParamsPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &Entry : M) {
    if (Entry.getCallingConv() != CallingConv::PTX_Kernel || Entry.isDeclaration())
      continue;
    Function *Wrapper = wrapperOf(Entry);
    if (!Wrapper)
      continue;
    std::string Slots;
    for (Instruction &I : instructions(*Wrapper)) {
      auto *Load = dyn_cast<LoadInst>(&I);
      if (!Load || !onlyReadOnlyNoAliasArgument(*Load))
        continue;
      if (std::optional<std::string> Slot = paramSlot(*Load, *Wrapper))
        Slots += (Slots.empty() ? "" : " ") + *Slot;
    }
    if (Slots.empty())
      continue;
    Entry.addFnAttr(ReadOnlyPointersAttr, Slots);
    Changed = true;
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

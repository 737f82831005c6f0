//===- TagInvariantLoads.cpp - Read-only slices → ld.global.nc ------------===//
//
// Runs after O3, when each kernel's body has been inlined into its PTX entry.
// RecordReadOnlyParams.cpp left on the entry the attribute
// `oxide-readonly-pointers`: the parameter slots (`param:byte offset`) that
// hold the data pointer of a `&[T]` nothing writes while the kernel runs.
// This pass marks `!invariant.load` every load of the entry whose address,
// through GEPs, casts, phis and selects, can only come from such a pointer
// (a load of the slot from the byval parameter), then drops the attribute.
//
// NVPTX emits an invariant load from global memory as `ld.global.nc`: the
// read-only data path, as nvcc does for `const T *__restrict__`.
// (NVPTXTagInvariantLoads does the same only for pointers that are
// `noalias readonly` kernel arguments themselves; ours arrive inside byval
// parameter bytes, and NVPTXLowerArgs puts them in the global space.)
// Loads that may read anything else keep their plain form.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include <set>

using namespace llvm;
using namespace oxide;

namespace {

using Slot = std::pair<unsigned, uint64_t>;

/// The slots listed in `oxide-readonly-pointers` ("0:0 2:16").
std::set<Slot> readOnlySlots(const Function &F) {
  std::set<Slot> Slots;
  StringRef List = F.getFnAttribute(ReadOnlyPointersAttr).getValueAsString();
  SmallVector<StringRef> Items;
  List.split(Items, ' ', -1, false);
  for (StringRef Item : Items) {
    auto [Param, Offset] = Item.split(':');
    unsigned P;
    uint64_t O;
    if (!Param.getAsInteger(10, P) && !Offset.getAsInteger(10, O))
      Slots.insert({P, O});
  }
  return Slots;
}

class InvariantLoadTagger {
public:
  InvariantLoadTagger(Function &Entry) : Entry(Entry), Slots(readOnlySlots(Entry)) {}

  bool run() {
    bool Changed = false;
    for (Instruction &I : instructions(Entry)) {
      auto *Load = dyn_cast<LoadInst>(&I);
      if (!Load || !Load->isSimple() || Load->hasMetadata(LLVMContext::MD_invariant_load))
        continue;
      if (!readsOnlyReadOnlySlices(Load->getPointerOperand()))
        continue;
      Load->setMetadata(LLVMContext::MD_invariant_load, MDNode::get(Entry.getContext(), {}));
      Changed = true;
    }
    return Changed;
  }

private:
  Function &Entry;
  std::set<Slot> Slots;

  bool readsOnlyReadOnlySlices(const Value *Ptr) const {
    SmallVector<const Value *, 8> Objects;
    getUnderlyingObjects(Ptr, Objects);
    return !Objects.empty() && all_of(Objects, [&](const Value *V) { return isSlotLoad(V); });
  }

  /// Whether `V` is a load of a listed slot from the entry's byval parameter.
  bool isSlotLoad(const Value *V) const {
    auto *Load = dyn_cast<LoadInst>(V);
    if (!Load || !Load->isSimple())
      return false;
    const DataLayout &DL = Entry.getDataLayout();
    APInt Offset(DL.getIndexTypeSizeInBits(Load->getPointerOperandType()), 0);
    const Value *Base =
        Load->getPointerOperand()->stripAndAccumulateConstantOffsets(DL, Offset, true);
    auto *Param = dyn_cast<Argument>(Base);
    return Param && Param->getParent() == &Entry && Param->hasByValAttr() &&
           !Offset.isNegative() && Slots.count({Param->getArgNo(), Offset.getZExtValue()});
  }
};

} // namespace

PreservedAnalyses TagInvariantLoadsPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &F : M) {
    if (!F.hasFnAttribute(ReadOnlyPointersAttr))
      continue;
    Changed |= InvariantLoadTagger(F).run();
    F.removeFnAttr(ReadOnlyPointersAttr);
    Changed = true;
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

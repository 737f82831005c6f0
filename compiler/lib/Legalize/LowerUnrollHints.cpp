//===- LowerUnrollHints.cpp - unroll markers → llvm.loop.unroll metadata --===//
//
// `unroll!(N, LOOP)` and `#[unroll(N)]` (cuda-macros) start the loop's body
// with a call of the stub `unroll(N)` (Stubs.def, kind Special): 0 for a
// full unroll, 1 for none, N for a count. Loops are still loops in the IR
// rustc emitted, before any optimisation: this pass gives the innermost
// loop holding each marker the loop metadata clang gives a `#pragma
// unroll` (`llvm.loop.unroll.full`, `.disable` or `.count N`) on its
// latches, which LLVM's loop passes carry through O3 to the unroller, and
// deletes the marker. A full unroll also records the hint's Rust line
// (`oxide.unroll.full`), for CheckUnrollHints to name the loop if O3 could
// not unroll it.
//
// Why Rust's semantics hold: loop metadata only asks the unroller to copy
// the loop's body, which keeps its iterations and their order; a marker
// outside any loop (a body that always leaves its loop) asks for nothing.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Diagnostics.h"
#include "oxide/Passes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// The loop's ID with the hint's unroll property, keeping the properties
/// it had that are not about unrolling.
MDNode *hintedLoopID(Loop &L, unsigned Count, const std::string &Where) {
  LLVMContext &Ctx = L.getHeader()->getContext();
  SmallVector<Metadata *> Ops{nullptr};
  // The old ID's properties but its unroll hints, which the new one replaces.
  if (MDNode *Old = L.getLoopID()) {
    for (const MDOperand &Op : drop_begin(Old->operands())) {
      auto *Prop = dyn_cast<MDNode>(Op.get());
      if (!Prop || Prop->getNumOperands() == 0)
        continue;
      auto *Name = dyn_cast<MDString>(Prop->getOperand(0));
      bool UnrollHint = Name && (Name->getString().starts_with("llvm.loop.unroll.") ||
                                 Name->getString() == UnrollFullMetadata);
      if (!UnrollHint)
        Ops.push_back(Prop);
    }
  }
  if (Count == 0) {
    Ops.push_back(MDNode::get(Ctx, MDString::get(Ctx, "llvm.loop.unroll.full")));
    Ops.push_back(MDNode::get(Ctx, {MDString::get(Ctx, UnrollFullMetadata), MDString::get(Ctx, Where)}));
  } else if (Count == 1) {
    Ops.push_back(MDNode::get(Ctx, MDString::get(Ctx, "llvm.loop.unroll.disable")));
  } else {
    Ops.push_back(MDNode::get(
        Ctx, {MDString::get(Ctx, "llvm.loop.unroll.count"),
              ConstantAsMetadata::get(ConstantInt::get(Type::getInt32Ty(Ctx), Count))}));
  }
  MDNode *ID = MDNode::getDistinct(Ctx, Ops);
  ID->replaceOperandWith(0, ID);
  return ID;
}

} // namespace

PreservedAnalyses LowerUnrollHintsPass::run(Module &M, ModuleAnalysisManager &) {
  Function *Stub = M.getFunction(stubSymbol("unroll"));
  if (!Stub)
    return PreservedAnalyses::all();
  MapVector<Function *, SmallVector<CallInst *>> Markers;
  for (User *U : Stub->users())
    if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == Stub)
      Markers[C->getFunction()].push_back(C);
  for (auto &[F, Calls] : Markers) {
    DominatorTree DT(*F);
    LoopInfo LI(DT);
    for (CallInst *C : Calls) {
      auto *Count = dyn_cast<ConstantInt>(C->getArgOperand(0));
      if (Loop *L = LI.getLoopFor(C->getParent()); L && Count) {
        SourceLoc Where = sourceLocation(C);
        L->setLoopID(hintedLoopID(*L, Count->getZExtValue(), Where.empty() ? "" : Where.str()));
      }
      C->eraseFromParent();
    }
  }
  return Markers.empty() ? PreservedAnalyses::all() : PreservedAnalyses::none();
}

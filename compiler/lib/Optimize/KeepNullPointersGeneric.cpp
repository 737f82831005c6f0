//===- KeepNullPointersGeneric.cpp - Null stays null next to stack addresses ===//
//
// Rust's niche layout makes `None` of an `Option<&T>` a null pointer, so a
// phi or select often joins the address of a stack buffer with null (core's
// float formatting does: the Grisu result is `Option<&[u8]>` into a local
// buffer). The NVPTX backend's InferAddressSpaces then gives the phi the
// local address space, turning the null into `cvta.to.local` of 0 and the
// phi's value back into a generic pointer with `cvta.local` before the
// null check. PTX leaves `cvta.to.local` of an address outside the local
// window undefined, and on the GPU the round trip does not give null back:
// the `None` path is taken as `Some`, and the read through the pointer
// faults or returns whatever is there.
//
// The same happens to a null check of such a pointer: a debug build's
// `slice::from_raw_parts` or `ptr::read` of shared memory checks that the
// pointer is not null, and the inference compares it in the shared space
// with `cvta.to.shared` of 0.
//
// This pass hands such a phi, select or comparison a null the backend
// cannot see through: `inttoptr` of an inline-asm `mov.b64 $0, 0` (one per
// function, after its entry's stack slots). Its value is null as before, so
// the program means the same, but the inference keeps the phi or the
// comparison generic, where null is null. Only phis, selects and
// comparisons that meet null with a pointer into the stack or shared memory
// are touched; runs after O3, which would fold the opaque null away.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// Whether the backend may infer a non-generic address space for `V`: it
/// is based on a stack slot or on a shared or local variable.
bool pointsOutsideGenericWindow(Value *V) {
  SmallVector<const Value *> Bases;
  // Through phis, selects and address-space casts: a shared variable is
  // seen in its own address space.
  getUnderlyingObjects(V, Bases);
  return any_of(Bases, [](const Value *Base) {
    if (isa<AllocaInst>(Base))
      return true;
    unsigned AS = Base->getType()->isPointerTy() ? Base->getType()->getPointerAddressSpace() : 0;
    return AS == 3 || AS == 5;
  });
}

/// The operands of a generic-pointer phi, select or comparison that are the
/// constant null, if another operand points into the stack or shared memory.
SmallVector<Use *> nullsBesideLocalPointers(Instruction &I) {
  SmallVector<Use *> Nulls;
  if (auto *Cmp = dyn_cast<ICmpInst>(&I)) {
    // A null check of such a pointer: compared in the inferred space, null
    // would become a conversion of 0 out of the generic window as above.
    if (!Cmp->getOperand(0)->getType()->isPointerTy() ||
        Cmp->getOperand(0)->getType()->getPointerAddressSpace() != 0)
      return Nulls;
    for (unsigned K = 0; K < 2; ++K)
      if (isa<ConstantPointerNull>(Cmp->getOperand(K)) && pointsOutsideGenericWindow(Cmp->getOperand(1 - K)))
        Nulls.push_back(&Cmp->getOperandUse(K));
    return Nulls;
  }
  if (!I.getType()->isPointerTy() || I.getType()->getPointerAddressSpace() != 0)
    return Nulls;
  if (!isa<PHINode>(I) && !isa<SelectInst>(I))
    return Nulls;
  bool Local = false;
  unsigned First = isa<SelectInst>(I) ? 1 : 0;
  for (unsigned K = First; K < I.getNumOperands(); ++K) {
    Value *V = I.getOperand(K);
    if (isa<ConstantPointerNull>(V))
      Nulls.push_back(&I.getOperandUse(K));
    else if (pointsOutsideGenericWindow(V))
      Local = true;
  }
  if (!Local)
    Nulls.clear();
  return Nulls;
}

} // namespace

PreservedAnalyses KeepNullPointersGenericPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    SmallVector<Use *> Nulls;
    for (Instruction &I : instructions(F))
      for (Use *U : nullsBesideLocalPointers(I))
        Nulls.push_back(U);
    if (Nulls.empty())
      continue;
    // After the entry's stack slots, which stay first (static allocas).
    BasicBlock::iterator At = F.getEntryBlock().getFirstInsertionPt();
    while (isa<AllocaInst>(*At))
      ++At;
    IRBuilder<> B(&*At);
    auto *AsmTy = FunctionType::get(B.getInt64Ty(), false);
    auto *Zero = InlineAsm::get(AsmTy, "mov.b64 $0, 0;", "=l", /*hasSideEffects=*/false);
    Value *Opaque = B.CreateIntToPtr(B.CreateCall(AsmTy, Zero, {}, "oxide.null.bits"), B.getPtrTy(), "oxide.null");
    for (Use *U : Nulls)
      U->set(Opaque);
    Changed = true;
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

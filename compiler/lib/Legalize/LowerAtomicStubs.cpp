//===- LowerAtomicStubs.cpp - Atomic stubs → LLVM atomics ------------------===//
//
// `cuda_device::atomic` reaches the hardware through the stubs
// `__oxide_stub_atomic_{rmw,cas,load,store}_*` (Stubs.def), which take the
// operation, the scope and the ordering as integer arguments (Atomics.def),
// because Rust cannot write an LLVM syncscope. Every call becomes the LLVM
// instruction it stands for: `atomicrmw`, `cmpxchg`, `load atomic` or
// `store atomic`, with syncscope "block", "cluster", "device" or the system
// scope. In the unoptimised bitcode those arguments are still parameters of
// cuda_device's small wrappers, not constants; where one is not a constant
// the call becomes a switch over its values, one instruction per case, and
// O3 (which inlines the wrappers into the kernel) folds the switch to the
// case the user's constants select. A scope or ordering outside the encoding
// is taken as the strongest (system scope, seq_cst); an unknown operation
// traps. Being ordinary LLVM atomics, they are understood by O3 and by
// RejectUnsupported (an atomic write to a host static is an error).
//
// Runs before LowerIntrinsicStubs, which deletes the stubs once uncalled.
// After O3, LowerAtomics gives every `atomicrmw` its PTX ordering and scope.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"
#include <optional>

using namespace llvm;
using namespace oxide;

namespace {

/// `rmw_u32` for `__oxide_stub_atomic_rmw_u32`; nothing for other names.
std::optional<StringRef> atomicStubKind(StringRef Name) {
  if (!Name.consume_front(StubPrefix) || !Name.consume_front("atomic_"))
    return std::nullopt;
  return Name;
}

//===-- The stubs' encoding (Atomics.def) -----------------------------------===//

enum : unsigned {
#define OXIDE_ATOMIC_SCOPE(NAME, CODE, SYNCSCOPE) Scope##NAME = CODE,
#include "oxide/Atomics.def"
};
const unsigned AllScopes[] = {
#define OXIDE_ATOMIC_SCOPE(NAME, CODE, SYNCSCOPE) CODE,
#include "oxide/Atomics.def"
};

enum : unsigned {
#define OXIDE_ATOMIC_ORDERING(NAME, CODE, LLVM_ORDERING) Ordering##NAME = CODE,
#include "oxide/Atomics.def"
};
const unsigned AllOrderings[] = {
#define OXIDE_ATOMIC_ORDERING(NAME, CODE, LLVM_ORDERING) CODE,
#include "oxide/Atomics.def"
};

/// The LLVM ordering of an ordering code of the table.
AtomicOrdering ordering(unsigned Code) {
  switch (Code) {
#define OXIDE_ATOMIC_ORDERING(NAME, CODE, LLVM_ORDERING)                                          \
  case CODE:                                                                                       \
    return AtomicOrdering::LLVM_ORDERING;
#include "oxide/Atomics.def"
  }
  llvm_unreachable("specialize hands over only the table's codes");
}

enum class Operand { Any, Int, Float };
struct StubOp {
  unsigned Code;
  AtomicRMWInst::BinOp Op;
  Operand On;
};
const StubOp StubOps[] = {
#define OXIDE_ATOMIC_OP(NAME, CODE, LLVM_BINOP, OPERAND)                                          \
  {CODE, AtomicRMWInst::LLVM_BINOP, Operand::OPERAND},
#include "oxide/Atomics.def"
};

/// The syncscope of a scope code; the system scope for a code outside the table.
SyncScope::ID syncScope(LLVMContext &Ctx, unsigned Scope) {
  switch (Scope) {
#define OXIDE_ATOMIC_SCOPE(NAME, CODE, SYNCSCOPE)                                                 \
  case CODE:                                                                                       \
    return StringRef(SYNCSCOPE).empty() ? SyncScope::System : Ctx.getOrInsertSyncScopeID(SYNCSCOPE);
#include "oxide/Atomics.def"
  default:
    return SyncScope::System;
  }
}

/// What a load may have: neither release nor acq_rel (the Rust API panics
/// before; the switch over non-constant orderings still builds these cases).
AtomicOrdering forLoad(AtomicOrdering O) {
  if (O == AtomicOrdering::Release)
    return AtomicOrdering::Monotonic;
  if (O == AtomicOrdering::AcquireRelease)
    return AtomicOrdering::Acquire;
  return O;
}
AtomicOrdering forStore(AtomicOrdering O) {
  if (O == AtomicOrdering::Acquire)
    return AtomicOrdering::Monotonic;
  if (O == AtomicOrdering::AcquireRelease)
    return AtomicOrdering::Release;
  return O;
}

using Emit = function_ref<Value *(IRBuilder<> &, unsigned)>;

/// Emits `Make(K)` for the value K of V: directly when V is a constant,
/// else behind a switch over `Cases` whose results meet in a phi. A constant
/// outside `Cases`, and the switch's default, take `Fallback`; without one
/// they trap. B is left after the code (at the join block).
Value *specialize(IRBuilder<> &B, Value *V, ArrayRef<unsigned> Cases,
                  std::optional<unsigned> Fallback, Type *ResultTy, Emit Make) {
  auto Trap = [](IRBuilder<> &TB) {
    TB.CreateIntrinsic(Intrinsic::trap, {});
  };
  if (auto *C = dyn_cast<ConstantInt>(V)) {
    uint64_t K = C->getZExtValue();
    if (is_contained(Cases, K))
      return Make(B, K);
    if (Fallback)
      return Make(B, *Fallback);
    Trap(B);
    return ResultTy->isVoidTy() ? nullptr : PoisonValue::get(ResultTy);
  }
  LLVMContext &Ctx = B.getContext();
  BasicBlock *Head = B.GetInsertBlock();
  Function *F = Head->getParent();
  BasicBlock *Join = Head->splitBasicBlock(B.GetInsertPoint(), "atomic.join");
  Head->getTerminator()->eraseFromParent();
  PHINode *Phi = nullptr;
  if (!ResultTy->isVoidTy()) {
    Phi = PHINode::Create(ResultTy, Cases.size(), "atomic.value");
    Phi->insertBefore(Join->begin());
  }
  DebugLoc DL = B.getCurrentDebugLocation();
  IRBuilder<> HB(Head);
  HB.SetCurrentDebugLocation(DL);
  BasicBlock *Default = nullptr;
  if (!Fallback) {
    Default = BasicBlock::Create(Ctx, "atomic.invalid", F, Join);
    IRBuilder<> TB(Default);
    TB.SetCurrentDebugLocation(DL);
    Trap(TB);
    TB.CreateUnreachable();
  }
  SwitchInst *Switch = HB.CreateSwitch(V, Default ? Default : Join, Cases.size());
  auto *CaseTy = cast<IntegerType>(V->getType());
  for (unsigned K : Cases) {
    BasicBlock *Case = BasicBlock::Create(Ctx, "atomic.case", F, Join);
    BranchInst *Br = BranchInst::Create(Join, Case);
    Switch->addCase(ConstantInt::get(CaseTy, K), Case);
    if (Fallback && K == *Fallback)
      Switch->setDefaultDest(Case);
    IRBuilder<> CB(Br);
    CB.SetCurrentDebugLocation(DL);
    Value *R = Make(CB, K);
    if (Phi)
      Phi->addIncoming(R, CB.GetInsertBlock());
  }
  B.SetInsertPoint(Join, Join->getFirstInsertionPt());
  return Phi;
}

class StubLowering {
public:
  StubLowering(Module &M, DiagnosticSink &Diags) : M(M), Ctx(M.getContext()), Diags(Diags) {}

  bool lower(Function &F) {
    StringRef Kind = *atomicStubKind(F.getName());
    SmallVector<CallInst *> Calls;
    for (User *U : F.users())
      if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == &F)
        Calls.push_back(C);
    for (CallInst *C : Calls) {
      IRBuilder<> B(C);
      Value *R = nullptr;
      if (Kind.starts_with("rmw_") && C->arg_size() == 5)
        R = rmw(B, *C);
      else if (Kind.starts_with("cas_") && C->arg_size() == 6)
        R = cas(B, *C);
      else if (Kind.starts_with("load_") && C->arg_size() == 3)
        R = load(B, *C);
      else if (Kind.starts_with("store_") && C->arg_size() == 4)
        store(B, *C);
      else {
        Diags.error({("atomic stub `" + F.getName() + "` has an unknown shape").str(),
                     "",
                     {"compiler/lib/Legalize/LowerAtomicStubs.cpp knows rmw(ptr, value, op, scope, "
                      "ordering), cas(ptr, expected, new, scope, success, failure), "
                      "load(ptr, scope, ordering) and store(ptr, value, scope, ordering)"}});
        return false;
      }
      if (R)
        C->replaceAllUsesWith(R);
      C->eraseFromParent();
    }
    return !Calls.empty();
  }

private:
  Module &M;
  LLVMContext &Ctx;
  DiagnosticSink &Diags;

  Align naturalAlign(Type *T) { return Align(M.getDataLayout().getTypeStoreSize(T)); }

  // ptr, value, op, scope, ordering
  Value *rmw(IRBuilder<> &B, CallInst &C) {
    Value *Ptr = C.getArgOperand(0), *Val = C.getArgOperand(1);
    Type *T = Val->getType();
    bool IsFloat = T->isFloatingPointTy();
    SmallVector<unsigned> Codes;
    for (const StubOp &Op : StubOps)
      if (Op.On == Operand::Any || (Op.On == Operand::Float) == IsFloat)
        Codes.push_back(Op.Code);
    return specialize(B, C.getArgOperand(2), Codes, std::nullopt, T, [&](IRBuilder<> &OB, unsigned Code) {
      AtomicRMWInst::BinOp Op = find_if(StubOps, [&](const StubOp &S) { return S.Code == Code; })->Op;
      return specialize(OB, C.getArgOperand(3), AllScopes, ScopeSystem, T, [&](IRBuilder<> &SB, unsigned S) {
        return specialize(SB, C.getArgOperand(4), AllOrderings, OrderingSeqCst, T,
                          [&](IRBuilder<> &RB, unsigned O) -> Value * {
                            return RB.CreateAtomicRMW(Op, Ptr, Val, naturalAlign(T), ordering(O),
                                                      syncScope(Ctx, S));
                          });
      });
    });
  }

  // ptr, expected, new, scope, success ordering, failure ordering → old value
  Value *cas(IRBuilder<> &B, CallInst &C) {
    Value *Ptr = C.getArgOperand(0), *Cmp = C.getArgOperand(1), *New = C.getArgOperand(2);
    Type *T = Cmp->getType();
    return specialize(B, C.getArgOperand(3), AllScopes, ScopeSystem, T, [&](IRBuilder<> &SB, unsigned S) {
      return specialize(SB, C.getArgOperand(4), AllOrderings, OrderingSeqCst, T, [&](IRBuilder<> &OB, unsigned Ok) {
        return specialize(OB, C.getArgOperand(5), AllOrderings, OrderingSeqCst, T,
                          [&](IRBuilder<> &FB, unsigned Fail) -> Value * {
                            AtomicCmpXchgInst *X = FB.CreateAtomicCmpXchg(
                                Ptr, Cmp, New, naturalAlign(T), ordering(Ok),
                                forLoad(ordering(Fail)), syncScope(Ctx, S));
                            return FB.CreateExtractValue(X, 0);
                          });
      });
    });
  }

  // ptr, scope, ordering
  Value *load(IRBuilder<> &B, CallInst &C) {
    Value *Ptr = C.getArgOperand(0);
    Type *T = C.getType();
    return specialize(B, C.getArgOperand(1), AllScopes, ScopeSystem, T, [&](IRBuilder<> &SB, unsigned S) {
      return specialize(SB, C.getArgOperand(2), AllOrderings, OrderingSeqCst, T,
                        [&](IRBuilder<> &OB, unsigned O) -> Value * {
                          LoadInst *L = OB.CreateAlignedLoad(T, Ptr, naturalAlign(T));
                          L->setAtomic(forLoad(ordering(O)), syncScope(Ctx, S));
                          return L;
                        });
    });
  }

  // ptr, value, scope, ordering
  void store(IRBuilder<> &B, CallInst &C) {
    Value *Ptr = C.getArgOperand(0), *Val = C.getArgOperand(1);
    Type *Void = B.getVoidTy();
    specialize(B, C.getArgOperand(2), AllScopes, ScopeSystem, Void, [&](IRBuilder<> &SB, unsigned S) {
      return specialize(SB, C.getArgOperand(3), AllOrderings, OrderingSeqCst, Void,
                        [&](IRBuilder<> &OB, unsigned O) -> Value * {
                          StoreInst *St = OB.CreateAlignedStore(Val, Ptr, naturalAlign(Val->getType()));
                          St->setAtomic(forStore(ordering(O)), syncScope(Ctx, S));
                          return nullptr;
                        });
    });
  }
};

} // namespace

PreservedAnalyses LowerAtomicStubsPass::run(Module &M, ModuleAnalysisManager &) {
  StubLowering Lowering(M, Diags);
  bool Changed = false;
  for (Function &F : M)
    if (atomicStubKind(F.getName()))
      Changed |= Lowering.lower(F);
  // The stubs themselves (now uncalled) are deleted by LowerIntrinsicStubs.
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}


//===- LowerAtomics.cpp - Atomics with their PTX ordering and scope -------===//
//
// After O3, before PTX is emitted (LowerAtomicStubs made cuda_device::atomic's
// stubs LLVM atomics before it). LLVM 22's NVPTX backend gives `cmpxchg`,
// atomic loads and atomic stores their PTX semantics and scope
// (`atom.acquire.gpu.cas.b32`, `ld.acquire.cta.b32`), but lowers every
// `atomicrmw` it can map to one instruction as a plain `atom.<op>.<type>`,
// which PTX reads as `.relaxed.gpu`: ordering and scope are dropped, with no
// fence. Rust's `AtomicU32::swap(1, Acquire)` would be a relaxed exchange (a
// spin lock built on it does not protect its data), and a system-scope
// atomic on host-mapped memory only device-coherent. So every `atomicrmw`
// whose ordering is stronger than monotonic, or whose scope is not "device"
// (what the backend emits anyway), is rewritten:
//   * the operations PTX has, as inline asm
//     `atom.<sem>.<scope>[.<space>].<op>.<type>` with sem relaxed, acquire,
//     release or acq_rel; seq_cst is `fence.sc.<scope>` then `atom.acq_rel`.
//     They are add, and, or, xor, exch, min, max on 32/64-bit integers (sub
//     as the add of the negation), inc/dec on 32-bit, add (and sub) on
//     f32/f64, exch of any 32/64-bit value;
//   * everything else (nand, float min/max, 8/16-bit integers, inc/dec on
//     64-bit, …) as a compare-exchange loop whose `cmpxchg` carries the
//     ordering and scope (the backend gets those right).
// Scopes: "block" and "singlethread" → .cta, "cluster" → .cluster (.gpu
// before sm_90, where the pass also turns the "cluster" scope of loads,
// stores, cmpxchg and fences into "device", which the backend accepts),
// "device" → .gpu, the system scope → .sys. rustc gives
// core::sync::atomic the system scope, so `AtomicU32::fetch_add` on the device
// is `atom.<ordering>.sys.add.u32`; cuda_device::atomic::ScopedAtomic picks
// the scope.
// The asm names the state space when the address is known to be shared or
// global (.shared, .global; see `stateSpace`), as the backend's own atomics
// do after its address-space inference, which only runs during code
// generation, after this pass.
// It runs after O3 because only inlining makes the scope and ordering of
// cuda_device's wrappers constants, because inline asm is opaque to the
// optimiser, and because RejectUnsupported, which runs before O3, rejects asm
// (there, only Rust's asm! makes it).
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/NVPTXAddrSpace.h"
#include "llvm/Transforms/Utils/LowerAtomic.h"
#include <optional>

using namespace llvm;
using namespace oxide;

namespace {

//===-- atomicrmw → PTX ----------------------------------------------------===//

/// The PTX scope of an LLVM syncscope, and the syncscope that says exactly
/// that (for the compare-exchange loops).
struct PtxScope {
  StringRef Name;
  SyncScope::ID Id;
};

PtxScope ptxScope(LLVMContext &Ctx, SyncScope::ID Id, bool HasClusters) {
  StringRef Name = Ctx.getSyncScopeName(Id).value_or("");
  if (Id == SyncScope::SingleThread || Name == "block")
    return {"cta", Ctx.getOrInsertSyncScopeID("block")};
  if (Name == "cluster" && HasClusters)
    return {"cluster", Ctx.getOrInsertSyncScopeID("cluster")};
  if (Name == "device" || Name == "cluster")
    return {"gpu", Ctx.getOrInsertSyncScopeID("device")};
  return {"sys", SyncScope::System}; // the system scope, and any name NVPTX does not know
}

/// `atom` operation and type for an atomicrmw PTX has one instruction for.
struct NativeAtom {
  StringRef Op;
  std::string Type;
  bool Negate = false; // sub: add the negation
};

std::optional<NativeAtom> nativeAtom(const AtomicRMWInst &I, const DataLayout &DL) {
  Type *T = I.getValOperand()->getType();
  bool Int = T->isIntegerTy(32) || T->isIntegerTy(64);
  bool Fp = T->isFloatTy() || T->isDoubleTy();
  unsigned Bits = DL.getTypeSizeInBits(T);
  std::string W = std::to_string(Bits);
  switch (I.getOperation()) {
  case AtomicRMWInst::Xchg:
    if ((Bits == 32 || Bits == 64) && (Int || Fp || T->isPointerTy()))
      return NativeAtom{"exch", "b" + W};
    break;
  case AtomicRMWInst::Add:
    if (Int)
      return NativeAtom{"add", "u" + W};
    break;
  case AtomicRMWInst::Sub:
    if (Int)
      return NativeAtom{"add", "u" + W, true};
    break;
  case AtomicRMWInst::And:
    if (Int)
      return NativeAtom{"and", "b" + W};
    break;
  case AtomicRMWInst::Or:
    if (Int)
      return NativeAtom{"or", "b" + W};
    break;
  case AtomicRMWInst::Xor:
    if (Int)
      return NativeAtom{"xor", "b" + W};
    break;
  case AtomicRMWInst::Max:
    if (Int)
      return NativeAtom{"max", "s" + W};
    break;
  case AtomicRMWInst::Min:
    if (Int)
      return NativeAtom{"min", "s" + W};
    break;
  case AtomicRMWInst::UMax:
    if (Int)
      return NativeAtom{"max", "u" + W};
    break;
  case AtomicRMWInst::UMin:
    if (Int)
      return NativeAtom{"min", "u" + W};
    break;
  case AtomicRMWInst::UIncWrap:
    if (T->isIntegerTy(32))
      return NativeAtom{"inc", "u32"};
    break;
  case AtomicRMWInst::UDecWrap:
    if (T->isIntegerTy(32))
      return NativeAtom{"dec", "u32"};
    break;
  case AtomicRMWInst::FAdd:
    if (Fp)
      return NativeAtom{"add", "f" + W};
    break;
  case AtomicRMWInst::FSub:
    if (Fp)
      return NativeAtom{"add", "f" + W, true};
    break;
  default:
    break;
  }
  return std::nullopt;
}

StringRef ptxSemantics(AtomicOrdering O) {
  switch (O) {
  case AtomicOrdering::Acquire:
    return "acquire";
  case AtomicOrdering::Release:
    return "release";
  case AtomicOrdering::AcquireRelease:
  case AtomicOrdering::SequentiallyConsistent: // after fence.sc
    return "acq_rel";
  default:
    return "relaxed";
  }
}

AtomicOrdering failureOrdering(AtomicOrdering O) {
  return AtomicCmpXchgInst::getStrongestFailureOrdering(O);
}

class AtomicRewriter {
public:
  AtomicRewriter(Module &M, bool HasClusters)
      : Ctx(M.getContext()), DL(M.getDataLayout()), HasClusters(HasClusters) {}

  bool rewrite(AtomicRMWInst &I) {
    PtxScope Scope = ptxScope(Ctx, I.getSyncScopeID(), HasClusters);
    if (I.getOrdering() == AtomicOrdering::Monotonic && Scope.Name == "gpu")
      return false; // what the backend emits: atom.<op> is .relaxed.gpu
    if (std::optional<NativeAtom> Atom = nativeAtom(I, DL)) {
      toInlineAsm(I, *Atom, Scope);
      return true;
    }
    unsigned Bits = DL.getTypeSizeInBits(I.getValOperand()->getType());
    if (Bits != 8 && Bits != 16 && Bits != 32 && Bits != 64)
      return false; // no compare-exchange that wide: left to the backend
    toCasLoop(I, Scope);
    return true;
  }

private:
  LLVMContext &Ctx;
  const DataLayout &DL;
  bool HasClusters;

  /// The state space an address is known to be in: its own address space,
  /// or, for a generic pointer, that of what it is derived from: a shared or
  /// global variable, or (as NVPTX's argument lowering assumes) a pointer
  /// argument of a kernel or one loaded from a kernel's byval parameter,
  /// which point to global memory. (LLVM's own address-space inference
  /// only runs during code generation, after this pass.)
  static unsigned stateSpace(Value *Ptr) {
    unsigned AS = Ptr->getType()->getPointerAddressSpace();
    if (AS != NVPTXAS::ADDRESS_SPACE_GENERIC)
      return AS;
    const Value *Base = getUnderlyingObject(Ptr);
    auto IsKernelArg = [](const Value *V) {
      const auto *A = dyn_cast<Argument>(V);
      return A && A->getParent()->getCallingConv() == CallingConv::PTX_Kernel ? A : nullptr;
    };
    if (const auto *GV = dyn_cast<GlobalVariable>(Base))
      return GV->getAddressSpace();
    if (Base != Ptr && isa<PointerType>(Base->getType()) &&
        Base->getType()->getPointerAddressSpace() != NVPTXAS::ADDRESS_SPACE_GENERIC)
      return Base->getType()->getPointerAddressSpace(); // an addrspacecast to generic
    if (const Argument *A = IsKernelArg(Base); A && !A->hasByValAttr())
      return NVPTXAS::ADDRESS_SPACE_GLOBAL;
    if (const auto *L = dyn_cast<LoadInst>(Base))
      if (const Argument *A = IsKernelArg(getUnderlyingObject(L->getPointerOperand()));
          A && A->hasByValAttr())
        return NVPTXAS::ADDRESS_SPACE_GLOBAL;
    return NVPTXAS::ADDRESS_SPACE_GENERIC;
  }

  /// The state-space suffix for the asm and the address as an integer
  /// operand in that space.
  std::pair<StringRef, Value *> address(IRBuilder<> &B, Value *Ptr) {
    unsigned AS = stateSpace(Ptr);
    StringRef Space;
    switch (AS) {
    case NVPTXAS::ADDRESS_SPACE_GLOBAL:
      Space = ".global";
      break;
    case NVPTXAS::ADDRESS_SPACE_SHARED:
      Space = ".shared";
      break;
    case NVPTXAS::ADDRESS_SPACE_SHARED_CLUSTER:
      Space = ".shared::cluster";
      break;
    default: // generic; or no atom in that space: the generic address says what it is
      AS = NVPTXAS::ADDRESS_SPACE_GENERIC;
      break;
    }
    if (Ptr->getType()->getPointerAddressSpace() != AS)
      Ptr = B.CreateAddrSpaceCast(Ptr, B.getPtrTy(AS));
    return {Space, B.CreatePtrToInt(Ptr, DL.getIntPtrType(Ctx, AS))};
  }

  static char constraint(Type *T) {
    if (T->isFloatTy())
      return 'f';
    if (T->isDoubleTy())
      return 'd';
    return T->getPrimitiveSizeInBits() == 64 ? 'l' : 'r';
  }

  void toInlineAsm(AtomicRMWInst &I, const NativeAtom &Atom, PtxScope Scope) {
    IRBuilder<> B(&I);
    Type *T = I.getValOperand()->getType();
    Value *Val = I.getValOperand();
    if (Atom.Negate)
      Val = T->isFloatingPointTy() ? B.CreateFNeg(Val) : B.CreateNeg(Val);
    Type *OpTy = T; // the asm's register type: pointers travel as integers
    if (T->isPointerTy()) {
      OpTy = DL.getIntPtrType(T);
      Val = B.CreatePtrToInt(Val, OpTy);
    }
    auto [Space, Addr] = address(B, I.getPointerOperand());
    std::string Asm;
    if (I.getOrdering() == AtomicOrdering::SequentiallyConsistent)
      Asm += ("fence.sc." + Scope.Name + ";\n\t").str();
    Asm += ("atom." + ptxSemantics(I.getOrdering()) + "." + Scope.Name + Space + "." + Atom.Op +
            "." + Atom.Type + " \t$0, [$1], $2;")
               .str();
    std::string Constraints = std::string("=") + constraint(OpTy) + "," +
                              constraint(Addr->getType()) + "," + constraint(OpTy) + ",~{memory}";
    auto *FTy = FunctionType::get(OpTy, {Addr->getType(), OpTy}, false);
    CallInst *Call = B.CreateCall(InlineAsm::get(FTy, Asm, Constraints, /*hasSideEffects=*/true),
                                  {Addr, Val});
    Call->addFnAttr(Attribute::NoUnwind);
    Value *Result = Call;
    if (T->isPointerTy())
      Result = B.CreateIntToPtr(Call, T);
    I.replaceAllUsesWith(Result);
    I.eraseFromParent();
  }

  Value *asInt(IRBuilder<> &B, Value *V, IntegerType *IntTy) {
    if (V->getType() == IntTy)
      return V;
    if (V->getType()->isPointerTy())
      return B.CreatePtrToInt(V, IntTy);
    return B.CreateBitCast(V, IntTy);
  }
  Value *fromInt(IRBuilder<> &B, Value *V, Type *T) {
    if (V->getType() == T)
      return V;
    if (T->isPointerTy())
      return B.CreateIntToPtr(V, T);
    return B.CreateBitCast(V, T);
  }

  /// old = load; loop { new = op(old, v); (seen, ok) = cmpxchg(old, new); old = seen } until ok
  void toCasLoop(AtomicRMWInst &I, PtxScope Scope) {
    Type *T = I.getValOperand()->getType();
    auto *IntTy = IntegerType::get(Ctx, DL.getTypeSizeInBits(T));
    Value *Ptr = I.getPointerOperand();
    Align A = I.getAlign();
    BasicBlock *Head = I.getParent();
    Function *F = Head->getParent();
    BasicBlock *Exit = Head->splitBasicBlock(&I, "atomicrmw.end");
    BasicBlock *Loop = BasicBlock::Create(Ctx, "atomicrmw.loop", F, Exit);
    Head->getTerminator()->eraseFromParent();

    IRBuilder<> B(Head);
    B.SetCurrentDebugLocation(I.getDebugLoc());
    LoadInst *Init = B.CreateAlignedLoad(IntTy, Ptr, A, "atomicrmw.init");
    Init->setAtomic(AtomicOrdering::Monotonic, Scope.Id);
    Init->setVolatile(I.isVolatile());
    B.CreateBr(Loop);

    B.SetInsertPoint(Loop);
    PHINode *Old = B.CreatePHI(IntTy, 2, "atomicrmw.old");
    Old->addIncoming(Init, Head);
    Value *OldValue = fromInt(B, Old, T);
    Value *NewValue = buildAtomicRMWValue(I.getOperation(), B, OldValue, I.getValOperand());
    AtomicCmpXchgInst *Cas =
        B.CreateAtomicCmpXchg(Ptr, Old, asInt(B, NewValue, IntTy), A, I.getOrdering(),
                              failureOrdering(I.getOrdering()), Scope.Id);
    Cas->setVolatile(I.isVolatile());
    Value *Seen = B.CreateExtractValue(Cas, 0, "atomicrmw.seen");
    Value *Ok = B.CreateExtractValue(Cas, 1, "atomicrmw.ok");
    Old->addIncoming(Seen, Loop);
    B.CreateCondBr(Ok, Exit, Loop);

    I.replaceAllUsesWith(OldValue);
    I.eraseFromParent();
  }
};

} // namespace

PreservedAnalyses LowerAtomicsPass::run(Module &M, ModuleAnalysisManager &) {
  bool HasClusters = !Target || Target->has(feature::Clusters);
  AtomicRewriter Rewriter(M, HasClusters);
  LLVMContext &Ctx = M.getContext();
  SyncScope::ID Cluster = Ctx.getOrInsertSyncScopeID("cluster");
  SyncScope::ID Device = Ctx.getOrInsertSyncScopeID("device");
  SmallVector<AtomicRMWInst *> Atomics;
  bool Changed = false;
  for (Function &F : M)
    for (Instruction &I : instructions(F)) {
      if (auto *RMW = dyn_cast<AtomicRMWInst>(&I)) {
        Atomics.push_back(RMW);
        continue;
      }
      // A target without clusters (Targets.def) has no such scope and the
      // backend rejects it: a cluster is then at most the whole GPU.
      if (!HasClusters && getAtomicSyncScopeID(&I) == Cluster) {
        if (auto *L = dyn_cast<LoadInst>(&I))
          L->setSyncScopeID(Device);
        else if (auto *S = dyn_cast<StoreInst>(&I))
          S->setSyncScopeID(Device);
        else if (auto *X = dyn_cast<AtomicCmpXchgInst>(&I))
          X->setSyncScopeID(Device);
        else if (auto *Fe = dyn_cast<FenceInst>(&I))
          Fe->setSyncScopeID(Device);
        Changed = true;
      }
    }
  for (AtomicRMWInst *I : Atomics)
    Changed |= Rewriter.rewrite(*I);
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

//===- LowerDisjointIndices.cpp - One row length per launch, then no markers ===//
//
// `thread::index_2d(row_len)` is `y * row_len + x` (for x < row_len), and
// `index_3d(row_len, rows_per_plane)` is `(z * rows_per_plane + y) *
// row_len + x`. Each is one-to-one over the threads of a launch only if
// every thread uses the same row lengths: a thread at (0, 1) with row
// length 32 and one at (32, 0) with 64 both get element 32, and
// DisjointSlice::get_mut would hand both the same `&mut`. The launch shape
// is the host's to check (RecordKernelDimensions); the row lengths are
// values only the kernel's code knows, so this pass checks them, per
// kernel, on the markers get_mut leaves (DisjointIndexMarkers.h):
//
//   - every row length of a 2-D or 3-D index the kernel can hand get_mut
//     must be a value every thread of the launch computes alike: a
//     constant, a kernel parameter (bytes of a by-value parameter the
//     kernel only reads), the grid and block sizes (%ntid, %nctaid), and
//     pure operations on those, through the arguments of the functions
//     between the kernel and get_mut when they are not inlined, and through
//     the local copy a ThreadIndex too large for registers is passed in
//     (the one value stored there, when calls only read it);
//   - all of them must be the same value (two different launch-wide values
//     chosen by a thread-dependent branch still collide), and likewise the
//     rows per plane of the 3-D indices.
//
// Anything it cannot follow (a value read from memory, returned by a call,
// a phi of different values, a function called through a pointer) is an
// error naming the kernel and the get_mut call: a compile error, never a
// race. Then every marker call becomes its index (the markers are the
// identity) and the markers' declarations go, with the `Location`
// constants only they used.
//===----------------------------------------------------------------------===//
#include "DisjointIndexMarkers.h"
#include "oxide/Abi.h"
#include "oxide/Diagnostics.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Analysis/ConstantFolding.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// Spells a launch-wide value so that two values with the same spelling are
/// equal in every thread of every launch; or says why it is not one.
class LaunchValue {
public:
  LaunchValue(Function &Entry, const SmallPtrSetImpl<Function *> &Reached)
      : Entry(Entry), Reached(Reached) {}

  /// The spelling of V, or nothing (then why() says what is in the way).
  std::optional<std::string> spell(Value *V) {
    Why.clear();
    Steps = 0;
    return spell(V, 0);
  }
  const std::string &why() const { return Why; }

private:
  Function &Entry;
  const SmallPtrSetImpl<Function *> &Reached;
  std::string Why;
  SmallPtrSet<const PHINode *, 8> OpenPhis;
  /// Values spelled so far for this one; bounded, as a value used twice is
  /// spelled twice (row lengths are short expressions).
  unsigned Steps = 0;

  std::optional<std::string> fail(const Twine &Reason) {
    if (Why.empty())
      Why = Reason.str();
    return std::nullopt;
  }

  static std::string typeName(Type *T) {
    std::string S;
    raw_string_ostream OS(S);
    T->print(OS);
    return S;
  }

  /// `name(a, b, …)` of operands that must all be launch-wide.
  std::optional<std::string> apply(const Twine &Name, ArrayRef<Value *> Operands, unsigned Depth) {
    std::string S = Name.str() + "(";
    for (unsigned I = 0; I < Operands.size(); ++I) {
      std::optional<std::string> Op = spell(Operands[I], Depth + 1);
      if (!Op)
        return std::nullopt;
      S += (I ? ", " : "") + *Op;
    }
    return S + ")";
  }

  /// The special registers every thread of a launch reads alike: the grid
  /// and block sizes. Every other one (tid, ctaid, laneid, clocks) differs.
  static std::optional<StringRef> launchSize(Intrinsic::ID ID) {
    switch (ID) {
    case Intrinsic::nvvm_read_ptx_sreg_ntid_x: return "ntid.x";
    case Intrinsic::nvvm_read_ptx_sreg_ntid_y: return "ntid.y";
    case Intrinsic::nvvm_read_ptx_sreg_ntid_z: return "ntid.z";
    case Intrinsic::nvvm_read_ptx_sreg_nctaid_x: return "nctaid.x";
    case Intrinsic::nvvm_read_ptx_sreg_nctaid_y: return "nctaid.y";
    case Intrinsic::nvvm_read_ptx_sreg_nctaid_z: return "nctaid.z";
    default: return std::nullopt;
    }
  }

  std::optional<std::string> spell(Value *V, unsigned Depth) {
    if (Depth > 32 || ++Steps > 4096)
      return fail("it is computed by more steps than oxide follows");
    if (isa<UndefValue>(V))
      return fail("it is undefined");
    if (auto *C = dyn_cast<ConstantInt>(V))
      return typeName(C->getType()) + " " + toString(C->getValue(), 10, /*Signed=*/false);
    if (isa<Constant>(V)) {
      std::string S;
      raw_string_ostream OS(S);
      V->printAsOperand(OS, /*PrintType=*/true);
      return S;
    }
    if (auto *A = dyn_cast<Argument>(V))
      return argument(*A, Depth);
    if (auto *Load = dyn_cast<LoadInst>(V))
      return loaded(*Load, Depth);
    if (auto *Phi = dyn_cast<PHINode>(V))
      return phi(*Phi, Depth);
    if (auto *Freeze = dyn_cast<FreezeInst>(V))
      return spell(Freeze->getOperand(0), Depth + 1);
    if (auto *II = dyn_cast<IntrinsicInst>(V)) {
      if (std::optional<StringRef> Size = launchSize(II->getIntrinsicID()))
        return Size->str();
      if (II->getCalledFunction()->getName().starts_with("llvm.nvvm.read.ptx.sreg."))
        return fail("it depends on the thread's own coordinates (threadIdx, blockIdx, lane) or the clock");
      if (!II->doesNotAccessMemory() || II->isConvergent())
        return fail("it is computed by `" + II->getCalledFunction()->getName() + "`, which is not a pure operation");
      return apply(II->getCalledFunction()->getName(), SmallVector<Value *>(II->args()), Depth);
    }
    if (isa<CallBase>(V))
      return fail("it is returned by a function call");
    if (auto *B = dyn_cast<BinaryOperator>(V))
      return apply(Twine(B->getOpcodeName()) + " " + typeName(B->getType()), {B->getOperand(0), B->getOperand(1)},
                   Depth);
    if (auto *Cast = dyn_cast<CastInst>(V))
      return apply(Twine(Cast->getOpcodeName()) + " " + typeName(Cast->getSrcTy()) + " to " +
                       typeName(Cast->getDestTy()),
                   {Cast->getOperand(0)}, Depth);
    if (auto *Cmp = dyn_cast<ICmpInst>(V))
      return apply(Twine("icmp ") + CmpInst::getPredicateName(Cmp->getPredicate()),
                   {Cmp->getOperand(0), Cmp->getOperand(1)}, Depth);
    if (auto *Sel = dyn_cast<SelectInst>(V))
      return apply("select", {Sel->getCondition(), Sel->getTrueValue(), Sel->getFalseValue()}, Depth);
    if (auto *EV = dyn_cast<ExtractValueInst>(V)) {
      std::string Name = "extractvalue";
      for (unsigned Index : EV->indices())
        Name += " " + std::to_string(Index);
      return apply(Name, {EV->getAggregateOperand()}, Depth);
    }
    return fail("it is computed by an operation oxide does not follow (" +
                Twine(isa<Instruction>(V) ? cast<Instruction>(V)->getOpcodeName() : "a value") + ")");
  }

  /// A parameter of the kernel itself, or, through every call of a function
  /// between it and get_mut, the one value all those calls pass.
  std::optional<std::string> argument(Argument &A, unsigned Depth) {
    if (A.getParent() == &Entry)
      return "param " + std::to_string(A.getArgNo());
    return throughCalls(A, [&](Value *Passed, unsigned D) { return spell(Passed, D); }, Depth);
  }

  /// What Of(the value passed for A, depth) says at every call of A's
  /// function in the kernel, if it says the same at all of them.
  std::optional<std::string>
  throughCalls(Argument &A, function_ref<std::optional<std::string>(Value *, unsigned)> Of, unsigned Depth) {
    Function *F = A.getParent();
    std::string Callee = demangleRust(F->getName());
    if (F->hasAddressTaken(nullptr, false, true, true))
      return fail("it is an argument of `" + Callee + "`, which is also called through a pointer");
    std::optional<std::string> Common;
    for (User *U : F->users()) {
      auto *Call = dyn_cast<CallBase>(U);
      if (!Call || Call->getCalledFunction() != F || !Reached.contains(Call->getFunction()))
        continue;
      std::optional<std::string> Passed = Of(Call->getArgOperand(A.getArgNo()), Depth + 1);
      if (!Passed)
        return std::nullopt;
      if (Common && *Common != *Passed)
        return fail("the calls of `" + Callee + "` pass it different values");
      Common = Passed;
    }
    if (!Common)
      return fail("it is an argument of `" + Callee + "`, whose callers oxide cannot see");
    return Common;
  }

  std::optional<std::string> readFromMemory() {
    return fail("it is read from memory (only the kernel's parameters are read alike by every thread)");
  }

  /// A simple load of what is launch-wide memory at that point.
  std::optional<std::string> loaded(LoadInst &Load, unsigned Depth) {
    if (!Load.isSimple())
      return readFromMemory();
    const DataLayout &DL = Load.getModule()->getDataLayout();
    APInt Offset(DL.getIndexTypeSizeInBits(Load.getPointerOperandType()), 0);
    Value *Base = Load.getPointerOperand()->stripAndAccumulateConstantOffsets(DL, Offset, /*AllowNonInbounds=*/true);
    return memory(*Base, Offset.getSExtValue(), Load.getType(), Depth);
  }

  /// The value of type Ty at Base + Offset where it is read:
  ///   - bytes of a by-value kernel parameter the kernel only reads;
  ///   - through a pointer argument of a function between the kernel and
  ///     get_mut, what every call passes there (a ThreadIndex too large for
  ///     registers travels as a pointer to a copy);
  ///   - in a local variable, the one value ever stored there, if nothing
  ///     else can write it (calls only read it).
  std::optional<std::string> memory(Value &Base, int64_t Offset, Type *Ty, unsigned Depth) {
    if (Depth > 32)
      return fail("it is computed by more steps than oxide follows");
    const DataLayout &DL = Entry.getParent()->getDataLayout();
    if (auto *Arg = dyn_cast<Argument>(&Base)) {
      Function *F = Arg->getParent();
      if (F == &Entry) {
        if (!Arg->hasByValAttr() || !Arg->onlyReadsMemory() || Offset < 0)
          return readFromMemory();
        return "load " + typeName(Ty) + " param " + std::to_string(Arg->getArgNo()) + " + " +
               std::to_string(Offset);
      }
      if (!Arg->getType()->isPointerTy() || !Arg->onlyReadsMemory())
        return readFromMemory();
      return throughCalls(*Arg, [&](Value *Passed, unsigned D) -> std::optional<std::string> {
        APInt More(DL.getIndexTypeSizeInBits(Passed->getType()), 0);
        Value *CallerBase = Passed->stripAndAccumulateConstantOffsets(DL, More, /*AllowNonInbounds=*/true);
        return memory(*CallerBase, Offset + More.getSExtValue(), Ty, D);
      }, Depth);
    }
    if (auto *Local = dyn_cast<AllocaInst>(&Base))
      return storedOnce(*Local, Offset, Ty, Depth);
    return readFromMemory();
  }

  /// The one value stored in Local at Offset with type Ty, when every other
  /// use of Local writes elsewhere or only reads.
  std::optional<std::string> storedOnce(AllocaInst &Local, int64_t Offset, Type *Ty, unsigned Depth) {
    const DataLayout &DL = Entry.getParent()->getDataLayout();
    uint64_t Size = DL.getTypeStoreSize(Ty);
    StoreInst *Only = nullptr;
    SmallVector<std::pair<Value *, int64_t>> Work{{&Local, 0}};
    while (!Work.empty()) {
      auto [Ptr, At] = Work.pop_back_val();
      for (Use &Use : Ptr->uses()) {
        User *U = Use.getUser();
        if (auto *GEP = dyn_cast<GetElementPtrInst>(U)) {
          APInt More(DL.getIndexTypeSizeInBits(GEP->getType()), 0);
          if (!GEP->accumulateConstantOffset(DL, More))
            return readFromMemory();
          Work.push_back({GEP, At + More.getSExtValue()});
        } else if (auto *Store = dyn_cast<StoreInst>(U)) {
          if (Use.getOperandNo() != StoreInst::getPointerOperandIndex() || !Store->isSimple())
            return readFromMemory(); // the address escapes, or a volatile store
          int64_t End = At + int64_t(DL.getTypeStoreSize(Store->getValueOperand()->getType()));
          if (End <= Offset || At >= Offset + int64_t(Size))
            continue; // other bytes
          if (At != Offset || Store->getValueOperand()->getType() != Ty || Only)
            return readFromMemory();
          Only = Store;
        } else if (auto *Call = dyn_cast<CallBase>(U)) {
          if (Call->isLifetimeStartOrEnd())
            continue;
          if (!Call->isArgOperand(&Use) || !Call->onlyReadsMemory(Call->getArgOperandNo(&Use)))
            return readFromMemory(); // a call that may write it
        } else if (!isa<LoadInst>(U)) {
          return readFromMemory();
        }
      }
    }
    if (!Only)
      return fail("it is read from a local variable that is never given a value");
    return spell(Only->getValueOperand(), Depth + 1);
  }

  /// A phi is launch-wide if all its incoming values are one launch-wide
  /// value (whatever way a thread came, it has that value).
  std::optional<std::string> phi(PHINode &Phi, unsigned Depth) {
    if (!OpenPhis.insert(&Phi).second)
      return std::string(); // a loop back to this phi adds no value
    std::optional<std::string> Common;
    for (Value *In : Phi.incoming_values()) {
      std::optional<std::string> S = spell(In, Depth + 1);
      if (!S) {
        OpenPhis.erase(&Phi);
        return std::nullopt;
      }
      if (S->empty())
        continue;
      if (Common && *Common != *S) {
        OpenPhis.erase(&Phi);
        return fail("it differs between the paths that reach it (the threads may take different ones)");
      }
      Common = S;
    }
    OpenPhis.erase(&Phi);
    if (!Common)
      return fail("it is never given a value");
    return Common;
  }
};

/// `file:line:col` of the `&core::panic::Location` constant `At` points to
/// (`{ file: &str (ptr, len), line: u32, col: u32 }`), or "".
std::string locationOf(Value *At, const DataLayout &DL) {
  auto *GV = dyn_cast<GlobalVariable>(At->stripPointerCasts());
  if (!GV || !GV->isConstant() || !GV->hasDefinitiveInitializer())
    return "";
  LLVMContext &Ctx = GV->getContext();
  auto Read = [&](Type *Ty, unsigned Offset) {
    APInt Bytes(DL.getIndexTypeSizeInBits(GV->getType()), Offset);
    return ConstantFoldLoadFromConst(GV->getInitializer(), Ty, Bytes, DL);
  };
  Constant *File = Read(PointerType::get(Ctx, 0), 0);
  auto *Len = dyn_cast_or_null<ConstantInt>(Read(Type::getInt64Ty(Ctx), 8));
  auto *Line = dyn_cast_or_null<ConstantInt>(Read(Type::getInt32Ty(Ctx), 16));
  auto *Col = dyn_cast_or_null<ConstantInt>(Read(Type::getInt32Ty(Ctx), 20));
  StringRef Name;
  if (!File || !Len || !Line || !Col || !getConstantStringInfo(File, Name, /*TrimAtNul=*/false) ||
      Name.size() < Len->getZExtValue())
    return "";
  return SourceLoc{Name.take_front(Len->getZExtValue()).str(), unsigned(Line->getZExtValue()),
                   unsigned(Col->getZExtValue())}
      .str();
}

/// One row length (or rows per plane) of one marker.
struct Extent {
  CallInst *Marker;
  std::string Spelling;
};

class Checker {
public:
  Checker(Module &M, DiagnosticSink &Diags) : M(M), Diags(Diags) {}

  void checkKernel(Function &Entry, StringRef Path) {
    SmallPtrSet<Function *, 32> Reached = functionsReachedFrom(Entry);
    LaunchValue Values(Entry, Reached);
    SmallVector<Extent> RowLengths, PlaneRows;
    for (auto [Call, Kind] : markerCallsIn(Reached)) {
      if (Kind == IndexKind::OneD)
        continue;
      std::pair<const char *, SmallVector<Extent> *> Operands[] = {{"row length", &RowLengths},
                                                                   {"number of rows per plane", &PlaneRows}};
      unsigned Count = Kind == IndexKind::TwoD ? 1 : 2;
      for (unsigned I = 0; I < Count; ++I) {
        auto [What, Into] = Operands[I];
        std::optional<std::string> S = Values.spell(Call->getArgOperand(1 + I));
        if (!S) {
          notLaunchWide(Path, *Call, Kind, What, Values.why());
          return;
        }
        Into->push_back({Call, *S});
      }
    }
    if (differ(Path, RowLengths, "row lengths"))
      return;
    differ(Path, PlaneRows, "numbers of rows per plane");
  }

private:
  Module &M;
  DiagnosticSink &Diags;

  std::string location(CallInst &Marker) {
    return locationOf(Marker.getArgOperand(Marker.arg_size() - 1), M.getDataLayout());
  }

  static const char *constructor(IndexKind Kind) {
    return Kind == IndexKind::TwoD ? "thread::index_2d" : "thread::index_3d";
  }

  void notLaunchWide(StringRef Path, CallInst &Marker, IndexKind Kind, StringRef What, StringRef Why) {
    Diags.error({("kernel `" + Path + "` hands DisjointSlice::get_mut an index from " + constructor(Kind) +
                  " whose " + What + " is not the same in every thread of the launch: " + Why)
                     .str(),
                 location(Marker),
                 {"threads that pass different row lengths can compute the same index (1 * 32 + 0 == 0 * 64 + "
                  "32), and get_mut would give them the same element",
                  "pass one value for the whole launch: a constant, a kernel parameter, or arithmetic on those "
                  "and the grid and block sizes",
                  "for another pattern of writes, DisjointSlice::get_unchecked_mut (unsafe) takes any index"}});
  }

  /// Reports Extents that are not all one value; whether it did.
  bool differ(StringRef Path, ArrayRef<Extent> Extents, StringRef What) {
    for (const Extent &E : Extents) {
      if (E.Spelling == Extents.front().Spelling)
        continue;
      std::string First = location(*Extents.front().Marker), Other = location(*E.Marker);
      std::string Where = First.empty() || Other.empty() ? "" : " (" + First + " and " + Other + ")";
      Diags.error({("kernel `" + Path + "` hands DisjointSlice::get_mut thread indices with different " + What +
                    Where + ": two threads could compute the same index and get the same element")
                       .str(),
                   Other,
                   {"every 2-D and 3-D index a kernel writes through must use the same row length (and the 3-D "
                    "ones the same rows per plane), one value for the whole launch",
                    "for another pattern of writes, DisjointSlice::get_unchecked_mut (unsafe) takes any index"}});
      return true;
    }
    return false;
  }
};

/// Deletes the globals in Candidates that nothing uses any more, and then
/// the globals only their initialisers used.
void eraseUnused(SmallVector<GlobalVariable *> Candidates) {
  SmallPtrSet<GlobalVariable *, 8> Erased;
  while (!Candidates.empty()) {
    GlobalVariable *GV = Candidates.pop_back_val();
    if (Erased.contains(GV) || !GV->isDiscardableIfUnused())
      continue;
    GV->removeDeadConstantUsers();
    if (!GV->use_empty())
      continue;
    SmallVector<GlobalVariable *> Referenced;
    if (GV->hasInitializer())
      for (Value *Op : GV->getInitializer()->operands())
        if (auto *G = dyn_cast<GlobalVariable>(Op->stripPointerCasts()))
          Referenced.push_back(G);
    GV->eraseFromParent();
    Erased.insert(GV);
    for (GlobalVariable *G : Referenced)
      if (!Erased.contains(G))
        Candidates.push_back(G);
  }
}

} // namespace

PreservedAnalyses LowerDisjointIndicesPass::run(Module &M, ModuleAnalysisManager &) {
  if (NamedMDNode *MD = M.getNamedMetadata(KernelsMetadata)) {
    Checker Check(M, Diags);
    for (MDNode *N : MD->operands()) {
      auto *Entry = mdconst::dyn_extract_or_null<Function>(N->getOperand(0));
      auto *Host = N->getNumOperands() > 1 ? dyn_cast<MDString>(N->getOperand(1)) : nullptr;
      if (Entry)
        Check.checkKernel(*Entry, Host ? kernelPathOf(Host->getString()) : Entry->getName().str());
    }
  }

  bool Changed = false;
  SmallVector<GlobalVariable *> Locations;
  for (StringLiteral Stub : MarkerStubs) {
    Function *F = M.getFunction(stubSymbol(Stub));
    if (!F)
      continue;
    for (User *U : make_early_inc_range(F->users())) {
      auto *Call = dyn_cast<CallInst>(U);
      if (!Call || Call->getCalledFunction() != F)
        continue;
      for (Value *Op : Call->args())
        if (auto *GV = dyn_cast<GlobalVariable>(Op->stripPointerCasts()))
          Locations.push_back(GV);
      Call->replaceAllUsesWith(Call->getArgOperand(0));
      Call->eraseFromParent();
    }
    if (F->use_empty())
      F->eraseFromParent();
    Changed = true;
  }
  eraseUnused(std::move(Locations));
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

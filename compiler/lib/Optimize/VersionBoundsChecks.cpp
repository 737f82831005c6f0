//===- VersionBoundsChecks.cpp - A kernel version without implied checks --===//
//
// A tiled kernel tests its own bounds and Rust checks the index again:
//
//     if row < rows && col < cols { tile[..] = input[row * cols + col] }
//
//   %in = and (icmp ult %row, %rows), (icmp ult %col, %cols) ; br %in, ...
//   %i  = add (mul %row, %cols), %col
//   %ok = icmp ult %i, %input.len                            ; br %ok, ..., %panic
//
// The check cannot fail when `rows * cols` is exact (no wrap in 64 bits)
// and at most `input.len`: then `row * cols + col <= (rows - 1) * cols +
// cols - 1 < rows * cols <= input.len`, and the wrapping IR arithmetic does
// not wrap. That condition is the same for every thread of the launch (it
// reads only kernel parameters), but no pass can decide it before the
// launch, so the check stays, and with it a branch to a panic in every
// element of the tile: ptxas cannot predicate the guarded loads, issues
// extra 64-bit compares, and keeps the barrier after them unaligned.
//
// The host knows the condition at every launch, for free, so this pass
// gives the kernel a second version in which the implied checks are `true`
// (the copy cleaned of the branches and panics that became dead):
//
//  - for a kernel in `oxide.kernels` (with its flags), a second entry
//    `<name>_unchecked`; the kernel's entry there gains it and the
//    condition, every implied check's exact `M * K <= L` (or `M <= L` where
//    the index itself is known below M: `i < c.len` before `a[i]`), as the
//    postfix program cuda-host evaluates before each launch (LaunchProgram.h,
//    docs/ABI.md §3). The kernel keeps every check and runs where the
//    condition fails or cannot be decided;
//  - where the host could not compute the condition (a division, say), and
//    only for two-dimensional implications, a second body in the same
//    kernel: the entry block computes the condition (M and K below 2^32, so
//    that the product is exact in one 32 × 32-bit multiply) and branches to
//    the copy or to the original body. One bound alone is then
//    MergeBoundsChecks' business (one compare against the smallest length
//    measured faster for vecadd than a branch between two bodies).
//
// Checks are implied by facts that hold where they are used: the conditions
// of the branches whose true edge dominates the use, the negated disjuncts
// of those whose false edge does, and the other conjuncts of the same `and`
// tree.
//
// Why this keeps Rust's semantics: when the precondition holds, each removed
// check is true wherever it is evaluated (the arithmetic above), so the copy
// computes what the original would; when it does not, the original runs.
// Every thread of the launch takes the same version: the precondition
// depends on kernel parameters and the grid's shape only. The user's own
// tests (an `if o < out.len()` guard) are removed the same way when
// implied; they are only tests.
//
// Runs after O3 (the kernel is one function) and before MergeBoundsChecks,
// DeferSharedStores, HoistBoundsChecks and AlignBarriers, which then work on
// both versions: in the copy there is no panic in front of the barriers.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "LaunchProgram.h"
#include "PanicPaths.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PatternMatch.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

using namespace llvm;
using namespace llvm::PatternMatch;
using namespace oxide;

namespace {

/// Kernels bigger than this are not copied (ptxas time, code size).
constexpr unsigned MaxInstructions = 4000;

/// `X < Bound` holds. A fact taken from a sibling conjunct of the check's
/// own `and` tree names that conjunct (Leaf): such a conjunct must stay in
/// the copy, or two conjuncts could each be removed on the other's word.
struct Fact {
  Value *X, *Bound;
  Value *Leaf = nullptr;
};

/// One implied check's precondition: `M * K <= L` with the product exact
/// (tested as both factors below 2^32), or `M <= L` when K is null.
struct Precondition {
  Value *M, *K, *L;
  bool operator==(const Precondition &O) const { return M == O.M && K == O.K && L == O.L; }
};

/// `X <u Bound` from `icmp ult X, Bound` or `icmp ugt Bound, X`.
std::optional<Fact> asFact(Value *V) {
  Value *A, *B;
  if (match(V, m_SpecificICmp(ICmpInst::ICMP_ULT, m_Value(A), m_Value(B))))
    return Fact{A, B};
  if (match(V, m_SpecificICmp(ICmpInst::ICMP_UGT, m_Value(A), m_Value(B))))
    return Fact{B, A};
  return std::nullopt;
}

/// `A && B` as O3 writes it: `and i1` or `select i1 A, i1 B, i1 false`.
bool matchAnd(Value *V, Value *&A, Value *&B) {
  return match(V, m_LogicalAnd(m_Value(A), m_Value(B)));
}

/// Every conjunct of an `and` tree that is a fact (naming the conjunct when
/// AsSiblings).
void collectFacts(Value *Cond, SmallVectorImpl<Fact> &Out, bool AsSiblings, unsigned Depth = 0) {
  Value *A, *B;
  if (Depth < 16 && matchAnd(Cond, A, B)) {
    collectFacts(A, Out, AsSiblings, Depth + 1);
    collectFacts(B, Out, AsSiblings, Depth + 1);
  } else if (std::optional<Fact> F = asFact(Cond)) {
    if (AsSiblings)
      F->Leaf = Cond;
    Out.push_back(*F);
  }
}

/// Every disjunct of an `or` tree whose falsehood is a fact (`X >= B`
/// false: X < B), for the false edge of a branch: the form of a user's
/// `if let Some(x) = c.get_mut(i)` when the pointer may be null (debug).
void collectFactsWhenFalse(Value *Cond, SmallVectorImpl<Fact> &Out, unsigned Depth = 0) {
  Value *A, *B;
  if (Depth < 16 && match(Cond, m_LogicalOr(m_Value(A), m_Value(B)))) {
    collectFactsWhenFalse(A, Out, Depth + 1);
    collectFactsWhenFalse(B, Out, Depth + 1);
  } else if (match(Cond, m_SpecificICmp(ICmpInst::ICMP_UGE, m_Value(A), m_Value(B)))) {
    Out.push_back(Fact{A, B});
  } else if (match(Cond, m_SpecificICmp(ICmpInst::ICMP_ULE, m_Value(A), m_Value(B)))) {
    Out.push_back(Fact{B, A});
  }
}

class Versioner {
public:
  explicit Versioner(Function &F) : F(F), DT(F) {}

  /// Versions the kernel; Entry is its `oxide.kernels` entry, if it has one
  /// with flags (then the host can pick the version at launch).
  bool run(MDNode *Entry) {
    if (!smallEnough())
      return false;
    for (BasicBlock &BB : F)
      if (auto *Br = dyn_cast<BranchInst>(BB.getTerminator());
          Br && Br->isConditional() && DT.isReachableFromEntry(&BB))
        visit(Br->getCondition(), Br, 0, factsAt(&BB), 0);
    if (Preconditions.empty())
      return false;
    // The host evaluates the condition for free at each launch, so even one
    // bound alone (`i < c.len` before `a[i]`) is worth an entry of its own.
    if (Entry)
      if (std::optional<std::string> Program = launchProgram()) {
        specializeAtLaunch(*Entry, *Program);
        return true;
      }
    // In one function, checks implied by one bound alone are
    // MergeBoundsChecks' business: one compare against the smallest length
    // costs the same as a second body, and measured faster for vecadd.
    if (none_of(Preconditions, [](const Precondition &P) { return P.K != nullptr; }) ||
        hasLooseAsmLabel())
      return false;
    copyBody(precondition());
    return true;
  }

private:
  Function &F;
  DominatorTree DT;
  /// The uses (user, operand index) that are `true` in the copy.
  SmallVector<std::pair<Instruction *, unsigned>> Removable;
  SmallVector<Precondition> Preconditions;
  /// Conjuncts removed in the copy, and conjuncts another one's removal
  /// relied on (which therefore stay).
  SmallPtrSet<Value *, 16> Removed, Relied;
  DenseMap<BasicBlock *, SmallVector<Fact>> FactMemo;

  bool smallEnough() const {
    unsigned Count = 0;
    for (const BasicBlock &BB : F)
      Count += BB.size();
    return Count <= MaxInstructions;
  }

  /// Inline asm defining a label outside braces: in two bodies of one
  /// function it would be defined twice in the PTX (in two functions it is
  /// not: PTX labels are local to their function).
  bool hasLooseAsmLabel() const {
    for (const BasicBlock &BB : F)
      for (const Instruction &I : BB)
        if (const auto *CB = dyn_cast<CallBase>(&I))
          if (const auto *Asm = dyn_cast<InlineAsm>(CB->getCalledOperand());
              Asm && Asm->getAsmString().find(':') != std::string::npos &&
              !StringRef(Asm->getAsmString()).ltrim().starts_with("{"))
            return true;
    return false;
  }

  /// The facts that hold in BB: the conditions of branches whose true edge
  /// dominates it, and the negated disjuncts of those whose false edge does.
  const SmallVector<Fact> &factsAt(BasicBlock *BB) {
    auto [It, New] = FactMemo.try_emplace(BB);
    if (!New)
      return It->second;
    SmallVector<Fact> Facts;
    for (DomTreeNode *N = DT.getNode(BB) ? DT.getNode(BB)->getIDom() : nullptr; N; N = N->getIDom()) {
      auto *Br = dyn_cast<BranchInst>(N->getBlock()->getTerminator());
      if (!Br || !Br->isConditional() || Br->getSuccessor(0) == Br->getSuccessor(1))
        continue;
      if (DT.dominates(BasicBlockEdge(N->getBlock(), Br->getSuccessor(0)), BB))
        collectFacts(Br->getCondition(), Facts, /*AsSiblings=*/false);
      else if (DT.dominates(BasicBlockEdge(N->getBlock(), Br->getSuccessor(1)), BB))
        collectFactsWhenFalse(Br->getCondition(), Facts);
    }
    // Outermost first: the user's own tests come before the checks nested
    // in them, and give the weakest precondition (`c.len <= b.len` rather
    // than `a.len <= b.len` after `a[i]` was checked).
    std::reverse(Facts.begin(), Facts.end());
    It->second = std::move(Facts);
    return It->second;
  }

  /// Walks the `and` tree at operand OpIdx of User, with the facts that hold
  /// wherever that operand's value matters.
  void visit(Value *Node, Instruction *User, unsigned OpIdx, SmallVector<Fact> Known, unsigned Depth) {
    Value *A, *B;
    if (Depth < 16 && matchAnd(Node, A, B)) {
      auto *And = cast<Instruction>(Node);
      // Rewriting And's operands changes its value for every user, so the
      // facts from outside hold only if this use is its only one.
      if (!And->hasOneUse())
        Known = factsAt(And->getParent());
      SmallVector<Fact> ForA = Known, ForB = Known;
      // `select A, B, false` evaluates B only where A holds (B may be
      // poison elsewhere), so B's facts cannot remove A: the select would
      // become B.
      if (!isa<SelectInst>(And))
        collectFacts(B, ForA, /*AsSiblings=*/true);
      collectFacts(A, ForB, /*AsSiblings=*/true);
      visit(A, And, 0, std::move(ForA), Depth + 1);
      visit(B, And, 1, std::move(ForB), Depth + 1);
      return;
    }
    auto *Cmp = dyn_cast<ICmpInst>(Node);
    std::optional<Fact> Check = Cmp ? asFact(Cmp) : std::nullopt;
    if (!Check || !isLaunchInvariant(Check->Bound) || Relied.contains(Cmp))
      return;
    SmallVector<Value *, 2> Used;
    if (std::optional<Precondition> P = implied(*Check, Known, Used); P && !neverHolds(*P)) {
      Removable.push_back({User, OpIdx});
      Removed.insert(Cmp);
      Relied.insert(Used.begin(), Used.end());
      if (!is_contained(Preconditions, *P))
        Preconditions.push_back(*P);
    }
  }

  /// A precondition on constants that is false (`32 <= 8`): a copy that
  /// never runs.
  static bool neverHolds(const Precondition &P) {
    const APInt *M, *K, *L;
    if (!match(P.M, m_APInt(M)) || !match(P.L, m_APInt(L)))
      return false;
    if (!P.K)
      return M->ugt(*L);
    if (!match(P.K, m_APInt(K)))
      return false;
    bool Overflow = false;
    APInt Area = M->zext(128).umul_ov(K->zext(128), Overflow);
    return Overflow || Area.ugt(L->zext(128));
  }

  /// The precondition under which `Check.X < Check.Bound` follows from Known.
  /// Used receives the sibling conjuncts the proof relies on.
  std::optional<Precondition> implied(const Fact &Check, ArrayRef<Fact> Known,
                                      SmallVectorImpl<Value *> &Used) {
    auto boundOf = [&](Value *X) -> Value * {
      for (const Fact &F : Known)
        if (F.X == X && isLaunchInvariant(F.Bound) && !(F.Leaf && Removed.contains(F.Leaf))) {
          if (F.Leaf)
            Used.push_back(F.Leaf);
          return F.Bound;
        }
      return nullptr;
    };
    Value *L = Check.Bound;
    // The tile's shape first: `rows * cols <= out.len()` is what a user
    // sizes buffers by, where a bound of the index itself may be another
    // buffer's length (`o < input.len()` before `o < out.len()`).
    if (std::optional<Precondition> P = impliedByShape(Check, boundOf))
      return P;
    if (Value *M = boundOf(Check.X))
      return Precondition{M, nullptr, L};
    return std::nullopt;
  }

  /// X = R * K + C with R < M and C < K: the precondition `M * K <= L`
  /// (integers; the product is exact).
  template <typename BoundOf>
  std::optional<Precondition> impliedByShape(const Fact &Check, BoundOf &boundOf) const {
    Value *L = Check.Bound;
    if (!Check.X->getType()->isIntegerTy() || Check.X->getType()->getIntegerBitWidth() > 64)
      return std::nullopt;
    Value *P, *Q;
    if (!match(Check.X, m_Add(m_Value(P), m_Value(Q))) &&
        !match(Check.X, m_DisjointOr(m_Value(P), m_Value(Q))))
      return std::nullopt;
    for (auto [Mul, C] : {std::pair{P, Q}, std::pair{Q, P}}) {
      Value *R1, *R2;
      const APInt *Shift;
      SmallVector<std::pair<Value *, Value *>, 2> Factors; // (R, K)
      if (match(Mul, m_Mul(m_Value(R1), m_Value(R2)))) {
        Factors.push_back({R1, R2});
        Factors.push_back({R2, R1});
      } else if (match(Mul, m_Shl(m_Value(R1), m_APInt(Shift))) && Shift->ult(63)) {
        Factors.push_back({R1, ConstantInt::get(Mul->getType(), APInt::getOneBitSet(64, Shift->getZExtValue()))});
      }
      for (auto [R, K] : Factors) {
        Value *M = boundOf(R);
        Value *CBound = boundOf(C);
        if (!M || !CBound || !isLaunchInvariant(K))
          continue;
        if (CBound == K)
          return Precondition{M, K, L};
        const APInt *CB, *KC;
        if (match(CBound, m_APInt(CB)) && match(K, m_APInt(KC)) && CB->ule(*KC))
          return Precondition{M, K, L};
      }
    }
    return std::nullopt;
  }

  /// The same for every thread of the launch: constants, kernel parameters
  /// (the loads from them), the block and grid sizes, and pure arithmetic
  /// on those. (Not the block index: every block takes the same body, so
  /// nothing that synchronises blocks of a cluster meets two bodies.)
  bool isLaunchInvariant(Value *V, unsigned Depth = 0) const {
    if (isa<Constant>(V) || isa<Argument>(V))
      return true;
    auto *I = dyn_cast<Instruction>(V);
    if (!I || Depth > 8)
      return false;
    if (auto *Load = dyn_cast<LoadInst>(I))
      return Load->isSimple() && isParameterMemory(Load->getPointerOperand());
    if (auto *II = dyn_cast<IntrinsicInst>(I))
      switch (II->getIntrinsicID()) {
      case Intrinsic::nvvm_read_ptx_sreg_ntid_x:
      case Intrinsic::nvvm_read_ptx_sreg_ntid_y:
      case Intrinsic::nvvm_read_ptx_sreg_ntid_z:
      case Intrinsic::nvvm_read_ptx_sreg_nctaid_x:
      case Intrinsic::nvvm_read_ptx_sreg_nctaid_y:
      case Intrinsic::nvvm_read_ptx_sreg_nctaid_z:
        return true;
      default:
        break;
      }
    if (!isSpeculatable(*I))
      return false;
    return all_of(I->operands(), [&](Value *Op) { return isLaunchInvariant(Op, Depth + 1); });
  }

  /// A kernel parameter's memory: a `byval` argument, at a constant offset.
  static bool isParameterMemory(Value *Ptr) {
    auto *Arg = dyn_cast<Argument>(Ptr->stripInBoundsConstantOffsets());
    return Arg && Arg->hasByValAttr() && Arg->onlyReadsMemory();
  }

  /// V computed in the entry block, before its terminator (instructions
  /// defined elsewhere are copied there: they are pure and speculatable).
  Value *atEntry(Value *V, IRBuilder<> &B, DenseMap<Value *, Value *> &Copies) {
    auto *I = dyn_cast<Instruction>(V);
    if (!I || I->getParent() == &F.getEntryBlock())
      return V;
    if (Value *Done = Copies.lookup(V))
      return Done;
    Instruction *Copy = I->clone();
    for (Use &Op : Copy->operands())
      Op.set(atEntry(Op.get(), B, Copies));
    B.Insert(Copy, I->getName() + ".launch");
    Copies[V] = Copy;
    return Copy;
  }

  /// The conjunction of every precondition (there is at least one),
  /// computed at the end of the entry block.
  Value *precondition() {
    BasicBlock &Entry = F.getEntryBlock();
    IRBuilder<> B(Entry.getTerminator());
    DenseMap<Value *, Value *> Copies;
    Value *All = nullptr;
    for (const Precondition &P : Preconditions) {
      // M, K and L have the check's type: the compares and the index
      // arithmetic they come from take operands of one type.
      Value *M = atEntry(P.M, B, Copies), *L = atEntry(P.L, B, Copies);
      Value *Holds;
      if (!P.K) {
        Holds = B.CreateICmpULE(M, L, "launch.fits");
      } else {
        Value *K = atEntry(P.K, B, Copies);
        // Both factors below 2^32 (one test of their high halves), so the
        // product fits and is one 32 × 32 → 64-bit multiply; a wider
        // dimension takes the body with checks. (The exact test,
        // `umul.with.overflow`, costs a 128-bit product on every launch:
        // about fifteen instructions per warp, a tenth of transpose's.)
        unsigned Bits = M->getType()->getIntegerBitWidth();
        Type *Wide = B.getInt64Ty();
        Value *Narrow = nullptr;
        if (Bits > 32) {
          Value *High = B.CreateLShr(B.CreateOr(M, K), 32);
          Narrow = B.CreateICmpEQ(High, ConstantInt::get(M->getType(), 0), "launch.narrow");
          M = B.CreateTrunc(M, B.getInt32Ty());
          K = B.CreateTrunc(K, B.getInt32Ty());
        }
        Value *Area = B.CreateMul(B.CreateZExt(M, Wide), B.CreateZExt(K, Wide), "launch.area",
                                  /*HasNUW=*/true, /*HasNSW=*/true);
        L = B.CreateZExt(L, Wide);
        Holds = B.CreateICmpULE(Area, L, "launch.fits");
        if (Narrow)
          Holds = B.CreateAnd(Narrow, Holds);
      }
      All = All ? B.CreateAnd(All, Holds) : Holds;
    }
    All->setName("launch.checked");
    return All;
  }

  /// The conjunction of every precondition as the host's program (`M K mulx
  /// L ule`, exact), or nothing if a value is beyond the host.
  std::optional<std::string> launchProgram() const {
    LaunchProgramWriter W;
    for (const Precondition &P : Preconditions) {
      if (!W.value(P.M))
        return std::nullopt;
      if (P.K) {
        if (!W.value(P.K))
          return std::nullopt;
        W.op(ConditionToken::MulExact);
      }
      if (!W.value(P.L))
        return std::nullopt;
      W.op(ConditionToken::Ule);
      if (&P != &Preconditions.front())
        W.op(ConditionToken::And);
    }
    return W.program();
  }

  /// A second kernel, `<name>_unchecked`, without the implied checks; the
  /// kernel's `oxide.kernels` entry gains it and the program that tells the
  /// host when to launch it instead.
  void specializeAtLaunch(MDNode &Entry, const std::string &Program) {
    Module &M = *F.getParent();
    std::string Name = (F.getName() + "_unchecked").str();
    if (M.getNamedValue(Name))
      return;
    ValueToValueMapTy VMap;
    Function *Unchecked = CloneFunction(&F, VMap);
    Unchecked->setName(Name);
    SmallVector<BasicBlock *> Blocks;
    for (BasicBlock &BB : *Unchecked)
      Blocks.push_back(&BB);
    removeImplied(VMap, Blocks);
    LLVMContext &Ctx = M.getContext();
    SmallVector<Metadata *> Ops(Entry.operands());
    Ops.push_back(ValueAsMetadata::get(Unchecked));
    Ops.push_back(MDString::get(Ctx, Program));
    NamedMDNode *Kernels = M.getNamedMetadata(KernelsMetadata);
    for (unsigned I = 0; I < Kernels->getNumOperands(); ++I)
      if (Kernels->getOperand(I) == &Entry)
        Kernels->setOperand(I, MDNode::get(Ctx, Ops));
  }

  /// In the copy Blocks (mapped by VMap), every implied check is `true`;
  /// the branches, panics and conditions that became dead go.
  void removeImplied(ValueToValueMapTy &VMap, ArrayRef<BasicBlock *> Blocks) {
    for (auto [User, OpIdx] : Removable)
      cast<Instruction>(VMap[User])->setOperand(OpIdx, ConstantInt::getTrue(F.getContext()));
    for (BasicBlock *BB : Blocks)
      ConstantFoldTerminator(BB, /*DeleteDeadConditions=*/true);
    removeUnreachableBlocks(*Blocks.front()->getParent());
  }

  /// Entry: ... ; br %launch.checked, label %copy, label %original.
  void copyBody(Value *Launch) {
    BasicBlock &Entry = F.getEntryBlock();
    BasicBlock *Original = SplitBlock(&Entry, Entry.getTerminator()->getIterator(), &DT, nullptr, nullptr, "body");
    SmallVector<BasicBlock *> Body;
    for (BasicBlock &BB : F)
      if (&BB != &Entry)
        Body.push_back(&BB);
    ValueToValueMapTy VMap;
    SmallVector<BasicBlock *> Copy;
    for (BasicBlock *BB : Body) {
      BasicBlock *C = CloneBasicBlock(BB, VMap, ".unchecked", &F);
      VMap[BB] = C;
      Copy.push_back(C);
    }
    remapInstructionsInBlocks(Copy, VMap);
    Instruction *Term = Entry.getTerminator();
    BranchInst::Create(cast<BasicBlock>(VMap[Original]), Original, Launch, Term->getIterator());
    Term->eraseFromParent();
    removeImplied(VMap, Copy);
  }
};

/// Each kernel's `oxide.kernels` entry, where it has its flags (operand 3)
/// and no unchecked entry yet.
DenseMap<Function *, MDNode *> kernelEntries(Module &M) {
  DenseMap<Function *, MDNode *> Out;
  if (NamedMDNode *MD = M.getNamedMetadata(KernelsMetadata))
    for (MDNode *N : MD->operands())
      if (N->getNumOperands() == 4)
        if (auto *F = mdconst::dyn_extract_or_null<Function>(N->getOperand(0)))
          Out[F] = N;
  return Out;
}

} // namespace

PreservedAnalyses VersionBoundsChecksPass::run(Module &M, ModuleAnalysisManager &) {
  DenseMap<Function *, MDNode *> Entries = kernelEntries(M);
  // The list first: specializing adds kernels, which are not visited.
  SmallVector<Function *> Kernels;
  for (Function &F : M)
    if (!F.isDeclaration() && F.getCallingConv() == CallingConv::PTX_Kernel)
      Kernels.push_back(&F);
  bool Changed = false;
  for (Function *F : Kernels)
    Changed |= Versioner(*F).run(Entries.lookup(F));
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

//===- ThreadUniformBranches.cpp - One test of a block-uniform condition ---===//
//
// A tile kernel tests once whether its tile is whole and then, in a loop the
// unroller copied V times, takes the fast path or the careful one for every
// vector it loads:
//
//     unroll!(full, while j < V {
//         if full { v[j] = load_vector(j) } else { v[j] = load_elements(j) }
//     })
//
//   join0:  %v0 = phi …  ; the address of vector 1
//           br %full, label %fast1, label %careful1
//   fast1:  load <vector 1> ; br label %join1
//   join1:  %v1 = phi …  ; the address of vector 2
//           br %full, label %fast2, label %careful2
//
// Each join re-tests `%full`, so ptxas sees V diamonds, each a reconvergence
// point (BSSY/BSYNC) between two loads, and the loads of a whole tile are
// not one straight block. LLVM's JumpThreading would send the fast path on
// to the next fast block, but it does nothing on a target with divergent
// branches (NVPTX), whatever the condition.
//
// This pass does it for conditions that are the same in every thread of the
// block (BlockUniformity: from block indices, kernel parameters, loads at
// such addresses): for a block B that ends in
// `br %c` and a predecessor P in which `%c` is known (P ends in `br %c`, or
// P lies under one edge of a branch on `%c`), it gives P a copy of B's
// instructions that jumps straight to the successor `%c` picks there, and
// repairs SSA for B's values (phis where the copy's and B's paths meet).
// Repeated, the fast path of a tile becomes one straight run of loads and
// the careful path another. SimplifyCFG, EarlyCSE and InstCombine then
// merge the chain of blocks and the copies' repeated arithmetic.
//
// Only small blocks are copied (a block's arithmetic, not its work), never
// one with a convergent call (a barrier or warp collective must stay one
// instruction that every thread reaches) nor a loop header (no loop gains a
// second entry). Divergent conditions are left alone: on them, threading
// would move where the threads of a warp reconverge.
//
// Why this keeps Rust's semantics: an SSA value has one value wherever it is
// defined, and P runs only on paths where `%c` has the known value, so from
// P, B always goes to that successor; the copy computes B's instructions
// from the same operands (B's phis take P's incoming values) and goes there
// too. Nothing is added to any path: each instruction runs as often as
// before, in the same order.
//===----------------------------------------------------------------------===//
#include "BlockCoordinates.h"
#include "oxide/Passes.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/EarlyCSE.h"
#include "llvm/Transforms/Scalar/SimplifyCFG.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/SSAUpdater.h"
#include "llvm/Transforms/Utils/ValueMapper.h"
#include <optional>

using namespace llvm;
using namespace oxide;

// Off until an H200 run shows it pays: on the look-back kernels of
// cuda-prims it removes a quarter of the branches but costs ptxas registers
// (docs/DESIGN.md). `OXIDE_LLVM_ARGS=-oxide-thread-uniform-branches` turns
// it on in a link (and the lit test on in oxide-opt).
static cl::opt<bool> Enabled("oxide-thread-uniform-branches",
                             cl::desc("thread branches on block-uniform conditions (off: the pass does nothing)"));

namespace {

/// The most instructions (besides phis and the branch) a block may have to
/// be copied into a predecessor: the address arithmetic between two
/// vectors of a tile, not a computation.
constexpr unsigned MaxCopiedInstructions = 16;

/// The most copies made in one function: every thread of a chain of V
/// tests is one copy, so this bounds the growth of a kernel that has
/// hundreds of them.
constexpr unsigned MaxThreadsPerFunction = 512;

/// Whether values are the same in every thread of a block: computed by
/// pure instructions from constants, the kernel's parameters, the block's
/// and grid's coordinates and sizes, and loads at such addresses (a
/// parameter's bytes, a block's shared tile number after its barrier). A
/// phi is when its values are and every thread enters its block by the
/// same edge (joinsUniformly). LLVM's uniformity analysis cannot serve:
/// for NVPTX every load through a generic pointer is divergent, and each
/// of a kernel's parameters is such a load. Nor can AlignBarriers', which
/// must be sound (a barrier it aligns wrongly hangs the block), so it takes
/// no load but of parameters and invariant memory, and no phi after a
/// branch only some threads take: the tile number a look-back block's
/// first thread takes and shares would count as divergent, and so would
/// every tile's `full`. This is only a heuristic of where threading pays:
/// threading keeps the semantics whatever the answer.
class BlockUniformity {
public:
  explicit BlockUniformity(const DominatorTree &DT) : DT(DT) {}

  bool isUniform(const Value *V, unsigned Depth = 0) {
    if (isa<Constant>(V))
      return true;
    if (auto *Arg = dyn_cast<Argument>(V))
      return Arg->getParent()->getCallingConv() == CallingConv::PTX_Kernel;
    auto *I = dyn_cast<Instruction>(V);
    if (!I || Depth > MaxDepth)
      return false;
    if (auto Known = Memo.find(I); Known != Memo.end())
      return Known->second;
    Memo[I] = false; // a cycle through a loop's phi: not shown uniform
    bool Uniform = computeUniform(*I, Depth + 1);
    Memo[I] = Uniform;
    return Uniform;
  }

private:
  static constexpr unsigned MaxDepth = 24;
  const DominatorTree &DT;
  DenseMap<const Instruction *, bool> Memo;

  bool operandsUniform(const Instruction &I, unsigned Depth) {
    return all_of(I.operands(), [&](const Use &U) { return isUniform(U.get(), Depth); });
  }

  bool computeUniform(const Instruction &I, unsigned Depth) {
    if (auto *Call = dyn_cast<IntrinsicInst>(&I))
      return isBlockWideCoordinate(Call->getIntrinsicID());
    if (isa<CallBase>(I) || I.isAtomic() || I.mayWriteToMemory())
      return false;
    if (auto *Load = dyn_cast<LoadInst>(&I))
      return isUniform(Load->getPointerOperand(), Depth);
    if (auto *Phi = dyn_cast<PHINode>(&I))
      return operandsUniform(I, Depth) && joinsUniformly(*Phi, Depth);
    if (isa<BinaryOperator>(I) || isa<CastInst>(I) || isa<CmpInst>(I) || isa<SelectInst>(I) ||
        isa<GetElementPtrInst>(I) || isa<FreezeInst>(I) || isa<ExtractValueInst>(I) ||
        isa<InsertValueInst>(I) || isa<UnaryOperator>(I))
      return operandsUniform(I, Depth);
    return false;
  }

  /// Whether every thread of a block takes the same edge into the phi's
  /// block: each conditional branch between its immediate dominator and it
  /// tests a uniform condition, or all its paths enter the phi's block by
  /// one edge (the thread that takes a ticket for the block, then a
  /// barrier that all wait at).
  bool joinsUniformly(const PHINode &Phi, unsigned Depth) {
    const BasicBlock *Join = Phi.getParent();
    const DomTreeNode *Node = DT.getNode(Join);
    if (!Node || !Node->getIDom())
      return false;
    const BasicBlock *Top = Node->getIDom()->getBlock();
    SmallVector<const BasicBlock *> Work(pred_begin(Join), pred_end(Join));
    SmallPtrSet<const BasicBlock *, 16> Region;
    SmallVector<const BranchInst *> Divergent;
    while (!Work.empty()) {
      const BasicBlock *B = Work.pop_back_val();
      if (!Region.insert(B).second)
        continue;
      auto *Branch = dyn_cast<BranchInst>(B->getTerminator());
      if (Region.size() > 64 || !Branch)
        return false;
      if (Branch->isConditional() && !isUniform(Branch->getCondition(), Depth))
        Divergent.push_back(Branch);
      if (B != Top)
        Work.append(pred_begin(B), pred_end(B));
    }
    return all_of(Divergent, [&](const BranchInst *Branch) {
      return entryEdgesFrom(Branch->getParent(), Join, Region) <= 1;
    });
  }

  /// How many of Join's predecessors the paths from B inside Region reach:
  /// more than one, and the edge into Join depends on B's branch.
  static unsigned entryEdgesFrom(const BasicBlock *B, const BasicBlock *Join,
                                 const SmallPtrSetImpl<const BasicBlock *> &Region) {
    SmallPtrSet<const BasicBlock *, 16> Seen, Entries;
    SmallVector<const BasicBlock *> Work{B};
    while (!Work.empty()) {
      const BasicBlock *X = Work.pop_back_val();
      if (!Seen.insert(X).second)
        continue;
      for (const BasicBlock *Next : successors(X)) {
        if (Next == Join)
          Entries.insert(X);
        else if (Region.contains(Next))
          Work.push_back(Next);
      }
    }
    return Entries.size();
  }
};

class Threader {
public:
  explicit Threader(Function &F) : F(F) {}

  /// Threads until no block can be, or the budget is spent; true if
  /// anything changed.
  bool run() {
    bool Changed = false;
    for (unsigned Made = 0; Made < MaxThreadsPerFunction; ++Made) {
      DominatorTree DT(F);
      LoopInfo LI(DT);
      if (!threadOne(DT, LI))
        break;
      Changed = true;
    }
    return Changed;
  }

private:
  Function &F;

  /// Finds one block and predecessor to thread, and threads them.
  bool threadOne(DominatorTree &DT, LoopInfo &LI) {
    BlockUniformity Uniformity(DT);
    for (BasicBlock &B : F) {
      auto *Branch = dyn_cast<BranchInst>(B.getTerminator());
      if (!Branch || !Branch->isConditional() || !copyable(B, LI))
        continue;
      Value *Cond = Branch->getCondition();
      if (auto *I = dyn_cast<Instruction>(Cond); I && I->getParent() == &B)
        continue; // computed in B: no predecessor knows it
      if (!Uniformity.isUniform(Cond))
        continue;
      for (BasicBlock *P : predecessors(&B)) {
        if (P == &B || !entersOnce(*P, B))
          continue;
        std::optional<bool> Known = knownOnEdge(Cond, P, &B, DT);
        if (!Known)
          continue;
        thread(*P, B, Branch->getSuccessor(*Known ? 0 : 1));
        return true;
      }
    }
    return false;
  }

  /// Whether P ends in a branch with one edge to B (a branch whose two
  /// edges both go to B gives B's phis two entries for P).
  static bool entersOnce(BasicBlock &P, BasicBlock &B) {
    auto *Branch = dyn_cast<BranchInst>(P.getTerminator());
    return Branch && (Branch->isUnconditional() || Branch->getSuccessor(0) != Branch->getSuccessor(1));
  }

  /// Whether B may be copied: small, no convergent call, nothing that must
  /// stay one instruction, not a loop header.
  static bool copyable(BasicBlock &B, const LoopInfo &LI) {
    if (LI.isLoopHeader(&B) || B.isEHPad() || B.hasAddressTaken())
      return false;
    unsigned Count = 0;
    for (Instruction &I : B) {
      if (isa<PHINode>(I) || I.isTerminator() || I.isDebugOrPseudoInst())
        continue;
      if (++Count > MaxCopiedInstructions)
        return false;
      if (auto *Call = dyn_cast<CallBase>(&I); Call && (Call->isConvergent() || Call->cannotDuplicate()))
        return false;
      if (I.getType()->isTokenTy() || isa<AllocaInst>(I))
        return false;
    }
    return true;
  }

  /// The value of Cond wherever the edge P → B is taken, if a branch on it
  /// decides it: P's own branch, or one whose edge dominates P.
  static std::optional<bool> knownOnEdge(Value *Cond, BasicBlock *P, BasicBlock *B,
                                         const DominatorTree &DT) {
    if (auto *Own = dyn_cast<BranchInst>(P->getTerminator());
        Own && Own->isConditional() && Own->getCondition() == Cond &&
        Own->getSuccessor(0) != Own->getSuccessor(1))
      return Own->getSuccessor(0) == B;
    for (User *U : Cond->users()) {
      auto *Test = dyn_cast<BranchInst>(U);
      if (!Test || !Test->isConditional() || Test->getCondition() != Cond ||
          Test->getSuccessor(0) == Test->getSuccessor(1))
        continue;
      BasicBlock *At = Test->getParent();
      if (At == P)
        continue;
      if (DT.dominates(BasicBlockEdge(At, Test->getSuccessor(0)), P))
        return true;
      if (DT.dominates(BasicBlockEdge(At, Test->getSuccessor(1)), P))
        return false;
    }
    return std::nullopt;
  }

  /// Gives P a copy of B that jumps to Succ, and repairs SSA.
  void thread(BasicBlock &P, BasicBlock &B, BasicBlock *Succ) {
    LLVMContext &Ctx = F.getContext();
    BasicBlock *Copy = BasicBlock::Create(Ctx, B.getName() + ".known", &F, &B);
    ValueToValueMapTy Map;
    for (PHINode &Phi : B.phis())
      Map[&Phi] = Phi.getIncomingValueForBlock(&P);
    for (Instruction &I : B) {
      if (isa<PHINode>(I) || I.isTerminator())
        continue;
      Instruction *New = I.clone();
      New->setName(I.getName());
      New->insertInto(Copy, Copy->end());
      RemapInstruction(New, Map, RF_IgnoreMissingLocals | RF_NoModuleLevelChanges);
      Map[&I] = New;
    }
    BranchInst::Create(Succ, Copy)->setDebugLoc(B.getTerminator()->getDebugLoc());
    for (PHINode &Phi : Succ->phis()) {
      Value *FromB = Phi.getIncomingValueForBlock(&B);
      Value *Mapped = Map.lookup(FromB);
      Phi.addIncoming(Mapped ? Mapped : FromB, Copy);
    }
    B.removePredecessor(&P, /*KeepOneInputPHIs=*/true);
    P.getTerminator()->replaceSuccessorWith(&B, Copy);
    repairSSA(B, *Copy, Map);
  }

  /// B's values used outside B now arrive from B or from its copy: each
  /// use takes the one on its path (a phi where both paths meet).
  static void repairSSA(BasicBlock &B, BasicBlock &Copy, ValueToValueMapTy &Map) {
    for (Instruction &I : B) {
      if (I.isTerminator())
        continue;
      SmallVector<Use *> Outside;
      for (Use &U : I.uses()) {
        auto *User = cast<Instruction>(U.getUser());
        if (auto *Phi = dyn_cast<PHINode>(User)) {
          if (Phi->getIncomingBlock(U) == &B || Phi->getIncomingBlock(U) == &Copy)
            continue;
        } else if (User->getParent() == &B || User->getParent() == &Copy) {
          continue;
        }
        Outside.push_back(&U);
      }
      if (Outside.empty())
        continue;
      SSAUpdater Updater;
      Updater.Initialize(I.getType(), I.getName());
      Updater.AddAvailableValue(&B, &I);
      Updater.AddAvailableValue(&Copy, Map.lookup(&I));
      for (Use *U : Outside)
        Updater.RewriteUse(*U);
    }
  }
};

} // namespace

PreservedAnalyses ThreadUniformBranchesPass::run(Module &M, ModuleAnalysisManager &MAM) {
  if (!Enabled)
    return PreservedAnalyses::all();
  FunctionAnalysisManager &FAM = MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
  bool Changed = false;
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    if (!Threader(F).run())
      continue;
    Changed = true;
    FAM.invalidate(F, PreservedAnalyses::none());
    removeUnreachableBlocks(F);
    // The chains of copies: one block each, and their arithmetic once.
    FunctionPassManager Cleanup;
    Cleanup.addPass(SimplifyCFGPass());
    Cleanup.addPass(EarlyCSEPass());
    Cleanup.addPass(InstCombinePass());
    Cleanup.addPass(SimplifyCFGPass());
    FAM.invalidate(F, Cleanup.run(F, FAM));
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

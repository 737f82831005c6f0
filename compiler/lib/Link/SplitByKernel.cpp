//===- SplitByKernel.cpp - The optimised device module, one part per kernel ===//
//
// After the pipeline of Passes.def has run on the whole program (every check,
// link step and optimisation that must see all kernels at once), what is left
// is code generation and ptxas, which see one function at a time. This step
// cuts the module into parts that can be compiled in parallel and cached one
// by one (Compile.cpp, PartCache.cpp); the parts' PTX is joined again into one
// module (joinPtxParts, LinkPtx.cpp), so the image is the same program:
//   * every kernel entry (with its `_unchecked` twin, VersionBoundsChecks)
//     is a part of its own, with every function and variable only it reaches;
//   * whatever two parts reach (a shared helper, a `#[constant]` table, a
//     string of panic locations), whatever has external linkage (exports to
//     CUDA C++, host-visible statics) and whatever those reach is in the
//     common part, defined once; the other parts declare it, and the join
//     keeps the one definition;
//   * nothing is duplicated, so each function keeps its one address, each
//     static its one storage, and ptxas's frames keep naming the functions
//     the call graph names (StackBound.cpp); but for
//   * a shared-memory variable that several kernels reach only through
//     code of their own parts (a `static` in a generic kernel's body, one
//     item for all its instances): each of those parts defines it, internal.
//     A block runs one kernel and has shared memory of its own, so no
//     kernel can tell its copy from another's, and within a part there is
//     one. Left in the common part it would be external, and nvlink lays
//     out external shared variables once for the whole image: each kernel
//     would get the shared memory of every such variable placed before its
//     own, kilobytes of other kernels' arrays that lower its limit for
//     dynamic shared memory and its occupancy. The join keeps one of the
//     identical definitions.
//     A shared variable that common code reaches stays common.
// Before cutting, the module's symbols get the names the NVPTX backend would
// give them (it renames local symbols with characters PTX does not allow and
// numbers unnamed ones per module, which would differ between parts): private
// symbols become internal (the same within one module, and declarable from
// another part), unnamed ones are named after their contents, so an edit of
// one kernel renames nothing in another part. A symbol one part defines and
// another declares becomes external, so each part is a valid relocatable PTX
// module for `ptxas -c` on its own.
//
// Before O3, cutFront cuts the legalised module in a few pieces of many
// kernels each, for LLVM's O3 on several threads, by other rules: a piece
// has its kernels and what only it reaches; what several pieces reach stays
// in the module (piece 0) under one definition, which the other pieces
// copy to optimise against and drop after O3 (dropBorrowed); the pieces are
// linked into the module again before the post-O3 passes (docs/DESIGN.md,
// "Build time with many kernels").
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/NVPTXAddrSpace.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"
#include <map>

using namespace llvm;
using namespace oxide;

namespace {

/// The NVPTX backend's rule for local symbol names (NVPTXAssignValidGlobalNames):
/// every character other than a letter, digit, `_` or `$` becomes `_$_`.
std::string validPtxName(StringRef Name) {
  std::string Out;
  for (char C : Name)
    if (isAlnum(C) || C == '_' || C == '$')
      Out += C;
    else
      Out += "_$_";
  return Out;
}

/// The global values a constant refers to, through constant expressions and
/// aggregates.
void collectGlobals(const Constant *C, SmallPtrSetImpl<const Constant *> &Seen,
                    SetVector<const GlobalValue *> &Out) {
  if (!Seen.insert(C).second)
    return;
  if (const auto *GV = dyn_cast<GlobalValue>(C)) {
    Out.insert(GV);
    return;
  }
  for (const Use &U : C->operands())
    if (const auto *Op = dyn_cast<Constant>(U.get()))
      collectGlobals(Op, Seen, Out);
}

/// What a global value's definition refers to.
SetVector<const GlobalValue *> referencesOf(const GlobalValue &GV) {
  SetVector<const GlobalValue *> Out;
  SmallPtrSet<const Constant *, 16> Seen;
  if (const auto *F = dyn_cast<Function>(&GV)) {
    for (const Instruction &I : instructions(*F))
      for (const Use &U : I.operands())
        if (const auto *C = dyn_cast<Constant>(U.get()))
          collectGlobals(C, Seen, Out);
    if (F->hasPersonalityFn())
      collectGlobals(F->getPersonalityFn(), Seen, Out);
  } else if (const auto *V = dyn_cast<GlobalVariable>(&GV)) {
    if (V->hasInitializer())
      collectGlobals(V->getInitializer(), Seen, Out);
  } else if (const auto *A = dyn_cast<GlobalAlias>(&GV)) {
    collectGlobals(A->getAliasee(), Seen, Out);
  }
  Out.remove(&GV);
  return Out;
}

/// Adds to Out the global values that metadata attached to GV, or to the
/// instructions of its body, names.
void metadataGlobals(const GlobalValue &GV, DenseSet<const GlobalValue *> &Out) {
  SmallPtrSet<const Metadata *, 16> Seen;
  SmallVector<const Metadata *, 16> Work;
  SmallVector<std::pair<unsigned, MDNode *>, 4> MDs;
  auto Add = [&](const GlobalObject &O) {
    MDs.clear();
    O.getAllMetadata(MDs);
    for (const auto &[Kind, N] : MDs)
      Work.push_back(N);
  };
  if (const auto *O = dyn_cast<GlobalObject>(&GV))
    Add(*O);
  if (const auto *F = dyn_cast<Function>(&GV))
    for (const Instruction &I : instructions(*F)) {
      if (!I.hasMetadata())
        continue;
      MDs.clear();
      I.getAllMetadata(MDs);
      for (const auto &[Kind, N] : MDs)
        Work.push_back(N);
    }
  while (!Work.empty()) {
    const Metadata *MD = Work.pop_back_val();
    if (!MD || !Seen.insert(MD).second)
      continue;
    if (const auto *V = dyn_cast<ValueAsMetadata>(MD)) {
      SmallPtrSet<const Constant *, 8> SeenC;
      SetVector<const GlobalValue *> Globals;
      if (const auto *C = dyn_cast<Constant>(V->getValue()))
        collectGlobals(C, SeenC, Globals);
      Out.insert(Globals.begin(), Globals.end());
    } else if (const auto *N = dyn_cast<MDNode>(MD)) {
      for (const MDOperand &Op : N->operands())
        Work.push_back(Op.get());
    }
  }
}

/// A part of M: declarations of the Needed global values, definitions of
/// those Define accepts. What llvm::CloneModule with the same predicate,
/// followed by erasing every declaration the part does not use, would give,
/// in the same order; but its work is that of the part, where CloneModule
/// first declares every global of M, which made cutting a module of N kernels
/// cost N times the whole module. Named metadata other than oxide's records
/// is copied with what it names outside the part left null, as erasing that
/// declaration would. What Borrow accepts among what the part does not
/// define keeps its body or initializer and its linkage, without a comdat: a
/// piece of the front (cutFront) optimises its own copy, so that it may
/// inline or fold it as M would, and drops it after O3 (dropBorrowed).
std::unique_ptr<Module> clonePart(const Module &M, const DenseSet<const GlobalValue *> &Needed,
                                  function_ref<bool(const GlobalValue *)> Define,
                                  function_ref<bool(const GlobalValue *)> Borrow = nullptr) {
  auto Part = std::make_unique<Module>(M.getModuleIdentifier(), M.getContext());
  Part->setSourceFileName(M.getSourceFileName());
  Part->setDataLayout(M.getDataLayout());
  Part->setTargetTriple(M.getTargetTriple());
  Part->setModuleInlineAsm(M.getModuleInlineAsm());
  ValueToValueMapTy VMap;
  // Every symbol first, so that bodies and initializers can refer to them.
  for (const GlobalVariable &G : M.globals())
    if (Needed.count(&G)) {
      auto *New = new GlobalVariable(*Part, G.getValueType(), G.isConstant(), G.getLinkage(),
                                     nullptr, G.getName(), nullptr, G.getThreadLocalMode(),
                                     G.getAddressSpace());
      New->copyAttributesFrom(&G);
      VMap[&G] = New;
    }
  for (const Function &F : M)
    if (Needed.count(&F)) {
      Function *New = Function::Create(F.getFunctionType(), F.getLinkage(), F.getAddressSpace(),
                                       F.getName(), Part.get());
      New->copyAttributesFrom(&F);
      VMap[&F] = New;
    }
  for (const GlobalAlias &A : M.aliases()) {
    if (!Needed.count(&A))
      continue;
    if (Define(&A)) {
      auto *New = GlobalAlias::create(A.getValueType(), A.getAddressSpace(), A.getLinkage(),
                                      A.getName(), Part.get());
      New->copyAttributesFrom(&A);
      VMap[&A] = New;
      continue;
    }
    // Declared as what it aliases: an alias cannot be a declaration.
    GlobalValue *Decl;
    if (auto *FT = dyn_cast<FunctionType>(A.getValueType()))
      Decl = Function::Create(FT, GlobalValue::ExternalLinkage, A.getAddressSpace(), A.getName(),
                              Part.get());
    else
      Decl = new GlobalVariable(*Part, A.getValueType(), false, GlobalValue::ExternalLinkage,
                                nullptr, A.getName(), nullptr, A.getThreadLocalMode(),
                                A.getAddressSpace());
    VMap[&A] = Decl;
  }
  auto CopyComdat = [&](GlobalObject *To, const GlobalObject *From) {
    if (const Comdat *C = From->getComdat()) {
      Comdat *New = Part->getOrInsertComdat(C->getName());
      New->setSelectionKind(C->getSelectionKind());
      To->setComdat(New);
    }
  };
  SmallVector<std::pair<unsigned, MDNode *>, 1> MDs;
  for (const GlobalVariable &G : M.globals()) {
    if (!Needed.count(&G))
      continue;
    auto *New = cast<GlobalVariable>(VMap[&G]);
    MDs.clear();
    G.getAllMetadata(MDs);
    for (const auto &[Kind, N] : MDs)
      New->addMetadata(Kind, *MapMetadata(N, VMap, RF_NullMapMissingGlobalValues));
    if (G.isDeclaration())
      continue;
    if (!Define(&G)) {
      if (Borrow && Borrow(&G)) {
        New->setInitializer(MapValue(G.getInitializer(), VMap));
        continue;
      }
      New->setLinkage(GlobalValue::ExternalLinkage);
      continue;
    }
    if (G.hasInitializer())
      New->setInitializer(MapValue(G.getInitializer(), VMap));
    CopyComdat(New, &G);
  }
  for (const Function &F : M) {
    if (!Needed.count(&F))
      continue;
    auto *New = cast<Function>(VMap[&F]);
    if (F.isDeclaration()) {
      MDs.clear();
      F.getAllMetadata(MDs);
      for (const auto &[Kind, N] : MDs)
        New->addMetadata(Kind, *MapMetadata(N, VMap, RF_NullMapMissingGlobalValues));
      continue;
    }
    bool Borrowed = !Define(&F) && Borrow && Borrow(&F);
    if (!Define(&F) && !Borrowed) {
      New->setLinkage(GlobalValue::ExternalLinkage);
      // copyAttributesFrom took the personality, which a declaration cannot have.
      New->setPersonalityFn(nullptr);
      continue;
    }
    auto NewArg = New->arg_begin();
    for (const Argument &A : F.args()) {
      NewArg->setName(A.getName());
      VMap[&A] = &*NewArg++;
    }
    SmallVector<ReturnInst *, 8> Returns;
    CloneFunctionInto(New, &F, VMap, CloneFunctionChangeType::ClonedModule, Returns);
    if (F.hasPersonalityFn())
      New->setPersonalityFn(MapValue(F.getPersonalityFn(), VMap));
    if (!Borrowed)
      CopyComdat(New, &F);
  }
  for (const GlobalAlias &A : M.aliases())
    if (Needed.count(&A) && Define(&A))
      if (const Constant *C = A.getAliasee())
        cast<GlobalAlias>(VMap[&A])->setAliasee(MapValue(C, VMap));
  for (const NamedMDNode &N : M.named_metadata()) {
    // oxide's records are about the whole module; splitByKernel drops them.
    if (N.getName().starts_with("oxide."))
      continue;
    NamedMDNode *New = Part->getOrInsertNamedMetadata(N.getName());
    for (const MDNode *Op : N.operands())
      New->addOperand(MapMetadata(Op, VMap, RF_NullMapMissingGlobalValues));
  }
  return Part;
}

} // namespace

void oxide::nameForSplit(Module &M) {
  std::map<std::string, unsigned> Taken;
  for (GlobalValue &GV : M.global_values()) {
    if (GV.hasPrivateLinkage())
      GV.setLinkage(GlobalValue::InternalLinkage);
    if (GV.isDeclaration() || GV.hasName())
      continue;
    // Named after what it holds, not where it stands in the module.
    std::string Text;
    raw_string_ostream OS(Text);
    if (auto *V = dyn_cast<GlobalVariable>(&GV); V && V->hasInitializer())
      V->getInitializer()->print(OS);
    else if (auto *F = dyn_cast<Function>(&GV))
      F->print(OS);
    auto Hash = BLAKE3::hash<8>(arrayRefFromStringRef(Text));
    std::string Name = "__oxide_anon_" + toHex(Hash, /*LowerCase=*/true);
    unsigned N = Taken[Name]++;
    GV.setName(N ? Name + "_" + std::to_string(N) : Name);
  }
  for (GlobalValue &GV : M.global_values())
    if (GV.hasLocalLinkage() && !GV.getName().starts_with("llvm."))
      if (std::string Valid = validPtxName(GV.getName()); Valid != GV.getName())
        GV.setName(Valid);
}

std::vector<std::unique_ptr<Module>> oxide::splitByKernel(Module &M) {
  // The roots: each kernel with its unchecked twin (oxide.kernels), then any
  // other entry on its own.
  std::vector<std::vector<const Function *>> Roots;
  // The part a definition is in: 0 = common, EachPart = every part that
  // reaches it (shared-memory variables of several kernels' own code).
  constexpr int EachPart = -1;
  std::map<const GlobalValue *, int> Owner;
  if (NamedMDNode *MD = M.getNamedMetadata(KernelsMetadata))
    for (MDNode *N : MD->operands()) {
      auto *Entry = mdconst::dyn_extract_or_null<Function>(N->getOperand(0));
      if (!Entry || Entry->isDeclaration() || Owner.count(Entry))
        continue;
      std::vector<const Function *> R = {Entry};
      if (N->getNumOperands() > 4)
        if (auto *Unchecked = mdconst::dyn_extract_or_null<Function>(N->getOperand(4)))
          if (!Unchecked->isDeclaration() && !Owner.count(Unchecked))
            R.push_back(Unchecked);
      for (const Function *F : R)
        Owner[F] = int(Roots.size()) + 1;
      Roots.push_back(R);
    }
  for (const Function &F : M)
    if (!F.isDeclaration() && F.getCallingConv() == CallingConv::PTX_Kernel && !Owner.count(&F)) {
      Owner[&F] = int(Roots.size()) + 1;
      Roots.push_back({&F});
    }

  std::map<const GlobalValue *, SetVector<const GlobalValue *>> Refs;
  for (const GlobalValue &GV : M.global_values())
    if (!GV.isDeclaration())
      Refs[&GV] = referencesOf(GV);

  // Which parts reach each definition.
  std::map<const GlobalValue *, std::set<int>> ReachedBy;
  for (size_t P = 0; P < Roots.size(); ++P) {
    SmallVector<const GlobalValue *, 32> Work(Roots[P].begin(), Roots[P].end());
    while (!Work.empty()) {
      const GlobalValue *GV = Work.pop_back_val();
      if (GV->isDeclaration() || !ReachedBy[GV].insert(int(P) + 1).second)
        continue;
      for (const GlobalValue *R : Refs[GV])
        Work.push_back(R);
    }
  }
  for (const GlobalValue &GV : M.global_values()) {
    if (GV.isDeclaration() || Owner.count(&GV))
      continue;
    auto It = ReachedBy.find(&GV);
    bool One = It != ReachedBy.end() && It->second.size() == 1;
    bool Local = GV.hasLocalLinkage() && isa<GlobalObject>(GV);
    const auto *Var = dyn_cast<GlobalVariable>(&GV);
    if (Local && !One && It != ReachedBy.end() && Var && Var->getAddressSpace() == NVPTXAS::ADDRESS_SPACE_SHARED)
      Owner[&GV] = EachPart; // common after all if common code refers to it (below)
    else
      Owner[&GV] = One && Local ? *It->second.begin() : 0;
  }
  // What the common part reaches is common too.
  SmallVector<const GlobalValue *, 64> Work;
  for (const auto &[GV, P] : Owner)
    if (P == 0)
      Work.push_back(GV);
  while (!Work.empty()) {
    const GlobalValue *GV = Work.pop_back_val();
    for (const GlobalValue *R : Refs[GV]) {
      auto It = Owner.find(R);
      if (It == Owner.end() || It->second == 0 || isa<Function>(R) &&
          cast<Function>(R)->getCallingConv() == CallingConv::PTX_Kernel)
        continue;
      It->second = 0;
      Work.push_back(R);
    }
  }
  // A definition another part refers to is external, so that part's
  // declaration names it.
  for (const auto &[GV, Refd] : Refs)
    for (const GlobalValue *R : Refd) {
      auto It = Owner.find(R);
      if (It != Owner.end() && It->second != EachPart && It->second != Owner[GV] && R->hasLocalLinkage()) {
        auto *Mut = const_cast<GlobalValue *>(R);
        Mut->setLinkage(GlobalValue::ExternalLinkage);
        Mut->setVisibility(GlobalValue::DefaultVisibility);
      }
    }

  // What each part defines, and what it must declare: everything its
  // definitions refer to, through operands or metadata.
  std::vector<std::vector<const GlobalValue *>> Defines(Roots.size() + 1);
  for (const auto &[GV, P] : Owner)
    if (P != EachPart)
      Defines[P].push_back(GV);
    else
      for (int Reaching : ReachedBy[GV])
        Defines[Reaching].push_back(GV);
  std::vector<std::unique_ptr<Module>> Parts;
  for (size_t P = 0; P <= Roots.size(); ++P) {
    DenseSet<const GlobalValue *> Needed(Defines[P].begin(), Defines[P].end());
    for (const GlobalValue *GV : Defines[P]) {
      for (const GlobalValue *R : Refs[GV])
        Needed.insert(R);
      metadataGlobals(*GV, Needed);
    }
    auto Define = [&](const GlobalValue *GV) {
      auto It = Owner.find(GV);
      if (It != Owner.end() && It->second == EachPart)
        return P > 0 && ReachedBy[GV].count(int(P));
      return It != Owner.end() && It->second == int(P);
    };
    // clonePart knows no ifuncs, which NVPTX has no use for either.
    ValueToValueMapTy VMap;
    std::unique_ptr<Module> Part =
        M.ifunc_empty() ? clonePart(M, Needed, Define) : CloneModule(M, VMap, Define);
    Part->setModuleIdentifier("oxide-part");
    Part->setSourceFileName("oxide-part");
    // oxide's records were read from the whole module; in a part they would
    // only tie its contents (and its cache key) to the other kernels.
    SmallVector<NamedMDNode *> OxideRecords;
    for (NamedMDNode &N : Part->named_metadata())
      if (N.getName().starts_with("oxide."))
        OxideRecords.push_back(&N);
    for (NamedMDNode *N : OxideRecords)
      Part->eraseNamedMetadata(N);
    // Declarations nothing in the part uses, repeatedly (a dropped
    // initializer may have been their last user).
    for (bool Changed = true; Changed;) {
      Changed = false;
      for (GlobalValue &GV : make_early_inc_range(Part->global_values()))
        if (GV.isDeclaration() && !GV.isMaterializable()) {
          GV.removeDeadConstantUsers();
          if (GV.use_empty()) {
            GV.eraseFromParent();
            Changed = true;
          }
        }
    }
    if (P > 0 || !Part->empty() || !Part->global_empty())
      Parts.push_back(std::move(Part));
  }
  return Parts;
}

FrontCut oxide::cutFront(Module &M, unsigned Count) {
  FrontCut Cut;
  if (Count < 2 || !M.alias_empty() || !M.ifunc_empty())
    return Cut;
  // The roots of each piece: its kernels; piece 0 also has every other
  // symbol M exports (device exports, host-visible statics, llvm.used) and
  // whatever named metadata names, which stay with M.
  std::vector<SmallVector<const GlobalValue *, 16>> Roots(Count);
  std::map<const GlobalValue *, unsigned> KernelPiece;
  for (const Function &F : M)
    if (!F.isDeclaration() && F.getCallingConv() == CallingConv::PTX_Kernel) {
      unsigned P = xxh3_64bits(F.getName()) % Count;
      KernelPiece[&F] = P;
      Roots[P].push_back(&F);
    }
  unsigned Used = llvm::count_if(Roots, [](const auto &R) { return !R.empty(); });
  if (Used < 2)
    return Cut;
  for (const GlobalValue &GV : M.global_values())
    if (!GV.isDeclaration() && !GV.hasLocalLinkage() && !KernelPiece.count(&GV))
      Roots[0].push_back(&GV);
  for (const NamedMDNode &N : M.named_metadata()) {
    if (N.getName() == KernelsMetadata)
      continue;
    DenseSet<const GlobalValue *> Named;
    SmallPtrSet<const Metadata *, 16> Seen;
    SmallVector<const Metadata *, 16> Work(N.operands().begin(), N.operands().end());
    while (!Work.empty()) {
      const Metadata *MD = Work.pop_back_val();
      if (!MD || !Seen.insert(MD).second)
        continue;
      if (const auto *V = dyn_cast<ValueAsMetadata>(MD)) {
        if (const auto *C = dyn_cast<Constant>(V->getValue())) {
          SmallPtrSet<const Constant *, 8> SeenC;
          SetVector<const GlobalValue *> Globals;
          collectGlobals(C, SeenC, Globals);
          Named.insert(Globals.begin(), Globals.end());
        }
      } else if (const auto *Node = dyn_cast<MDNode>(MD)) {
        for (const MDOperand &Op : Node->operands())
          Work.push_back(Op.get());
      }
    }
    for (const GlobalValue *GV : Named)
      if (!GV->isDeclaration() && !KernelPiece.count(GV))
        Roots[0].push_back(GV);
  }

  // What each definition refers to, through operands and attached metadata.
  std::map<const GlobalValue *, SmallVector<const GlobalValue *, 8>> Refs;
  for (const GlobalValue &GV : M.global_values()) {
    if (GV.isDeclaration())
      continue;
    SetVector<const GlobalValue *> Direct = referencesOf(GV);
    DenseSet<const GlobalValue *> ByMetadata;
    metadataGlobals(GV, ByMetadata);
    Direct.insert(ByMetadata.begin(), ByMetadata.end());
    Refs[&GV].assign(Direct.begin(), Direct.end());
  }
  // Which pieces reach each definition, as a bit set.
  std::map<const GlobalValue *, SmallBitVector> ReachedBy;
  for (unsigned P = 0; P < Count; ++P) {
    SmallVector<const GlobalValue *, 64> Work(Roots[P].begin(), Roots[P].end());
    while (!Work.empty()) {
      const GlobalValue *GV = Work.pop_back_val();
      if (GV->isDeclaration())
        continue;
      SmallBitVector &By = ReachedBy[GV];
      if (By.empty())
        By.resize(Count);
      if (By.test(P))
        continue;
      By.set(P);
      for (const GlobalValue *R : Refs[GV])
        Work.push_back(R);
    }
  }

  // The piece that defines each definition: a kernel its own; a local
  // symbol only one other piece reaches, that piece; everything else M,
  // where a local symbol another piece reaches is lent under an external
  // name for the time of O3.
  std::map<const GlobalValue *, unsigned> Owner;
  unsigned Anonymous = 0;
  for (GlobalValue &GV : M.global_values()) {
    if (GV.isDeclaration())
      continue;
    if (auto K = KernelPiece.find(&GV); K != KernelPiece.end()) {
      Owner[&GV] = K->second;
      continue;
    }
    auto It = ReachedBy.find(&GV);
    if (It == ReachedBy.end()) {
      Owner[&GV] = 0; // reached by nothing: dead, erased from M below
      continue;
    }
    const SmallBitVector &By = It->second;
    if (GV.hasLocalLinkage() && By.count() == 1 && !By.test(0)) {
      Owner[&GV] = By.find_first();
      continue;
    }
    Owner[&GV] = 0;
    if (GV.hasLocalLinkage() && By.find_next(0) != -1) {
      Cut.Lent.push_back({GV.getName().str(), GV.getLinkage(), !GV.hasName()});
      if (!GV.hasName())
        GV.setName("__oxide_front_lent_" + Twine(Anonymous++));
      Cut.Lent.back().Name = GV.getName().str();
      GV.setLinkage(GlobalValue::ExternalLinkage);
    }
  }

  // What a piece may copy of M's definitions: a function's body (to inline,
  // and to know what it reads and writes, as M does: LLVM infers no
  // attributes from an available_externally body, which would leave the
  // piece's calls to a shared helper less optimised than M's) or a
  // constant's initializer (to fold); not a variable's, which only M's one
  // definition may hold. The copies are external, as M's definitions are
  // while O3 runs, and dropBorrowed makes them declarations after it.
  auto Lendable = [](const GlobalValue *GV) {
    if (GV->isInterposable())
      return false;
    if (const auto *F = dyn_cast<Function>(GV))
      return F->getCallingConv() != CallingConv::PTX_Kernel;
    const auto *V = dyn_cast<GlobalVariable>(GV);
    return V && V->isConstant() && V->hasInitializer() && !V->isExternallyInitialized();
  };
  for (unsigned P = 1; P < Count; ++P) {
    if (Roots[P].empty())
      continue;
    DenseSet<const GlobalValue *> Needed;
    for (const auto &[GV, By] : ReachedBy)
      if (By.test(P)) {
        Needed.insert(GV);
        Needed.insert(Refs[GV].begin(), Refs[GV].end());
      }
    auto Define = [&](const GlobalValue *GV) {
      auto It = Owner.find(GV);
      return It != Owner.end() && It->second == P;
    };
    std::unique_ptr<Module> Piece = clonePart(M, Needed, Define, Lendable);
    // O3 needs none of the module's records; the link back into M would
    // only append copies of them.
    SmallVector<NamedMDNode *> Records;
    for (NamedMDNode &N : Piece->named_metadata())
      if (N.getName() != "llvm.module.flags")
        Records.push_back(&N);
    for (NamedMDNode *N : Records)
      Piece->eraseNamedMetadata(N);
    Cut.Pieces.push_back(std::move(Piece));
  }

  if (NamedMDNode *MD = M.getNamedMetadata(KernelsMetadata))
    for (unsigned I = 0; I < MD->getNumOperands(); ++I)
      if (auto *Entry = mdconst::dyn_extract_or_null<Function>(MD->getOperand(I)->getOperand(0)))
        if (auto K = KernelPiece.find(Entry); K != KernelPiece.end() && K->second != 0)
          Cut.Rows.push_back({I, Entry->getName().str()});
  // M keeps piece 0: the other pieces' kernels become declarations, and
  // what only they reach, or nothing does, goes.
  SmallVector<GlobalValue *, 64> Erase;
  for (GlobalValue &GV : M.global_values()) {
    if (GV.isDeclaration())
      continue;
    unsigned P = Owner[&GV];
    if (KernelPiece.count(&GV)) {
      if (P != 0)
        cast<Function>(GV).deleteBody();
      continue;
    }
    if (P != 0 || !ReachedBy.count(&GV))
      Erase.push_back(&GV);
  }
  for (GlobalValue *GV : Erase)
    if (auto *F = dyn_cast<Function>(GV))
      F->deleteBody();
    else
      cast<GlobalVariable>(GV)->setInitializer(nullptr);
  for (GlobalValue *GV : Erase) {
    GV->removeDeadConstantUsers();
    if (GV->use_empty())
      GV->eraseFromParent();
    else
      GV->setLinkage(GlobalValue::ExternalLinkage); // still named: stays declared
  }
  return Cut;
}

void oxide::restoreFront(Module &M, const FrontCut &Cut) {
  for (const FrontCut::LentSymbol &L : Cut.Lent) {
    GlobalValue *GV = M.getNamedValue(L.Name);
    if (!GV || GV->isDeclaration())
      continue;
    GV->setLinkage(L.Linkage);
    GV->setVisibility(GlobalValue::DefaultVisibility);
    if (L.Unnamed)
      GV->setName("");
  }
  NamedMDNode *MD = M.getNamedMetadata(KernelsMetadata);
  for (const auto &[Row, Name] : Cut.Rows) {
    Function *Entry = M.getFunction(Name);
    if (!MD || Row >= MD->getNumOperands() || !Entry)
      continue;
    MDNode *N = MD->getOperand(Row);
    SmallVector<Metadata *> Ops(N->operands());
    Ops[0] = ValueAsMetadata::get(Entry);
    MD->setOperand(Row, MDNode::get(M.getContext(), Ops));
  }
}

void oxide::dropBorrowed(Module &Piece) {
  // A piece defines its kernels and local symbols; any other definition is
  // a copy of M's.
  for (GlobalValue &GV : Piece.global_values()) {
    if (GV.isDeclaration() || GV.hasLocalLinkage())
      continue;
    if (auto *F = dyn_cast<Function>(&GV)) {
      if (F->getCallingConv() == CallingConv::PTX_Kernel)
        continue;
      F->deleteBody();
    } else if (auto *V = dyn_cast<GlobalVariable>(&GV)) {
      V->setInitializer(nullptr);
    }
    if (auto *O = dyn_cast<GlobalObject>(&GV))
      O->setComdat(nullptr);
    GV.setLinkage(GlobalValue::ExternalLinkage);
  }
}

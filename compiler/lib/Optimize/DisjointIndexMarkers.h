//===- DisjointIndexMarkers.h - What reaches DisjointSlice::get_mut -*- C++ -*-===//
//
// `DisjointSlice::get_mut` passes the element index of each `ThreadIndex`
// through the marker stub of the index's kind (Stubs.def kind Marker:
// `disjoint_index_1d(index)`, `_2d(index, row_len, at)`, `_3d(index,
// row_len, rows_per_plane, at)`; `at` is the `&core::panic::Location` of
// the get_mut call). The markers are pure declarations through O3, so what
// survives it is what a kernel can really hand a DisjointSlice. After O3,
// RecordKernelDimensions records which kinds each kernel reaches and
// LowerDisjointIndices checks their row lengths, then removes them. Both
// ask the same question, answered here: which markers can a kernel reach,
// through direct calls and, at a call through a pointer, through every
// function whose address is taken (any of them could be the callee).
//===----------------------------------------------------------------------===//
#ifndef OXIDE_LIB_DISJOINTINDEXMARKERS_H
#define OXIDE_LIB_DISJOINTINDEXMARKERS_H

#include "oxide/Abi.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include <optional>

namespace oxide {

/// The dimensions a ThreadIndex covers (cuda_device::thread::Dimensions).
enum class IndexKind { OneD, TwoD, ThreeD };

/// The marker stubs, by kind.
inline constexpr llvm::StringLiteral MarkerStubs[] = {"disjoint_index_1d", "disjoint_index_2d",
                                                      "disjoint_index_3d"};

/// The kind of index whose marker `Callee` is, if it is one.
inline std::optional<IndexKind> markerKind(const llvm::Function &Callee) {
  for (unsigned K = 0; K < 3; ++K)
    if (isStubSymbol(Callee.getName(), MarkerStubs[K]))
      return static_cast<IndexKind>(K);
  return std::nullopt;
}

/// The kernel flag (Abi.def, KernelRecord.flags) of an index kind.
inline uint64_t kernelFlag(IndexKind K) {
  switch (K) {
  case IndexKind::OneD: return KernelIndexes1d;
  case IndexKind::TwoD: return KernelIndexes2d;
  case IndexKind::ThreeD: return KernelIndexes3d;
  }
  return 0;
}

/// Every function with a body that Entry can reach (Entry included): its
/// direct callees and theirs and, wherever a call goes through a pointer,
/// every function whose address is taken, and what those reach.
inline llvm::SmallPtrSet<llvm::Function *, 32> functionsReachedFrom(llvm::Function &Entry) {
  using namespace llvm;
  SmallPtrSet<Function *, 32> Seen{&Entry};
  SmallVector<Function *> Work{&Entry};
  bool AddressTakenAdded = false;
  auto Visit = [&](Function *F) {
    if (!F->isDeclaration() && Seen.insert(F).second)
      Work.push_back(F);
  };
  while (!Work.empty()) {
    Function *F = Work.pop_back_val();
    for (Instruction &I : instructions(*F)) {
      auto *Call = dyn_cast<CallBase>(&I);
      if (!Call || Call->isInlineAsm())
        continue;
      if (Function *Callee = Call->getCalledFunction()) {
        Visit(Callee);
      } else if (!AddressTakenAdded) {
        AddressTakenAdded = true;
        for (Function &G : *Entry.getParent())
          if (G.hasAddressTaken(nullptr, /*IgnoreCallbackUses=*/false, /*IgnoreAssumeLikeCalls=*/true,
                                /*IgnoreLLVMUsed=*/true))
            Visit(&G);
      }
    }
  }
  return Seen;
}

/// The marker calls in Functions, with their kinds.
inline llvm::SmallVector<std::pair<llvm::CallInst *, IndexKind>>
markerCallsIn(const llvm::SmallPtrSetImpl<llvm::Function *> &Functions) {
  using namespace llvm;
  SmallVector<std::pair<CallInst *, IndexKind>> Markers;
  for (Function *F : Functions)
    for (Instruction &I : instructions(*F))
      if (auto *Call = dyn_cast<CallInst>(&I))
        if (Function *Callee = Call->getCalledFunction())
          if (std::optional<IndexKind> K = markerKind(*Callee))
            Markers.push_back({Call, *K});
  return Markers;
}

} // namespace oxide

#endif

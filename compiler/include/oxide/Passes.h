//===- Passes.h - The device linker's transformations -----------*- C++ -*-===//
//
// The classes of oxide's passes: ordinary LLVM module passes, each in its own
// file under compiler/lib/ (Legalize/, Link/, Optimize/) whose header comment
// says what it rewrites and why it keeps Rust's semantics. Passes.def lists
// them in the order the device link runs them, with their command-line names;
// Pipeline.h builds and runs the pipeline from it.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_PASSES_H
#define OXIDE_PASSES_H

#include "oxide/Diagnostics.h"
#include "oxide/Targets.h"
#include "llvm/IR/PassManager.h"
#include <map>
#include <string>
#include <vector>

namespace oxide {

//===--- Legalisation, before O3 (lib/Legalize/) ---------------------------===//

/// BuildKernelEntries.cpp: each `__oxide_kernel_entry_*` wrapper → a
/// `ptx_kernel` entry with byval parameters of the host's layout, listed in
/// `oxide.kernels`.
struct BuildKernelEntriesPass : llvm::PassInfoMixin<BuildKernelEntriesPass> {
  BuildKernelEntriesPass(DiagnosticSink &D, const GpuTarget *Target) : Diags(D), Target(Target) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
  const GpuTarget *Target; ///< its parameter space; null: the smaller one
};

/// LinkLibraryBitcode.cpp (lib/Link/): the definitions the kernels reach
/// that only the standard library's rlibs have (core's functions, generic
/// instances shared in debug builds), from the bitcode those rlibs embed.
/// Libraries: the archives (or bitcode files) to take them from, in link
/// order. Verbose: say what is linked from where.
struct LinkLibraryBitcodePass : llvm::PassInfoMixin<LinkLibraryBitcodePass> {
  LinkLibraryBitcodePass(DiagnosticSink &D, std::vector<std::string> Libraries, bool Verbose)
      : Diags(D), Libraries(std::move(Libraries)), Verbose(Verbose) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
  std::vector<std::string> Libraries;
  bool Verbose;
};

/// RecordReadOnlyParams.cpp: lists on each PTX entry the parameter slots
/// ("param:offset", space-separated) that hold the data pointer of a slice
/// nothing writes during the kernel.
struct RecordReadOnlyParamsPass : llvm::PassInfoMixin<RecordReadOnlyParamsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// LowerUnwinding.cpp: `invoke` → `call`; landing pads and personalities go.
struct LowerUnwindingPass : llvm::PassInfoMixin<LowerUnwindingPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// LowerPanics.cpp: core's panic functions → a located report and a trap.
struct LowerPanicsPass : llvm::PassInfoMixin<LowerPanicsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// LowerAtomicStubs.cpp: the atomic stubs of cuda_device::atomic → LLVM
/// atomics with a syncscope.
struct LowerAtomicStubsPass : llvm::PassInfoMixin<LowerAtomicStubsPass> {
  explicit LowerAtomicStubsPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

/// LowerWgmma.cpp: the wgmma stubs → the instruction on the accumulator
/// fragment, loaded before and stored after (SROA keeps it in registers).
/// Target: what the kernels are built for (Targets.def); wgmma on a target
/// without the `wgmma` feature is an error where the optimised kernel still
/// calls it (RejectUnavailableStubs). Null skips the check.
struct LowerWgmmaPass : llvm::PassInfoMixin<LowerWgmmaPass> {
  explicit LowerWgmmaPass(const GpuTarget *Target) : Target(Target) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  const GpuTarget *Target;
};

/// LowerSharedAddress.cpp: `shared_address(ptr)` → the 32-bit .shared address.
struct LowerSharedAddressPass : llvm::PassInfoMixin<LowerSharedAddressPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// LowerInlinePtx.cpp: each `ptx_asm!` site (a function calling the stub
/// `ptx_asm` with its spec) → NVPTX inline asm at each of its calls.
struct LowerInlinePtxPass : llvm::PassInfoMixin<LowerInlinePtxPass> {
  explicit LowerInlinePtxPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

/// LowerInlinePtx.cpp: the errors of PtxasLog (ptxas's output for Ptx) on
/// lines of a `ptx_asm!` template, each reported at the user's Rust line.
void inlinePtxDiagnostics(llvm::StringRef Ptx, llvm::StringRef PtxasLog, llvm::StringRef Arch,
                          DiagnosticSink &Diags);

/// LowerUnrollHints.cpp: `unroll(N)` markers (unroll!, #[unroll]) →
/// `llvm.loop.unroll.*` metadata on the loop that holds each.
struct LowerUnrollHintsPass : llvm::PassInfoMixin<LowerUnrollHintsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// CheckUnrollHints.cpp: a loop still under a full unroll hint after O3 →
/// an error at the hint.
struct CheckUnrollHintsPass : llvm::PassInfoMixin<CheckUnrollHintsPass> {
  explicit CheckUnrollHintsPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

/// LowerIntrinsicStubs.cpp: every other `__oxide_stub_*` → the NVVM
/// intrinsic, function or PTX that Stubs.def names.
struct LowerIntrinsicStubsPass : llvm::PassInfoMixin<LowerIntrinsicStubsPass> {
  /// Target: what the kernels are built for (Targets.def), which must have
  /// what each stub's MIN_SM column asks; null skips the check.
  LowerIntrinsicStubsPass(DiagnosticSink &D, const GpuTarget *Target)
      : Diags(D), Target(Target) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
  const GpuTarget *Target;
};

/// AssignAddressSpaces.cpp: `shared!` and dynamic shared memory →
/// addrspace(3), `#[constant]` → addrspace(4).
struct AssignAddressSpacesPass : llvm::PassInfoMixin<AssignAddressSpacesPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// MapMath.cpp: host math (`llvm.sin.f32`, `cbrtf`, `frem`) → libdevice.
struct MapMathPass : llvm::PassInfoMixin<MapMathPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// DefineMemoryCompare.cpp: `memcmp` and `bcmp`, which core's byte and
/// string comparisons call, get device bodies.
struct DefineMemoryComparePass : llvm::PassInfoMixin<DefineMemoryComparePass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};
/// LowerWideConversions.cpp: saturating float → i128/u128 casts → compares
/// and plain casts.
struct LowerWideConversionsPass : llvm::PassInfoMixin<LowerWideConversionsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// Retarget.cpp: the NVPTX triple and data layout, no host-only attributes,
/// every function and call convergent.
struct RetargetPass : llvm::PassInfoMixin<RetargetPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// SelectReachable.cpp: keeps what the kernel entries reach.
struct SelectReachablePass : llvm::PassInfoMixin<SelectReachablePass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// MarkDeviceExports.cpp: `#[device]` functions exported to CUDA C++ get
/// DeviceExportAttr; their marker statics go.
struct MarkDeviceExportsPass : llvm::PassInfoMixin<MarkDeviceExportsPass> {
  explicit MarkDeviceExportsPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

/// BindDeviceSources.cpp: declarations a CUDA C++ device source defines get
/// DeviceSourceAttr and a row of DeviceSourcesMetadata.
struct BindDeviceSourcesPass : llvm::PassInfoMixin<BindDeviceSourcesPass> {
  explicit BindDeviceSourcesPass(std::map<std::string, std::string> Symbols)
      : Symbols(std::move(Symbols)) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  std::map<std::string, std::string> Symbols;
};

/// RejectUnavailableStubs.cpp: a call O3 left of a stub the target lacks
/// (LowerIntrinsicStubs' placeholders) → an error at the user's call.
struct RejectUnavailableStubsPass : llvm::PassInfoMixin<RejectUnavailableStubsPass> {
  explicit RejectUnavailableStubsPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

/// ThreadUniformBranches.cpp: a block that re-tests a block-uniform
/// condition its predecessor already decided → a copy in that predecessor
/// that goes straight on.
/// Does nothing unless `-oxide-thread-uniform-branches` is given.
struct ThreadUniformBranchesPass : llvm::PassInfoMixin<ThreadUniformBranchesPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// RejectCertainUB.cpp: a kernel every run of which is undefined behaviour
/// (after O3, each path from its entry ends in an `unreachable` that no
/// panic leads to) → an error at the Rust code.
struct RejectCertainUBPass : llvm::PassInfoMixin<RejectCertainUBPass> {
  explicit RejectCertainUBPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

/// RejectCertainUB.cpp too: each kernel entry's Rust line → an entry
/// attribute, before the debug info is stripped, for RejectCertainUB's error.
struct RecordKernelSourcesPass : llvm::PassInfoMixin<RecordKernelSourcesPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// RejectUnsupported.cpp: what the GPU cannot run → an error naming the
/// Rust code.
struct RejectUnsupportedPass : llvm::PassInfoMixin<RejectUnsupportedPass> {
  explicit RejectUnsupportedPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

//===--- Link steps (lib/Link/) --------------------------------------------===//

/// LinkLibDevice.cpp: links the libdevice functions the module calls from
/// the CUDA toolkit at CudaPath. A libdevice that cannot be read stops the
/// link (DiagnosticSink::fail).
struct LinkLibDevicePass : llvm::PassInfoMixin<LinkLibDevicePass> {
  LinkLibDevicePass(DiagnosticSink &D, std::string CudaPath)
      : Diags(D), CudaPath(std::move(CudaPath)) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
  std::string CudaPath;
};

/// DeviceDebugInfo.cpp: what debug info the device code keeps, by
/// OXIDE_DEVICE_DEBUG: none (the default), `lines` or `full`.
struct DeviceDebugInfoPass : llvm::PassInfoMixin<DeviceDebugInfoPass> {
  explicit DeviceDebugInfoPass(std::string Mode) : Mode(std::move(Mode)) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  /// Whether the mode keeps debug info (`lines` or `full`).
  static bool keepsDebugInfo(llvm::StringRef Mode);
  std::string Mode;
};

//===--- After O3 (lib/Optimize/) ------------------------------------------===//

/// LowerAtomics.cpp: every `atomicrmw` with its PTX ordering and scope.
struct LowerAtomicsPass : llvm::PassInfoMixin<LowerAtomicsPass> {
  /// Target: what the kernels are built for; cluster scope needs the
  /// `clusters` feature (Targets.def). Null means a target with every feature.
  explicit LowerAtomicsPass(const GpuTarget *Target) : Target(Target) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  const GpuTarget *Target;
};

/// RecordKernelDimensions.cpp: appends to each `oxide.kernels` entry a fourth
/// operand, `i64 flags` (KernelIndexes1d/2d/3d of Abi.def): which kinds of
/// ThreadIndex the entry can hand DisjointSlice::get_mut. After O3, so that
/// calls the optimiser deleted do not count.
struct RecordKernelDimensionsPass : llvm::PassInfoMixin<RecordKernelDimensionsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// LowerDisjointIndices.cpp: per kernel, the row lengths of the 2-D and 3-D
/// ThreadIndexes it hands DisjointSlice::get_mut must be one launch-wide
/// value (an error otherwise); then get_mut's markers become their index.
struct LowerDisjointIndicesPass : llvm::PassInfoMixin<LowerDisjointIndicesPass> {
  explicit LowerDisjointIndicesPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

/// TagInvariantLoads.cpp: marks the loads through the slots
/// RecordReadOnlyParams listed `!invariant.load` (ld.global.nc) and drops
/// the attribute.
struct TagInvariantLoadsPass : llvm::PassInfoMixin<TagInvariantLoadsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// VersionBoundsChecks.cpp: the kernel gets a second version in which the
/// bounds checks (and the user's own tests) implied by a condition on kernel
/// parameters alone (`rows * cols <= input.len`, say) are `true`: a second
/// entry, which the host launches when it finds the condition true, or a
/// second body the entry block picks.
struct VersionBoundsChecksPass : llvm::PassInfoMixin<VersionBoundsChecksPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// MergeBoundsChecks.cpp: `i < a.len` then `i < b.len` (both failing to a
/// panic, nothing but pure code between) → `i < min(a.len, b.len)`, the
/// failing one sorted out on the way to its panic.
struct MergeBoundsChecksPass : llvm::PassInfoMixin<MergeBoundsChecksPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// DeferSharedStores.cpp: after TagInvariantLoads, moves stores to shared
/// memory below later bounds checks (branches to a panic) and invariant
/// loads, so a tile's global loads are issued before its shared stores.
struct DeferSharedStoresPass : llvm::PassInfoMixin<DeferSharedStoresPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// HoistBoundsChecks.cpp: after DeferSharedStores, lifts bounds checks out of
/// the `if`s that guard loads and merges consecutive checks (across pure code
/// and read-only loads) into one branch, so the guarded loads become
/// branch-free regions that ptxas predicates and issues back to back.
struct HoistBoundsChecksPass : llvm::PassInfoMixin<HoistBoundsChecksPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// AlignBarriers.cpp: rewrites `barrier.sync 0` to the aligned `bar.sync 0`
/// where every thread of the block provably reaches the same barrier
/// instruction (uniform control flow).
struct AlignBarriersPass : llvm::PassInfoMixin<AlignBarriersPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// ShareAddressBases.cpp: the variable part of addresses that differ by a
/// constant, computed once where its operands are defined instead of in
/// each block that uses it.
struct ShareAddressBasesPass : llvm::PassInfoMixin<ShareAddressBasesPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// i128 shifts and funnel shifts by a run-time amount → 64-bit halves whose
/// every shift amount is in 0..=63 (NVPTX's own split shifts a half by up to
/// 127 and then folds as if it could not).
struct ExpandWideShiftsPass : llvm::PassInfoMixin<ExpandWideShiftsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// Null operands of generic-pointer phis and selects that also join a stack
/// or shared address → an opaque null, so that the backend keeps them
/// generic (a null moved into the local window is not null on the way back).
struct KeepNullPointersGenericPass : llvm::PassInfoMixin<KeepNullPointersGenericPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// KeepNaNPayloads.cpp: last before code generation, `select (fcmp x, C),
/// C, x` shapes that hand a NaN `x` back → a merge of the bits under a
/// mask, so ptxas cannot make them a NaN-canonicalising FMNMX.NAN.
struct KeepNaNPayloadsPass : llvm::PassInfoMixin<KeepNaNPayloadsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

} // namespace oxide

#endif

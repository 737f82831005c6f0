//===- Passes.h - The device linker's transformations -----------*- C++ -*-===//
//
// Each transformation of the device module lives in its own file under
// compiler/lib/ with a header comment saying what it rewrites and why. They are
// ordinary LLVM module passes, so `oxide-opt` can run any one of them on a few
// lines of IR for the lit tests, and the linker runs them in this order:
//
//   BuildKernelEntries   entry wrappers → ptx_kernel entries with byval params
//   RecordReadOnlyParams which param bytes hold a `&[T]` nothing writes (rustc's
//                        noalias readonly) → entry attribute
//   LowerUnwinding       invoke → call; landing pads and personalities removed
//   LowerPanics          core's panic functions → located report + trap
//   LowerAtomicStubs     __oxide_stub_atomic_* → atomicrmw/cmpxchg/load/store with syncscope
//   LowerWgmma           __oxide_stub_wgmma_* → wgmma.mma_async asm on register fragments
//   LowerSharedAddress   __oxide_stub_shared_address → 32-bit .shared address
//   LowerIntrinsicStubs  __oxide_stub_* → NVVM intrinsics (Stubs.def)
//   AssignAddressSpaces  shared!/dynamic shared → addrspace(3), #[constant] → (4)
//   MapMath              llvm.sin.f32 / cbrtf / … → libdevice __nv_* (MathFunctions.def)
//   LowerWideConversions saturating float → i128/u128 casts → compares + plain casts
//   Retarget             triple, datalayout, host-only attributes, convergence
//   SelectReachable      keep what the kernels reach, nothing else
//   RejectUnsupported    anything left that the GPU cannot run → error
// then, after LLVM's O3:
//   LowerAtomics         atomicrmw → atom.<sem>.<scope> (the backend drops both)
//   RecordKernelDimensions  which thread coordinates each kernel reads (for
//                        the host's launch-shape check)
//   TagInvariantLoads    loads through read-only slices → !invariant.load
//                        (PTX ld.global.nc)
//   VersionBoundsChecks  a copy of the kernel body without the checks that
//                        the launch's parameters make true, taken when they do
//   MergeBoundsChecks    consecutive checks of one index → one compare
//                        against the smallest length
//   DeferSharedStores    shared-memory stores sink below the bounds checks
//                        and read-only loads after them (loads issue first)
//   HoistBoundsChecks    bounds checks leave the `if`s around guarded loads
//                        and merge into one branch ahead of them
//   AlignBarriers        block barriers in CTA-uniform control flow → aligned
//                        `bar.sync 0`
//   ShareAddressBases    `P + (X + C)` in several blocks → one `P + X` where
//                        P and X are defined, plus an immediate per access
//   KeepNaNPayloads      clamps to a constant that pass a NaN through → a
//                        bit merge ptxas cannot turn into FMNMX.NAN
//===----------------------------------------------------------------------===//
#ifndef OXIDE_PASSES_H
#define OXIDE_PASSES_H

#include "oxide/Diagnostics.h"
#include "llvm/IR/PassManager.h"

namespace oxide {

/// Named metadata listing the kernels: !{ptr @entry, !"host symbol", i64 nparams}
/// (RecordKernelDimensionsPass appends `i64 flags`, VersionBoundsChecksPass
/// may append `ptr @entry_unchecked, !"launch condition"`).
inline constexpr const char *KernelsMetadata = "oxide.kernels";

/// Metadata kind on the inline asm calls that LowerIntrinsicStubs makes from
/// `InlineAsm` stubs: oxide's own PTX, which RejectUnsupported lets through
/// (a user's `asm!` is host assembly and stays an error).
inline constexpr const char *StubAsmMetadata = "oxide.stub.asm";

struct BuildKernelEntriesPass : llvm::PassInfoMixin<BuildKernelEntriesPass> {
  explicit BuildKernelEntriesPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

/// Bits of the per-kernel flags word (docs/ABI.md §3, KernelRecord.flags).
enum KernelFlags : uint64_t {
  KernelReadsX = 1,  // reaches a read of %tid.x or %ctaid.x
  KernelReadsYZ = 2, // reaches a read of %tid.y/z or %ctaid.y/z (or may: inline asm, indirect call)
};

/// Appends to each `oxide.kernels` entry a fourth operand, `i64 flags`
/// (KernelFlags): which thread coordinates the entry can read. Run it last,
/// on the optimised module, so that reads the optimiser deleted do not count.
struct RecordKernelDimensionsPass : llvm::PassInfoMixin<RecordKernelDimensionsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// RecordReadOnlyParams.cpp: before O3, lists on each PTX entry the
/// parameter slots ("param:offset", space-separated) that hold the data
/// pointer of a slice nothing writes during the kernel.
struct RecordReadOnlyParamsPass : llvm::PassInfoMixin<RecordReadOnlyParamsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// TagInvariantLoads.cpp: after O3, marks the loads through those slots'
/// pointers `!invariant.load` (ld.global.nc) and drops the attribute.
struct TagInvariantLoadsPass : llvm::PassInfoMixin<TagInvariantLoadsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// VersionBoundsChecks.cpp: after O3, the kernel gets a second version in
/// which the bounds checks (and the user's own tests) implied by a
/// condition on kernel parameters alone (`rows * cols <= input.len`, say)
/// are `true`: a second entry, which the host launches when it finds the
/// condition true, or a second body the entry block picks.
struct VersionBoundsChecksPass : llvm::PassInfoMixin<VersionBoundsChecksPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// MergeBoundsChecks.cpp: after O3, `i < a.len` then `i < b.len` (both
/// failing to a panic, nothing but pure code between) → `i < min(a.len,
/// b.len)`, the failing one sorted out on the way to its panic.
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

/// AlignBarriers.cpp: after O3, rewrites `barrier.sync 0` to the aligned
/// `bar.sync 0` where every thread of the block provably reaches the same
/// barrier instruction (uniform control flow).
struct AlignBarriersPass : llvm::PassInfoMixin<AlignBarriersPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// ShareAddressBases.cpp: after O3, the variable part of addresses that
/// differ by a constant, computed once where its operands are defined
/// instead of in each block that uses it.
struct ShareAddressBasesPass : llvm::PassInfoMixin<ShareAddressBasesPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// KeepNaNPayloads.cpp: last before code generation, `select (fcmp x, C),
/// C, x` shapes that hand a NaN `x` back → a merge of the bits under a
/// mask, so ptxas cannot make them a NaN-canonicalising FMNMX.NAN.
struct KeepNaNPayloadsPass : llvm::PassInfoMixin<KeepNaNPayloadsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// The function attribute LowerPanics gives the panic functions it defines
/// (their bodies record, print and trap; they read no user memory).
inline constexpr const char *PanicFunctionAttr = "oxide-panic";

/// The entry attribute RecordReadOnlyParams writes and TagInvariantLoads reads.
inline constexpr const char *ReadOnlyPointersAttr = "oxide-readonly-pointers";

struct LowerUnwindingPass : llvm::PassInfoMixin<LowerUnwindingPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

struct LowerPanicsPass : llvm::PassInfoMixin<LowerPanicsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// LowerAtomics.cpp: the atomic stubs of cuda_device::atomic → LLVM atomics.
struct LowerAtomicStubsPass : llvm::PassInfoMixin<LowerAtomicStubsPass> {
  explicit LowerAtomicStubsPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

/// LowerAtomics.cpp, after O3: atomicrmw with its PTX ordering and scope.
struct LowerAtomicsPass : llvm::PassInfoMixin<LowerAtomicsPass> {
  /// TargetSM: 90 for sm_90 (cluster scope needs it); 0 means any.
  explicit LowerAtomicsPass(unsigned TargetSM) : TargetSM(TargetSM) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  unsigned TargetSM;
};

/// LowerWgmma.cpp: the wgmma stubs → the instruction on the accumulator
/// fragment, loaded before and stored after (SROA keeps it in registers).
/// Arch: the --arch the kernels are built for; wgmma on anything but sm_90a
/// is an error. Empty skips the check.
struct LowerWgmmaPass : llvm::PassInfoMixin<LowerWgmmaPass> {
  LowerWgmmaPass(DiagnosticSink &D, std::string Arch) : Diags(D), Arch(std::move(Arch)) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
  std::string Arch;
};

/// LowerSharedAddress.cpp: `shared_address(ptr)` → the 32-bit .shared address.
struct LowerSharedAddressPass : llvm::PassInfoMixin<LowerSharedAddressPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

struct LowerIntrinsicStubsPass : llvm::PassInfoMixin<LowerIntrinsicStubsPass> {
  /// TargetSM: 90 for sm_90; 0 skips the architecture check. ArchSpecific:
  /// the target is an `a` architecture (sm_90a), which `90a` stubs need.
  LowerIntrinsicStubsPass(DiagnosticSink &D, unsigned TargetSM, bool ArchSpecific = false)
      : Diags(D), TargetSM(TargetSM), ArchSpecific(ArchSpecific) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
  unsigned TargetSM;
  bool ArchSpecific;
};

/// 90 for "sm_90" or "sm_90a"; 0 when the name is not of that form.
unsigned smNumber(llvm::StringRef Arch);

/// Whether the name is of an architecture-specific target ("sm_90a").
bool isArchSpecific(llvm::StringRef Arch);

struct AssignAddressSpacesPass : llvm::PassInfoMixin<AssignAddressSpacesPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

/// The link section `shared!` puts its statics in (docs/ABI.md §6).
inline constexpr const char *SharedSection = ".oxide.shared";
/// The link section `#[constant]` puts its statics in (docs/ABI.md §6).
inline constexpr const char *ConstantSection = ".oxide.constant";
/// Named metadata listing constant-memory statics: !{ptr @g, !"host symbol"}.
inline constexpr const char *ConstantsMetadata = "oxide.constants";
/// The static that stands for the kernel's dynamic shared memory.
inline constexpr const char *DynamicSharedGlobal = "__oxide_dynamic_shared";

struct MapMathPass : llvm::PassInfoMixin<MapMathPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

struct LowerWideConversionsPass : llvm::PassInfoMixin<LowerWideConversionsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

struct RetargetPass : llvm::PassInfoMixin<RetargetPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

struct SelectReachablePass : llvm::PassInfoMixin<SelectReachablePass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

struct RejectUnsupportedPass : llvm::PassInfoMixin<RejectUnsupportedPass> {
  explicit RejectUnsupportedPass(DiagnosticSink &D) : Diags(D) {}
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  DiagnosticSink &Diags;
};

/// The device global through which the host hands kernels the address of its
/// panic record (docs/ABI.md §5); it stays visible to cuModuleGetGlobal.
inline constexpr const char *PanicRecordGlobal = "__oxide_panic_record";

/// The NVPTX target triple and data layout every device module gets.
inline constexpr const char *DeviceTriple = "nvptx64-nvidia-cuda";
inline constexpr const char *DeviceDataLayout =
    "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64";

} // namespace oxide

#endif

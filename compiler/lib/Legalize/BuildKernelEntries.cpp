//===- BuildKernelEntries.cpp - Entry wrappers → PTX kernel entries -------===//
//
// `#[kernel]` emits, for each kernel (and, for a generic kernel, for each
// instance the host launches), a wrapper `__oxide_kernel_entry_<name>` that
// takes one pointer per parameter and starts with one call
// `__oxide_stub_param_layout(index, size, align)` per parameter, whose
// arguments rustc has already folded to constants (docs/ABI.md §2).
//
// This pass reads those layouts, deletes the calls, and adds a `ptx_kernel`
// function that declares each parameter as a byval byte array of exactly that
// size and alignment (`.param .align A .b8 p[S]` in PTX) and calls the wrapper
// with pointers to them. So the PTX signature is derived from the same
// compilation as the host's argument values, byte for byte. The wrapper itself
// becomes internal and is inlined away by the optimiser, and so is what it
// calls (the kernel's body): its call sites are marked always-inline, so that
// however large the body, its parameters are the entry's (`.param`, global
// pointers) and no call sits between the entry and the work. Inlining a call
// changes no result.
//
// A kernel whose parameters, laid out in order at their alignments, need
// more than the parameter space is a compile error naming the kernel and its
// byte count: ptxas would refuse the entry, or the driver the launch. The
// space is Abi.def's KernelParamSpace, or KernelParamSpaceLarge when the
// target's PTX ISA (Targets.def) is new enough to allow it.
//
// A `launch_bounds(max_threads, min_blocks)` marker call becomes the entry's
// `nvvm.maxntid` / `nvvm.minctasm` attributes (PTX `.maxntid`, `.minnctapersm`).
// A `cluster_dims(x, y, z)` marker becomes `nvvm.cluster_dim` (PTX
// `.explicitcluster` and `.reqnctapercluster`): the kernel runs in clusters
// of that shape however it is launched, so its cluster intrinsics can trust
// it. The shape must be constants of at least 1 whose product is a portable
// cluster size (at most 8: a larger one needs a run-time attribute, which a
// compile-time shape cannot ask for), on a target with clusters.
//
// An `entry_identity(instance)` marker is deleted: it exists for the host,
// where it gives each wrapper code of its own (the address of the function
// `type_name::<instance>`, which returns the instance's name), so that
// rustc never folds two wrappers into one address, the key the host finds a
// kernel's PTX entry by (docs/ABI.md §2). On the device it has no meaning.
//
// Each entry is listed in the `oxide.kernels` named metadata with the wrapper's
// host symbol, for the kernel table the host looks names up in.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "oxide/Targets.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/InstIterator.h"
#include <set>
#include "llvm/IR/InlineAsm.h"
#include "llvm/Support/MathExtras.h"

using namespace llvm;
using namespace oxide;

namespace {

struct ParamLayout {
  uint64_t Size = 0;
  uint64_t Align = 1;
  bool Seen = false;
};

/// The host symbol of a wrapper: its name without the `.N` suffix the IR
/// linker adds when two modules each had an internal copy.
std::string hostSymbol(StringRef Name) {
  size_t Dot = Name.rfind('.');
  if (Dot != StringRef::npos &&
      Name.drop_front(Dot + 1).find_first_not_of("0123456789") == StringRef::npos)
    return Name.take_front(Dot).str();
  return Name.str();
}

class EntryBuilder {
public:
  EntryBuilder(Module &M, DiagnosticSink &Diags, const GpuTarget *Target)
      : M(M), Diags(Diags), Target(Target) {}

  void build(Function &Wrapper) {
    std::string Host = hostSymbol(Wrapper.getName());
    std::vector<ParamLayout> Layouts(Wrapper.arg_size());
    if (!collectLayouts(Wrapper, Layouts) || !fitsParamSpace(Wrapper, Layouts))
      return;
    if (!Built.insert(Host).second) {
      // Another copy of the same instance already has its entry.
      return;
    }
    Function *Entry = createEntry(Wrapper, Host, Layouts);
    // The wrapper is renamed by now: messages name the kernel by its host symbol.
    applyLaunchBounds(Wrapper, *Entry, Host);
    applyClusterDims(Wrapper, *Entry, Host);
    removeIdentity(Wrapper);
    recordKernel(Entry, Host, Layouts.size());
  }

private:
  Module &M;
  DiagnosticSink &Diags;
  const GpuTarget *Target;
  std::set<std::string> Built;

  bool collectLayouts(Function &Wrapper, std::vector<ParamLayout> &Layouts) {
    std::vector<CallInst *> Markers;
    for (Instruction &I : instructions(Wrapper)) {
      auto *Call = dyn_cast<CallInst>(&I);
      Function *Callee = Call ? Call->getCalledFunction() : nullptr;
      if (!Callee || !isStubSymbol(Callee->getName(), "param_layout"))
        continue;
      auto *Index = dyn_cast<ConstantInt>(Call->getArgOperand(0));
      auto *Size = dyn_cast<ConstantInt>(Call->getArgOperand(1));
      auto *Align = dyn_cast<ConstantInt>(Call->getArgOperand(2));
      if (!Index || !Size || !Align || Index->getZExtValue() >= Layouts.size()) {
        Diags.error({"malformed kernel entry `" + demangleRust(Wrapper.getName()) +
                         "`: parameter layouts must be constants",
                     "",
                     {"entries are generated by #[kernel]; do not write "
                      "`__oxide_kernel_entry_*` functions by hand"}});
        return false;
      }
      ParamLayout &L = Layouts[Index->getZExtValue()];
      L = {Size->getZExtValue(), std::max<uint64_t>(1, Align->getZExtValue()), true};
      Markers.push_back(Call);
    }
    for (unsigned I = 0; I < Layouts.size(); ++I)
      if (!Layouts[I].Seen) {
        Diags.error({"kernel entry `" + demangleRust(Wrapper.getName()) +
                         "` has no layout for parameter " + std::to_string(I),
                     "",
                     {"entries are generated by #[kernel]"}});
        return false;
      }
    for (CallInst *C : Markers)
      C->eraseFromParent();
    return true;
  }

  /// Whether the parameters fit the parameter space; an error if not.
  bool fitsParamSpace(Function &Wrapper, const std::vector<ParamLayout> &Layouts) {
    uint64_t End = 0;
    for (const ParamLayout &L : Layouts)
      End = alignTo(End, L.Align) + std::max<uint64_t>(1, L.Size);
    // Abi.def: the space grows with the PTX ISA the target is built with.
    unsigned Space = Target && Target->PtxIsa >= LargeParamSpacePtxIsa ? KernelParamSpaceLarge
                                                                        : KernelParamSpace;
    if (End <= Space)
      return true;
    std::vector<std::string> Notes;
    if (Target)
      Notes.push_back("that is the parameter space of " + std::string(Target->Name) +
                      ", whose PTX ISA is " + std::to_string(Target->PtxIsa / 10) + "." +
                      std::to_string(Target->PtxIsa % 10));
    if (Space < KernelParamSpaceLarge && End <= KernelParamSpaceLarge)
      Notes.push_back("targets that oxide builds with PTX ISA " + std::to_string(LargeParamSpacePtxIsa / 10) + "." +
                      std::to_string(LargeParamSpacePtxIsa % 10) + " or newer (sm_90 and up) hold " +
                      std::to_string(KernelParamSpaceLarge) + " bytes: `--arch sm_90` on a Hopper GPU");
    Notes.push_back("pass large values through device memory instead: a `&[T]` parameter "
                  "(`slice(buffer)`), or a `#[constant]` or `#[device_global]` static the "
                  "host writes before the launch");
    Diags.error({"kernel `" + kernelPathOf(Wrapper.getName()) + "` takes " + std::to_string(End) +
                     " bytes of parameters; a kernel's parameter space holds " + std::to_string(Space),
                 "", Notes});
    return false;
  }

  /// Moves a `launch_bounds` marker's constants onto the entry.
  void applyLaunchBounds(Function &Wrapper, Function &Entry, const std::string &Host) {
    for (Instruction &I : make_early_inc_range(instructions(Wrapper))) {
      auto *Call = dyn_cast<CallInst>(&I);
      Function *Callee = Call ? Call->getCalledFunction() : nullptr;
      if (!Callee || !isStubSymbol(Callee->getName(), "launch_bounds"))
        continue;
      auto *Max = dyn_cast<ConstantInt>(Call->getArgOperand(0));
      auto *Min = dyn_cast<ConstantInt>(Call->getArgOperand(1));
      if (!Max || !Min || Max->isZero()) {
        Diags.error({"launch_bounds of kernel `" + kernelPathOf(Host) +
                         "` must be constants, with max_threads > 0",
                     "",
                     {"write `#[kernel(launch_bounds(256, 2))]`"}});
      } else {
        Entry.addFnAttr("nvvm.maxntid", std::to_string(Max->getZExtValue()));
        if (!Min->isZero())
          Entry.addFnAttr("nvvm.minctasm", std::to_string(Min->getZExtValue()));
      }
      Call->eraseFromParent();
    }
  }

  /// Deletes the `entry_identity` marker (its operand, a function's
  /// address, is then unused, and the function goes where nothing else
  /// calls it).
  static void removeIdentity(Function &Wrapper) {
    for (Instruction &I : make_early_inc_range(instructions(Wrapper))) {
      auto *Call = dyn_cast<CallInst>(&I);
      Function *Callee = Call ? Call->getCalledFunction() : nullptr;
      if (Callee && isStubSymbol(Callee->getName(), "entry_identity"))
        Call->eraseFromParent();
    }
  }

  /// Moves a `cluster_dims` marker's shape onto the entry.
  void applyClusterDims(Function &Wrapper, Function &Entry, const std::string &Host) {
    for (Instruction &I : make_early_inc_range(instructions(Wrapper))) {
      auto *Call = dyn_cast<CallInst>(&I);
      Function *Callee = Call ? Call->getCalledFunction() : nullptr;
      if (!Callee || !isStubSymbol(Callee->getName(), "cluster_dims"))
        continue;
      std::string Kernel = kernelPathOf(Host);
      uint64_t Dims[3] = {0, 0, 0};
      bool Constant = true;
      for (unsigned D = 0; D < 3; ++D) {
        auto *C = dyn_cast<ConstantInt>(Call->getArgOperand(D));
        Constant &= C != nullptr;
        Dims[D] = C ? C->getZExtValue() : 0;
      }
      uint64_t Blocks = Dims[0] * Dims[1] * Dims[2];
      if (Target && !Target->has(feature::Clusters)) {
        const GpuTarget *Suggest = suggestTargetWith(feature::Clusters, Target);
        Diags.error({"kernel `" + Kernel + "` has cluster_dims, but the kernels are being built for " +
                         std::string(Target->Name) + ", which has no thread-block clusters",
                     "",
                     {"clusters need " + targetNamesWith(feature::Clusters) + "; build with `--arch " +
                      std::string(Suggest ? Suggest->Name : "sm_90") + "`"}});
      } else if (!Constant || Dims[0] == 0 || Dims[1] == 0 || Dims[2] == 0 || Blocks > 8) {
        Diags.error({"cluster_dims of kernel `" + Kernel +
                         "` must be constants of at least 1 with at most 8 blocks in all",
                     "",
                     {"write `#[kernel(cluster_dims(2, 1, 1))]`; for a larger, non-portable cluster "
                      "launch with `config.with_cluster(..).allow_non_portable()` instead"}});
      } else {
        Entry.addFnAttr("nvvm.cluster_dim", std::to_string(Dims[0]) + "," + std::to_string(Dims[1]) + "," +
                                                std::to_string(Dims[2]));
      }
      Call->eraseFromParent();
    }
  }

  /// Marks the wrapper's calls of defined functions (the kernel's body, the
  /// `#[kernel]` glue) always-inline, at the call site only: a body left out
  /// of line takes its slices as generic pointers, so the entry's `.param`
  /// and global-space facts (`ld.global.nc`, `st.global`) stop at the call,
  /// and the call's ABI costs registers. A large body (two unrolled copies of
  /// a GEMM's K loop) is over the inliner's threshold even as the single
  /// caller of an internal function. Other callers of the same function,
  /// device code calling a kernel's function directly, keep the inliner's
  /// choice.
  static void inlineCallees(Function &Wrapper) {
    for (Instruction &I : instructions(Wrapper)) {
      auto *Call = dyn_cast<CallBase>(&I);
      Function *Callee = Call ? Call->getCalledFunction() : nullptr;
      if (Callee && !Callee->isDeclaration() && !Callee->isIntrinsic() &&
          !Call->hasFnAttr(Attribute::NoInline))
        Call->addFnAttr(Attribute::AlwaysInline);
    }
  }

  Function *createEntry(Function &Wrapper, const std::string &Host,
                        const std::vector<ParamLayout> &Layouts) {
    LLVMContext &Ctx = M.getContext();
    Type *Ptr = PointerType::getUnqual(Ctx);
    SmallVector<Type *> ParamTypes(Layouts.size(), Ptr);
    auto *FTy = FunctionType::get(Type::getVoidTy(Ctx), ParamTypes, false);

    std::string EntryName = ptxIdentifier(Host);
    Wrapper.setName(Host + KernelBodySuffix);
    Wrapper.setLinkage(GlobalValue::InternalLinkage);
    // #[inline(never)] keeps the wrapper out of the host's inliner; on the
    // device it must disappear into the entry so parameters stay in .param.
    Wrapper.removeFnAttr(Attribute::NoInline);
    Wrapper.addFnAttr(Attribute::AlwaysInline);
    inlineCallees(Wrapper);
    Function *Entry = Function::Create(FTy, GlobalValue::ExternalLinkage, EntryName, M);
    Entry->setCallingConv(CallingConv::PTX_Kernel);
    for (unsigned I = 0; I < Layouts.size(); ++I) {
      // A zero-sized parameter still needs one byte: PTX has no empty params.
      uint64_t Bytes = std::max<uint64_t>(1, Layouts[I].Size);
      Type *Storage = ArrayType::get(Type::getInt8Ty(Ctx), Bytes);
      Entry->addParamAttr(I, Attribute::getWithByValType(Ctx, Storage));
      Entry->addParamAttr(I, Attribute::getWithAlignment(Ctx, Align(Layouts[I].Align)));
      Entry->getArg(I)->setName("p" + std::to_string(I));
    }
    IRBuilder<> B(BasicBlock::Create(Ctx, "entry", Entry));
    SmallVector<Value *> Args;
    for (Argument &A : Entry->args())
      Args.push_back(&A);
    B.CreateCall(Wrapper.getFunctionType(), &Wrapper, Args);
    B.CreateRetVoid();
    return Entry;
  }

  void recordKernel(Function *Entry, const std::string &Host, size_t NParams) {
    LLVMContext &Ctx = M.getContext();
    Metadata *Ops[] = {ValueAsMetadata::get(Entry), MDString::get(Ctx, Host),
                       ConstantAsMetadata::get(
                           ConstantInt::get(Type::getInt64Ty(Ctx), NParams))};
    M.getOrInsertNamedMetadata(KernelsMetadata)->addOperand(MDNode::get(Ctx, Ops));
  }
};

} // namespace

PreservedAnalyses BuildKernelEntriesPass::run(Module &M, ModuleAnalysisManager &) {
  std::vector<Function *> Wrappers;
  for (Function &F : M)
    if (!F.isDeclaration() && F.getName().contains(KernelEntryPrefix) &&
        !F.getName().ends_with(KernelBodySuffix))
      Wrappers.push_back(&F);
  EntryBuilder Builder(M, Diags, Target);
  for (Function *W : Wrappers)
    Builder.build(*W);
  return Wrappers.empty() ? PreservedAnalyses::all() : PreservedAnalyses::none();
}

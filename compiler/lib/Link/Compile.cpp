//===- Compile.cpp - Bitcode in, validated PTX out ------------------------===//
//
// The middle of the device link: merge the codegen units into one module, run
// the device pipeline of Passes.def on it (legalisation, the link steps that
// add libdevice and settle the debug info, LLVM's O3 for NVPTX, which also
// runs NVVMReflect for libdevice, and oxide's post-O3 passes), and emit PTX
// for the chosen sm_XX. Every stage can be written to OXIDE_DUMP_DIR for
// `cargo oxide pipeline`. A module of many kernels runs O3 in pieces, one
// per thread (cutFront, optimizeInPieces), joined again before the post-O3
// passes. A module of several kernels is cut in parts, one per kernel
// (SplitByKernel.cpp), which are emitted in buckets of parts, in parallel
// and through a cache (PartCache.cpp); ptxas assembles the buckets the same
// way; the image's PTX is their join, one module as before.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/DeviceLinker.h"
#include "oxide/Passes.h"
#include "oxide/Pipeline.h"
#include "oxide/RustNames.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/bit.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include <atomic>
#include <chrono>
#include <ctime>
#include <map>
#include <numeric>
#include <thread>

using namespace llvm;
using namespace oxide;

LinkerOptions LinkerOptions::fromEnvironment() {
  LinkerOptions O;
  if (const char *A = getenv("OXIDE_ARCH"); A && *A)
    O.Arch = A;
  if (const char *C = getenv("OXIDE_CUDA_PATH"); C && *C)
    O.CudaPath = C;
  if (const char *D = getenv("OXIDE_DUMP_DIR"); D && *D)
    O.DumpDir = D;
  if (const char *V = getenv("OXIDE_VERBOSE"); V && *V && StringRef(V) != "0")
    O.Verbose = true;
  if (const char *G = getenv("OXIDE_DEVICE_DEBUG"); G && *G)
    O.DeviceDebug = G;
  if (const char *C = getenv("OXIDE_CHECK"); C && *C && StringRef(C) != "0")
    O.CheckOnly = true;
  if (const char *J = getenv("OXIDE_DIAGNOSTICS_JSON"); J && *J)
    O.DiagnosticsJson = J;
  if (const char *C = getenv("OXIDE_CACHE_DIR"); C && *C)
    O.CacheDir = C;
  if (const char *J = getenv("OXIDE_JOBS"); J && *J)
    StringRef(J).getAsInteger(10, O.Jobs);
  if (const char *S = getenv("OXIDE_SPLIT"); S && StringRef(S) == "0")
    O.Split = false;
  if (const char *F = getenv("OXIDE_FRAMES"); F && StringRef(F) == "ptxas-log")
    O.FramesFromPtxasLog = true;
  return O;
}

namespace {

Error makeError(const Twine &Msg) { return createStringError(inconvertibleErrorCode(), Msg); }

/// The file for one pipeline stage in OXIDE_DUMP_DIR, or null when stages
/// are not being written.
std::unique_ptr<raw_fd_ostream> openDump(const LinkerOptions &Opts, StringRef Name) {
  if (Opts.DumpDir.empty())
    return nullptr;
  sys::fs::create_directories(Opts.DumpDir);
  SmallString<256> P(Opts.DumpDir);
  sys::path::append(P, Name);
  std::error_code EC;
  auto OS = std::make_unique<raw_fd_ostream>(P, EC);
  return EC ? nullptr : std::move(OS);
}

void dumpModule(const LinkerOptions &Opts, const Module &M, StringRef Name) {
  if (auto OS = openDump(Opts, Name))
    M.print(*OS, nullptr);
}

void dumpText(const LinkerOptions &Opts, StringRef Name, StringRef Text) {
  if (auto OS = openDump(Opts, Name))
    *OS << Text;
}

/// With OXIDE_VERBOSE, says how long each stage of the device link took
/// (where the time of a large link goes; docs/DESIGN.md §2).
class StageTimer {
public:
  explicit StageTimer(bool Verbose) : Verbose(Verbose), Start(Clock::now()) {}
  void done(const Twine &Stage) {
    auto Now = Clock::now();
    if (Verbose)
      errs() << format("oxide-link: %-28s %7.3f s\n", (Stage + ":").str().c_str(),
                       std::chrono::duration<double>(Now - Start).count());
    Start = Now;
  }

private:
  using Clock = std::chrono::steady_clock;
  bool Verbose;
  Clock::time_point Start;
};

/// Makes LLVM's NVPTX target known, once per process: the link creates
/// target machines on several threads (optimizeInPieces, compileParts),
/// and LLVM's registration of a target is not safe to run concurrently.
void initializeNvptx() {
  static const bool Initialized = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    return true;
  }();
  (void)Initialized;
}

/// Sets the LLVM backend options the device target depends on, once per
/// process: ExpandFp turns float conversions wider than 64 bits into integer
/// code (NVPTX would otherwise emit compiler-rt calls the GPU lacks;
/// LowerWideConversions.cpp), and loop strength reduction stays off. An
/// option this LLVM does not have is an error naming it: without it the
/// device code would silently be different.
Error setBackendOptions() {
  static bool Done = false;
  if (Done)
    return Error::success();
  auto &Options = cl::getRegisteredOptions();
  auto Set = [&](StringRef Name, StringRef Value) -> Error {
    cl::Option *O = Options.lookup(Name);
    if (!O)
      return makeError("this LLVM has no backend option -" + Name +
                       ", which oxide's device code needs (is oxide-link built against LLVM 22?)");
    O->addOccurrence(0, Name, Value);
    return Error::success();
  };
  if (Error E = Set("expand-fp-convert-bits", "64"))
    return E;
  // No loop strength reduction in the backend. On the tiled kernels it turns
  // the shared-memory walk of a `for k in 0..TILE` loop into 64-bit offset
  // and pointer variables, which costs registers and keeps ptxas from
  // unrolling the loop fully; without it ptxas strength-reduces the 32-bit
  // shared addresses itself (docs/DESIGN.md §3).
  if (Error E = Set("disable-lsr", "true"))
    return E;
  Done = true;
  return Error::success();
}

/// The backend options above, as they enter the cache key of a part's PTX
/// (compileParts): change it with them, or the cache would hand
/// out PTX made under the old ones.
const char BackendOptionsKey[] = "expand-fp-convert-bits=64 disable-lsr=true";

Expected<std::string> emitPtx(Module &M, TargetMachine &TM) {
  SmallString<0> Ptx;
  raw_svector_ostream OS(Ptx);
  legacy::PassManager PM;
  if (TM.addPassesToEmitFile(PM, OS, nullptr, CodeGenFileType::AssemblyFile))
    return makeError("the NVPTX backend cannot emit PTX");
  PM.run(M);
  return std::string(Ptx);
}

std::vector<KernelEntryInfo> kernelsOf(Module &M, const std::map<std::string, unsigned> &Copies) {
  std::vector<KernelEntryInfo> Out;
  NamedMDNode *MD = M.getNamedMetadata(KernelsMetadata);
  if (!MD)
    return Out;
  for (MDNode *N : MD->operands()) {
    auto *Entry = mdconst::dyn_extract_or_null<Function>(N->getOperand(0));
    if (!Entry)
      continue;
    KernelEntryInfo K;
    K.PtxName = Entry->getName().str();
    K.HostSymbol = cast<MDString>(N->getOperand(1))->getString().str();
    K.NumParams = mdconst::extract<ConstantInt>(N->getOperand(2))->getZExtValue();
    K.RustPath = kernelPathOf(K.HostSymbol);
    if (N->getNumOperands() > 3)
      K.Flags = mdconst::extract<ConstantInt>(N->getOperand(3))->getZExtValue();
    else
      // Unknown: every kind of index, so the host allows only launches
      // that keep each of them unique (never a launch that might alias).
      K.Flags = KernelIndexes1d | KernelIndexes2d | KernelIndexes3d;
    if (N->getNumOperands() > 5)
      if (auto *Unchecked = mdconst::dyn_extract_or_null<Function>(N->getOperand(4))) {
        K.UncheckedPtxName = Unchecked->getName().str();
        K.LaunchCondition = cast<MDString>(N->getOperand(5))->getString().str();
      }
    auto It = Copies.find(K.HostSymbol);
    K.HostCopies = It == Copies.end() ? 1 : It->second;
    Out.push_back(K);
  }
  return Out;
}

std::vector<ConstantInfo> constantsOf(Module &M) {
  std::vector<ConstantInfo> Out;
  NamedMDNode *MD = M.getNamedMetadata(ConstantsMetadata);
  if (!MD)
    return Out;
  for (MDNode *N : MD->operands()) {
    auto *GV = mdconst::dyn_extract_or_null<GlobalVariable>(N->getOperand(0));
    if (!GV)
      continue;
    Out.push_back({GV->getName().str(), cast<MDString>(N->getOperand(1))->getString().str(),
                   M.getDataLayout().getTypeAllocSize(GV->getValueType())});
  }
  return Out;
}

/// Whether the module is compiled in parts (SplitByKernel.cpp). Not with
/// device debug info: each part would carry its own `.file` table and DWARF
/// sections, which one module cannot hold twice. Not with OXIDE_LLVM_ARGS:
/// what LLVM's options print (`-print-after-all` of the backend's passes,
/// `-time-passes`) is about one module, and threads would interleave it.
/// Not for a single kernel, where there is nothing to share. The stages
/// `cargo oxide pipeline` writes are the same either way: the split comes
/// after the last IR stage, and the PTX written is the joined module.
bool splitPays(Module &M, const LinkerOptions &Opts) {
  const char *LLVMArgs = getenv("OXIDE_LLVM_ARGS");
  if (!Opts.Split || !Opts.DeviceDebug.empty() || (LLVMArgs && *LLVMArgs))
    return false;
  unsigned Entries = 0;
  for (const Function &F : M)
    Entries += !F.isDeclaration() && F.getCallingConv() == CallingConv::PTX_Kernel;
  return Entries >= 2;
}

unsigned jobsOf(const LinkerOptions &Opts) {
  return Opts.Jobs ? Opts.Jobs : std::max(1u, std::thread::hardware_concurrency());
}

/// A bucket's PTX from the part cache, rewritten for ptxas's hazards
/// (PtxasHazards.def: the cache keeps what NVPTX wrote); none on a miss.
std::optional<std::string> cachedBucketPtx(const PartCache &Cache, StringRef Key) {
  if (auto Cached = Cache.lookup(Key, "ptx"))
    return rewritePtxasHazards(*Cached);
  return std::nullopt;
}

/// The buckets' PTX of an earlier split of the module OptimizedKey names
/// (lookupPartIndex), every bucket by cachedBucketPtx; none where the index
/// or a bucket is missing.
std::optional<std::vector<std::string>> ptxFromPartIndex(const PartCache &Cache,
                                                         StringRef OptimizedKey,
                                                         const LinkerOptions &Opts,
                                                         size_t &SplitParts) {
  std::optional<PartIndex> Index = lookupPartIndex(Cache, OptimizedKey);
  if (!Index)
    return std::nullopt;
  std::vector<std::optional<std::string>> Ptx(Index->BucketKeys.size());
  {
    DefaultThreadPool Pool(hardware_concurrency(jobsOf(Opts)));
    for (size_t B = 0; B < Ptx.size(); ++B)
      Pool.async([&, B] {
        Ptx[B] = cachedBucketPtx(Cache, Index->BucketKeys[B]);
      });
    Pool.wait();
  }
  std::vector<std::string> Out;
  for (std::optional<std::string> &P : Ptx) {
    if (!P)
      return std::nullopt;
    Out.push_back(std::move(*P));
  }
  SplitParts = Index->SplitParts;
  return Out;
}

/// The PTX of each ptxas bucket of M's parts (planPtxasBuckets), from the
/// cache where the bucket's parts were compiled before, else by the NVPTX
/// backend, buckets in parallel: each thread reads its bucket's parts into
/// an LLVMContext of its own (a context is not shared between threads),
/// links them into one module and emits it with a TargetMachine of its own.
/// One module per bucket rather than per part: what NVPTX costs per module,
/// whatever its size, made emitting 200 one-kernel parts cost more than half
/// again as much as the whole module. The parts of a bucket share nothing but
/// declarations (what two parts reach is in the common part, alone in its
/// bucket) and their own copies of a shared-memory variable several kernels
/// use (SplitByKernel.cpp), which are internal: the link renames them apart
/// and each kernel keeps its own.
/// OptimizedKey: the key M was (or would have been) cached under by
/// storeOptimizedModule, under which the split's index is kept; empty for none.
Expected<std::vector<std::string>> compileParts(Module &M, const LinkerOptions &Opts,
                                                StringRef OptimizedKey, StageTimer &Timer,
                                                size_t &SplitParts) {
  PartCache Cache(Opts.CacheDir);
  if (auto Indexed = ptxFromPartIndex(Cache, OptimizedKey, Opts, SplitParts)) {
    Timer.done("PTX of " + std::to_string(Indexed->size()) +
               " buckets from the cache, by the module's part index");
    return std::move(*Indexed);
  }
  std::vector<std::unique_ptr<Module>> Modules = splitByKernel(M);
  SplitParts = Modules.size();
  std::vector<std::string> Entries;
  for (const std::unique_ptr<Module> &Part : Modules) {
    std::string Entry;
    for (const Function &F : *Part)
      if (!F.isDeclaration() && F.getCallingConv() == CallingConv::PTX_Kernel) {
        Entry = F.getName().str();
        break;
      }
    Entries.push_back(std::move(Entry));
  }
  std::vector<std::vector<size_t>> Plan = planPtxasBuckets(Entries);
  const GpuTarget *Target = findGpuTarget(Opts.Arch);
  std::string Features = "+ptx" + std::to_string(Target->PtxIsa);
  struct Bucket {
    std::vector<SmallVector<char, 0>> Bitcode;
    std::string Key, Ptx, Error;
  };
  std::vector<Bucket> Buckets(Plan.size());
  for (size_t B = 0; B < Plan.size(); ++B) {
    std::vector<std::string> Keys;
    for (size_t I : Plan[B]) {
      SmallVector<char, 0> &Bitcode = Buckets[B].Bitcode.emplace_back();
      raw_svector_ostream OS(Bitcode);
      WriteBitcodeToFile(*Modules[I], OS);
      Modules[I].reset();
      Keys.push_back(partCacheKey({StringRef(Bitcode.data(), Bitcode.size()), Opts.Arch, Features,
                                   LLVM_VERSION_STRING, BackendOptionsKey, "ptx"}));
    }
    std::vector<StringRef> Inputs(Keys.begin(), Keys.end());
    Inputs.push_back("ptx of a bucket");
    Buckets[B].Key = partCacheKey(Inputs);
  }
  Timer.done("split into " + std::to_string(SplitParts) + " parts");
  std::atomic<unsigned> Hits{0};
  {
    DefaultThreadPool Pool(hardware_concurrency(jobsOf(Opts)));
    for (Bucket &B : Buckets)
      Pool.async([&B, &Opts, &Cache, &Hits] {
        // ptxas miscompiles a few PTX instructions at their edge values
        // (PtxasHazards.def): each bucket is rewritten here, on its thread;
        // the cache keeps what NVPTX wrote.
        if (auto Cached = cachedBucketPtx(Cache, B.Key)) {
          B.Ptx = std::move(*Cached);
          ++Hits;
          return;
        }
        LLVMContext Ctx;
        std::unique_ptr<Module> Mod;
        for (const SmallVector<char, 0> &Bitcode : B.Bitcode) {
          auto Part = parseBitcodeFile(
              MemoryBufferRef(StringRef(Bitcode.data(), Bitcode.size()), "oxide-part"), Ctx);
          if (!Part) {
            B.Error = toString(Part.takeError());
            return;
          }
          if (!Mod)
            Mod = std::move(*Part);
          else if (Linker::linkModules(*Mod, std::move(*Part))) {
            B.Error = "the parts of a bucket could not be linked";
            return;
          }
        }
        auto TM = createDeviceTarget(Opts);
        if (!TM) {
          B.Error = toString(TM.takeError());
          return;
        }
        auto Ptx = emitPtx(*Mod, **TM);
        if (!Ptx) {
          B.Error = toString(Ptx.takeError());
          return;
        }
        Cache.store(B.Key, "ptx", *Ptx);
        B.Ptx = rewritePtxasHazards(*Ptx);
      });
    Pool.wait();
  }
  std::vector<std::string> Out;
  PartIndex Index{SplitParts, {}};
  for (Bucket &B : Buckets) {
    if (!B.Error.empty())
      return makeError("internal error: a part of the split device module failed: " + B.Error);
    Out.push_back(std::move(B.Ptx));
    Index.BucketKeys.push_back(B.Key);
  }
  storePartIndex(Cache, OptimizedKey, Index);
  Timer.done("PTX of " + std::to_string(Buckets.size() - Hits) + " buckets (" +
             std::to_string(unsigned(Hits)) + " cached)");
  return Out;
}

/// The CPU time of the calling thread so far, for OXIDE_VERBOSE's account
/// of the pieces of O3 (how evenly they share the work, whatever else the
/// machine runs); 0 where the system cannot tell.
double threadCpuSeconds() {
#ifdef CLOCK_THREAD_CPUTIME_ID
  timespec T;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &T) == 0)
    return double(T.tv_sec) + double(T.tv_nsec) * 1e-9;
#endif
  return 0;
}

/// Kernels per piece of the front (frontPieces), on average: below
/// that, what a piece costs beyond its O3 (two bitcode round trips, the
/// shared helpers optimised in each piece that inlines them) is not won back.
constexpr unsigned FrontKernelsPerPiece = 8;

/// In how many pieces LLVM's O3 runs (optimizeInPieces): one per job, but
/// no more than one per FrontKernelsPerPiece kernels; 1 (the whole module,
/// as one pass pipeline) where the module is not compiled in parts after O3
/// either (splitPays: debug info, OXIDE_LLVM_ARGS, OXIDE_SPLIT=0), so that
/// what those ask for is about one module optimised whole.
unsigned frontPieces(Module &M, const LinkerOptions &Opts) {
  if (!splitPays(M, Opts))
    return 1;
  unsigned Kernels = 0;
  for (const Function &F : M)
    Kernels += !F.isDeclaration() && F.getCallingConv() == CallingConv::PTX_Kernel;
  return std::max(1u, std::min(jobsOf(Opts), Kernels / FrontKernelsPerPiece));
}

/// LLVM's O3 on M in Pieces pieces at once (cutFront): M, piece 0, on this
/// thread, each other piece on a thread of its own in an LLVMContext of its
/// own (it travels there and back as bitcode), then linked into M again,
/// where the post-O3 passes see the whole module as before. The number of
/// pieces that ran; 1 where the module could not be cut.
Expected<unsigned> optimizeInPieces(Module &M, unsigned Pieces, DevicePipeline &Pipeline,
                                    const LinkerOptions &Opts, StageTimer &Timer) {
  FrontCut Cut = cutFront(M, Pieces);
  if (Cut.Pieces.empty()) {
    if (Error E = Pipeline.run(PipelineSection::O3, M))
      return std::move(E);
    Timer.done("O3");
    return 1;
  }
  struct Piece {
    SmallVector<char, 0> Bitcode;
    std::string Error;
    double Seconds = 0, CpuSeconds = 0;
  };
  std::vector<Piece> Out(Cut.Pieces.size());
  for (size_t I = 0; I < Cut.Pieces.size(); ++I) {
    raw_svector_ostream OS(Out[I].Bitcode);
    WriteBitcodeToFile(*Cut.Pieces[I], OS);
    // Gone from M's context before O3 runs there: a context is not shared
    // between threads, and the writing above used it.
    Cut.Pieces[I].reset();
  }
  Timer.done("cut in " + std::to_string(Out.size() + 1) + " pieces for O3");
  std::vector<std::thread> Threads;
  for (Piece &P : Out)
    Threads.emplace_back([&P, &Opts] {
      auto Start = std::chrono::steady_clock::now();
      LLVMContext Ctx;
      auto Mod = parseBitcodeFile(
          MemoryBufferRef(StringRef(P.Bitcode.data(), P.Bitcode.size()), "oxide-piece"), Ctx);
      if (!Mod) {
        P.Error = toString(Mod.takeError());
        return;
      }
      auto TM = createDeviceTarget(Opts);
      if (!TM) {
        P.Error = toString(TM.takeError());
        return;
      }
      // O3 reports nothing; the sink is the piece's own all the same, since
      // a DiagnosticSink is not shared between threads.
      DiagnosticSink Diags;
      {
        DevicePipeline Piece(Ctx, TM->get(), {Diags, Opts.Arch, Opts.CudaPath, Opts.DeviceDebug});
        if (Error E = Piece.run(PipelineSection::O3, **Mod)) {
          P.Error = toString(std::move(E));
          return;
        }
      }
      dropBorrowed(**Mod);
      P.Bitcode.clear();
      raw_svector_ostream OS(P.Bitcode);
      WriteBitcodeToFile(**Mod, OS);
      P.Seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
      P.CpuSeconds = threadCpuSeconds();
    });
  auto Start = std::chrono::steady_clock::now();
  double Cpu = threadCpuSeconds();
  Error Own = Pipeline.run(PipelineSection::O3, M);
  if (Opts.Verbose)
    errs() << format("oxide-link:   piece 0, this thread: %.3f s (%.3f s of CPU)\n",
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count(),
                     threadCpuSeconds() - Cpu);
  for (std::thread &T : Threads)
    T.join();
  if (Opts.Verbose)
    for (size_t I = 0; I < Out.size(); ++I)
      errs() << format("oxide-link:   piece %zu, its thread, bitcode both ways: %.3f s (%.3f s of "
                       "CPU)\n",
                       I + 1, Out[I].Seconds, Out[I].CpuSeconds);
  if (Own)
    return std::move(Own);
  Timer.done("O3 in " + std::to_string(Out.size() + 1) + " pieces");
  // M's cached analyses name functions the link below replaces.
  Pipeline.clearAnalyses();
  for (Piece &P : Out) {
    if (!P.Error.empty())
      return makeError("internal error: a piece of the device module failed in O3: " + P.Error);
    auto Mod = parseBitcodeFile(
        MemoryBufferRef(StringRef(P.Bitcode.data(), P.Bitcode.size()), "oxide-piece"),
        M.getContext());
    if (!Mod)
      return Mod.takeError();
    if (Linker::linkModules(M, std::move(*Mod)))
      return makeError("internal error: the optimised pieces of the device module could not be "
                       "linked again");
  }
  restoreFront(M, Cut);
  // What M lent and no piece still calls (inlined everywhere) goes, as O3
  // would have removed it from the whole module.
  if (Error E = Pipeline.run("globaldce", M))
    return std::move(E);
  Pipeline.clearAnalyses();
  Timer.done("pieces linked again");
  return unsigned(Out.size() + 1);
}

} // namespace

Expected<std::unique_ptr<TargetMachine>> oxide::createDeviceTarget(const LinkerOptions &Opts) {
  initializeNvptx();
  if (Error E = setBackendOptions())
    return std::move(E);
  Triple T(DeviceTriple);
  std::string Err;
  const Target *Tgt = TargetRegistry::lookupTarget(T, Err);
  if (!Tgt)
    return makeError("the NVPTX target is missing from this LLVM: " + Err);
  TargetOptions TO;
  // The PTX ISA of Targets.def: LLVM would pick the oldest the architecture
  // allows (7.8 for sm_90), which lacks Hopper instructions such as
  // elect.sync.
  const GpuTarget *Target = findGpuTarget(Opts.Arch);
  if (!Target)
    return makeError(unknownTargetMessage(Opts.Arch));
  std::string Features = "+ptx" + std::to_string(Target->PtxIsa);
  std::unique_ptr<TargetMachine> TM(Tgt->createTargetMachine(
      T, Opts.Arch, Features, TO, Reloc::PIC_, std::nullopt, CodeGenOptLevel::Aggressive));
  if (!TM)
    return makeError("cannot create an NVPTX target for " + Opts.Arch);
  return std::move(TM);
}

Expected<DeviceImage> oxide::compileDeviceImage(const std::vector<std::string> &Files,
                                                const std::string &ModuleName,
                                                const LinkerOptions &Opts,
                                                DiagnosticSink &Diags) {
  // Refused before any work: LLVM would only warn about a CPU it does not
  // know and emit PTX that ptxas then rejects.
  if (!findGpuTarget(Opts.Arch))
    return makeError(unknownTargetMessage(Opts.Arch));

  StageTimer Timer(Opts.Verbose);
  LLVMContext Ctx;
  // Where a module from the optimised-module cache is read: a context of its
  // own, whose type names the linked module has not taken. Declared before
  // the module, so it outlives it.
  LLVMContext CachedCtx;
  std::map<std::string, unsigned> EntryCopies;
  auto MOrErr = linkReachableBitcode(Ctx, Files, EntryCopies);
  if (!MOrErr)
    return MOrErr.takeError();
  std::unique_ptr<Module> Linked = std::move(*MOrErr);
  Timer.done("read and link what is reachable");
  dumpModule(Opts, *Linked, "device-input.ll");

  auto TM = createDeviceTarget(Opts);
  if (!TM)
    return TM.takeError();

  // CUDA C++ device code the kernels may call: compiled first, so the
  // pipeline knows what it defines (BindDeviceSources).
  auto Units = compileDeviceSources(Opts.DeviceSources, Opts);
  if (!Units)
    return Units.takeError();
  std::map<std::string, std::string> DeviceSymbols;
  for (const DeviceSourceUnit &U : *Units)
    for (const auto &[Name, Proto] : U.Functions)
      DeviceSymbols.emplace(Name, U.Source);

  DevicePipeline Pipeline(Ctx, TM->get(),
                          {Diags, Opts.Arch, Opts.CudaPath, Opts.DeviceDebug, Opts.Libraries,
                           Opts.Verbose, DeviceSymbols});
  if (Error E = Pipeline.run(PipelineSection::Legalize, *Linked))
    return std::move(E);
  if (Error E = Pipeline.run(PipelineSection::Link, *Linked))
    return std::move(E);
  Timer.done("legalise and link");
  dumpModule(Opts, *Linked, "device-legal.ll");

  std::string VerifyMsg;
  raw_string_ostream VOS(VerifyMsg);
  if (verifyModule(*Linked, &VOS))
    return makeError("internal error: the device module is invalid after legalisation:\n" +
                     VerifyMsg);

  // O3 and the post-O3 passes, or what they made of this same module in an
  // earlier link (OptimizedModuleCache.cpp).
  unsigned Pieces = frontPieces(*Linked, Opts);
  PartCache Cache(Opts.CacheDir);
  std::string OptimizedKey = Cache.enabled() ? optimizedModuleKey(*Linked, Opts, Pieces) : "";
  bool FromCache = false;
  if (auto Cached = lookupOptimizedModule(Cache, OptimizedKey, CachedCtx,
                                          Linked->getModuleIdentifier())) {
    // The pipeline's analyses name the linked module's functions.
    Pipeline.clearAnalyses();
    Linked = std::move(Cached);
    FromCache = true;
    Timer.done("optimised module from the cache");
  } else {
    if (Pieces < 2) {
      if (Error E = Pipeline.run(PipelineSection::Optimize, *Linked))
        return std::move(E);
      Timer.done("O3 and post-O3 passes");
    } else {
      auto Ran = optimizeInPieces(*Linked, Pieces, Pipeline, Opts, Timer);
      if (!Ran)
        return Ran.takeError();
      if (Error E = Pipeline.run(PipelineSection::AfterO3, *Linked))
        return std::move(E);
      Timer.done("post-O3 passes");
    }
  }
  dumpModule(Opts, *Linked, "device-opt.ll");
  // The passes after O3 rewrite control flow; a mistake there must be an
  // error naming them, not a crash in the NVPTX backend.
  VerifyMsg.clear();
  if (verifyModule(*Linked, &VOS))
    return makeError(Twine("internal error: the device module is invalid ") +
                     (FromCache ? "as read from the cache" : "after the post-O3 passes") +
                     ":\n" + VerifyMsg);
  // Stored once verified: an entry is a module the later stages may take as is.
  if (!FromCache && storeOptimizedModule(Cache, OptimizedKey, *Linked))
    Timer.done("optimised module stored");
  Module &M = *Linked;

  DeviceImage Image;
  Image.ModuleName = ModuleName;
  Image.Kernels = kernelsOf(M, EntryCopies);
  Image.Constants = constantsOf(M);
  if (NamedMDNode *Bound = M.getNamedMetadata(DeviceSourcesMetadata))
    for (MDNode *N : Bound->operands())
      Image.DeviceSourceCalls[cast<MDString>(N->getOperand(0))->getString().str()] =
          cast<MDString>(N->getOperand(1))->getString().str();
  // A check stops here: every check of the user's code has run (one,
  // lower-disjoint-indices, needs the optimised IR); what is left only makes
  // the image, which a check does not keep.
  if (Opts.CheckOnly)
    return Image;
  if (splitPays(M, Opts)) {
    // Named first: the call graph must use the names every part prints.
    nameForSplit(M);
    Image.CallGraph = buildDeviceCallGraph(M);
    auto Parts = compileParts(M, Opts, OptimizedKey, Timer, Image.SplitParts);
    if (!Parts)
      return Parts.takeError();
    auto Joined = joinPtxParts(*Parts);
    if (!Joined)
      return Joined.takeError();
    Image.Ptx = std::move(*Joined);
    Image.PartPtx = std::move(*Parts);
    Timer.done("join PTX");
  } else {
    auto Ptx = emitPtx(M, **TM);
    if (!Ptx)
      return Ptx.takeError();
    Timer.done("PTX emission");
    // After emission: NVPTX has given the functions their PTX names, which
    // are the names ptxas reports frames under (StackBound.cpp).
    Image.CallGraph = buildDeviceCallGraph(M);
    // ptxas miscompiles a few PTX instructions at their edge values, in
    // whatever way the backend came to write them (PtxasHazards.def).
    Image.Ptx = rewritePtxasHazards(*Ptx);
  }
  // nvcc's PTX of the device sources joins (LinkPtx.cpp): from here on the
  // image is one module, whichever compiler wrote its parts.
  if (!Units->empty()) {
    for (const DeviceSourceUnit &U : *Units)
      dumpText(Opts, "nvcc-" + sys::path::stem(U.Source).str() + ".ptx.txt", U.Ptx);
    auto Linked = linkPtxUnits(Image.Ptx, *Units, Image.Units);
    if (!Linked) {
      Diags.error({toString(Linked.takeError()), "", {}});
      return makeError("the device sources could not be linked with the kernels");
    }
    Image.Ptx = std::move(*Linked);
  }
  // Line tables and full debug info both leave `.loc` and DWARF sections in
  // the PTX; this line tells the runtime (cuda-core) which one to ask the
  // driver's JIT to keep (docs/ABI.md §4).
  if (Opts.DeviceDebug == "full")
    Image.Ptx = (DeviceDebugFullMarker + "\n" + Image.Ptx).str();
  dumpText(Opts, ModuleName + ".ptx", Image.Ptx);
  return Image;
}

unsigned oxide::ptxasBucketCount(size_t Kernels) {
  // A ptxas process costs about what a few kernels' compilation does, and
  // an edit recompiles its kernel's whole bucket: buckets of 24 to 48
  // kernels, a power of two of them so that the count, and with it every
  // bucket's contents, changes only when the number of kernels doubles or
  // halves; at least two, for two cores.
  return std::max<unsigned>(2, llvm::bit_floor(Kernels / KernelsPerPtxasBucket));
}

std::vector<std::vector<size_t>> oxide::planPtxasBuckets(const std::vector<std::string> &Entries) {
  size_t Kernels = llvm::count_if(Entries, [](const std::string &E) { return !E.empty(); });
  unsigned Count = ptxasBucketCount(Kernels);
  std::vector<std::vector<size_t>> Buckets(1 + Count);
  for (size_t I = 0; I < Entries.size(); ++I)
    Buckets[Entries[I].empty() ? 0 : 1 + xxh3_64bits(Entries[I]) % Count].push_back(I);
  llvm::erase_if(Buckets, [](const std::vector<size_t> &B) { return B.empty(); });
  // In the order of their first parts: the joined PTX keeps the module's
  // order as far as the buckets allow (the common part's first). No two
  // buckets share a part, so the order is total (llvm::sort, whose
  // stable_sort instantiates a deprecated libstdc++ helper).
  llvm::sort(Buckets, [](const std::vector<size_t> &A, const std::vector<size_t> &B) {
    return A.front() < B.front();
  });
  return Buckets;
}

namespace {

/// Runs a tool with its output to a temporary log; the exit code and the log.
std::pair<int, std::string> runLogged(StringRef Tool, ArrayRef<StringRef> Args) {
  SmallString<128> Log;
  if (sys::fs::createTemporaryFile("oxide-tool", "log", Log))
    return {-1, "cannot create a temporary file"};
  std::optional<StringRef> Redirects[] = {std::nullopt, StringRef(Log), StringRef(Log)};
  int RC = sys::ExecuteAndWait(Tool, Args, std::nullopt, Redirects);
  auto Text = MemoryBuffer::getFile(Log);
  sys::fs::remove(Log);
  return {RC, Text ? (*Text)->getBuffer().str() : ""};
}

std::optional<std::string> readBinary(StringRef Path) {
  auto Buf = MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return std::nullopt;
  return (*Buf)->getBuffer().str();
}

/// The identity of a tool for cache keys: its path, size and time.
std::string toolIdentity(StringRef Path) {
  sys::fs::file_status St;
  if (sys::fs::status(Path, St))
    return Path.str();
  return (Path + " " + Twine(St.getSize()) + " " +
          Twine(St.getLastModificationTime().time_since_epoch().count()))
      .str();
}

/// ptxas on each part of a split module as relocatable code (`-c`), in
/// parallel and through the cache, then nvlink joining the objects into the
/// image's cubin. The frames every part's cubin records bound the stacks. False
/// when it could not (a part ptxas refused, no nvlink): the caller then runs
/// ptxas on the joined PTX, whose messages point into the PTX the user sees.
bool assembleParts(DeviceImage &Image, const LinkerOptions &Opts, StringRef Ptxas,
                   std::map<std::string, uint64_t> &Frames) {
  SmallString<256> Nvlink(sys::path::parent_path(Ptxas));
  sys::path::append(Nvlink, "nvlink");
  if (!sys::fs::can_execute(Nvlink))
    return false;
  StageTimer Timer(Opts.Verbose);
  std::string Arch = "-arch=" + Opts.Arch;
  std::string Tool = toolIdentity(Ptxas);
  struct Part {
    std::string Key, Cubin;
    std::map<std::string, uint64_t> Frames;
    bool Failed = false;
  };
  // Each PTX of the image's parts is one bucket (compileParts).
  const std::vector<std::string> &Buckets = Image.PartPtx;
  std::vector<Part> Parts(Buckets.size());
  PartCache Cache(Opts.CacheDir);
  std::atomic<unsigned> Hits{0};
  // The largest buckets first, so that no large one is left to run alone
  // at the end, equal ones in the plan's order; nvlink still takes the
  // objects in the plan's order.
  std::vector<size_t> Order(Buckets.size());
  std::iota(Order.begin(), Order.end(), 0);
  llvm::sort(Order, [&](size_t A, size_t B) {
    if (Buckets[A].size() != Buckets[B].size())
      return Buckets[A].size() > Buckets[B].size();
    return A < B;
  });
  {
    DefaultThreadPool Pool(hardware_concurrency(jobsOf(Opts)));
    for (size_t I : Order)
      Pool.async([&, I] {
        Part &P = Parts[I];
        const std::string &Ptx = Buckets[I];
        // The frames come from the cubin (cubinFrames), not from ptxas -v,
        // whose report costs ptxas about a tenth of its time; where the
        // cubin does not hold them, from ptxas -v's log, kept beside it.
        P.Key = partCacheKey({Ptx, Opts.Arch, Tool, "ptxas -c, frames from the cubin"});
        auto FramesOf = [&](StringRef Cubin) -> std::optional<std::map<std::string, uint64_t>> {
          if (Opts.FramesFromPtxasLog)
            return std::nullopt;
          return cubinFrames(Cubin);
        };
        if (auto Cubin = Cache.lookup(P.Key, "cubin")) {
          std::optional<std::map<std::string, uint64_t>> Frames = FramesOf(*Cubin);
          if (!Frames)
            if (auto Log = Cache.lookup(P.Key, "log"))
              Frames = parsePtxasFrames(*Log);
          if (Frames) {
            P.Cubin = std::move(*Cubin);
            P.Frames = std::move(*Frames);
            ++Hits;
            return;
          }
        }
        SmallString<128> In, Out;
        int FD;
        if (sys::fs::createTemporaryFile("oxide-part", "ptx", FD, In)) {
          P.Failed = true;
          return;
        }
        {
          raw_fd_ostream OS(FD, true);
          OS << Ptx;
        }
        sys::fs::createTemporaryFile("oxide-part", "cubin", Out);
        scope_exit Cleanup([&] {
          sys::fs::remove(In);
          sys::fs::remove(Out);
        });
        auto Run = [&](bool Verbose) -> std::optional<std::string> {
          SmallVector<StringRef, 8> Args = {Ptxas, Arch, "-c"};
          if (Verbose)
            Args.push_back("-v");
          Args.append({"-o", Out, In});
          auto [RC, Text] = runLogged(Ptxas, Args);
          auto Obj = readBinary(Out);
          if (RC != 0 || !Obj)
            return std::nullopt;
          P.Cubin = std::move(*Obj);
          return std::move(Text);
        };
        if (!Run(/*Verbose=*/false)) {
          P.Failed = true;
          return;
        }
        if (auto Frames = FramesOf(P.Cubin)) {
          P.Frames = std::move(*Frames);
        } else {
          auto Log = Run(/*Verbose=*/true);
          if (!Log) {
            P.Failed = true;
            return;
          }
          P.Frames = parsePtxasFrames(*Log);
          Cache.store(P.Key, "log", *Log);
        }
        Cache.store(P.Key, "cubin", P.Cubin);
      });
    Pool.wait();
  }
  for (const Part &P : Parts)
    if (P.Failed)
      return false;
  Timer.done("ptxas -c of " + std::to_string(Parts.size() - Hits) + " buckets (" +
             std::to_string(unsigned(Hits)) + " cached)");

  std::vector<std::string> Files;
  scope_exit Cleanup([&] {
    for (const std::string &F : Files)
      sys::fs::remove(F);
  });
  std::vector<StringRef> Args = {Nvlink, Arch};
  for (const Part &P : Parts) {
    SmallString<128> Obj;
    int FD;
    if (sys::fs::createTemporaryFile("oxide-part", "cubin", FD, Obj))
      return false;
    raw_fd_ostream OS(FD, true);
    OS << P.Cubin;
    Files.push_back(std::string(Obj));
  }
  SmallString<128> Out;
  if (sys::fs::createTemporaryFile("oxide", "cubin", Out))
    return false;
  Files.push_back(std::string(Out));
  for (size_t I = 0; I + 1 < Files.size(); ++I)
    Args.push_back(Files[I]);
  Args.push_back("-o");
  Args.push_back(Files.back());
  auto [RC, Text] = runLogged(Nvlink, Args);
  auto Cubin = readBinary(Files.back());
  if (RC != 0 || !Cubin) {
    if (Opts.Verbose)
      errs() << "oxide-link: nvlink failed; ptxas runs on the joined PTX:\n" << Text;
    return false;
  }
  Timer.done("nvlink");
  const GpuTarget *Target = findGpuTarget(Opts.Arch);
  Image.Cubin = std::move(*Cubin);
  Image.CubinSm = Target ? Target->SM : 0;
  for (const Part &P : Parts)
    for (const auto &[Name, Bytes] : P.Frames)
      Frames[Name] = std::max(Frames[Name], Bytes);
  return true;
}

} // namespace

Error oxide::assemblePtx(DeviceImage &Image, const LinkerOptions &Opts, DiagnosticSink &Diags) {
  SmallString<256> Ptxas(Opts.CudaPath);
  sys::path::append(Ptxas, "bin", "ptxas");
  if (!sys::fs::can_execute(Ptxas)) {
    auto Found = sys::findProgramByName("ptxas");
    if (!Found) {
      // No toolkit: the driver will JIT and report; no frames to bound
      // stacks with.
      recordStackBounds(Image, nullptr, Opts.Verbose);
      return Error::success();
    }
    Ptxas = *Found;
  }
  // A split module is assembled part by part, unless its PTX holds device
  // sources (nvcc's PTX is joined into the whole, not into a part), keeps
  // debug info for the JIT (no cubin then) or uses setmaxnreg: relocatable
  // code (`ptxas -c`) ignores setmaxnreg "to maintain compatibility across
  // compilation units" (ptxas's C7504), so a warp-specialised kernel would
  // keep the launch's register count in every warpgroup and its consumers
  // would spill; compiled whole, ptxas honours it.
  bool SetsRegisterCount = StringRef(Image.Ptx).contains("setmaxnreg.");
  if (SetsRegisterCount && !Image.PartPtx.empty() && Opts.Verbose)
    errs() << "oxide-link: the module uses setmaxnreg, which ptxas -c ignores: ptxas compiles it "
              "whole\n";
  if (!Image.PartPtx.empty() && Image.Units.empty() && !SetsRegisterCount &&
      !DeviceDebugInfoPass::keepsDebugInfo(Opts.DeviceDebug)) {
    std::map<std::string, uint64_t> Frames;
    if (assembleParts(Image, Opts, Ptxas, Frames)) {
      recordStackBounds(Image, &Frames, Opts.Verbose);
      return Error::success();
    }
  }
  SmallString<128> In, Out, Log;
  int FD;
  if (sys::fs::createTemporaryFile("oxide", "ptx", FD, In))
    return makeError("cannot create a temporary file");
  {
    raw_fd_ostream OS(FD, true);
    OS << Image.Ptx;
  }
  sys::fs::createTemporaryFile("oxide", "cubin", Out);
  sys::fs::createTemporaryFile("oxide-ptxas", "log", Log);
  std::string Arch = "-arch=" + Opts.Arch;
  // Each function's stack frame, for the bound of each entry's stack, comes
  // from the cubin's records, as for a split module (ptxas -v's report
  // costs it about a tenth of its time); where the cubin lacks them, or with
  // OXIDE_FRAMES=ptxas-log, from the report of a second run with -v.
  StageTimer Timer(Opts.Verbose);
  auto RunPtxas = [&](bool Verbose) {
    SmallVector<StringRef, 8> Args = {Ptxas, Arch};
    if (Verbose)
      Args.push_back("-v");
    Args.append({"-o", Out, In});
    std::optional<StringRef> Redirects[] = {std::nullopt, StringRef(Log), StringRef(Log)};
    return sys::ExecuteAndWait(Ptxas, Args, std::nullopt, Redirects);
  };
  int RC = RunPtxas(/*Verbose=*/false);
  std::optional<std::map<std::string, uint64_t>> CubinFrames;
  std::optional<std::string> CubinBytes;
  if (RC == 0)
    if (auto Cubin = MemoryBuffer::getFile(Out, /*IsText=*/false, /*RequiresNullTerminator=*/false)) {
      CubinBytes = (*Cubin)->getBuffer().str();
      if (!Opts.FramesFromPtxasLog)
        CubinFrames = cubinFrames(*CubinBytes);
    }
  if (RC == 0 && !CubinFrames)
    RC = RunPtxas(/*Verbose=*/true);
  Timer.done("ptxas");
  auto LogText = MemoryBuffer::getFile(Log);
  std::string Output = LogText ? (*LogText)->getBuffer().str() : "";
  // With device debug info the driver's JIT must compile the PTX (it keeps
  // what cuda-gdb and compute-sanitizer read); a cubin from plain ptxas has
  // none of it.
  const GpuTarget *Target = findGpuTarget(Opts.Arch);
  unsigned Sm = Target ? Target->SM : 0;
  if (RC == 0 && Sm > 0 && CubinBytes && !DeviceDebugInfoPass::keepsDebugInfo(Opts.DeviceDebug)) {
    Image.Cubin = std::move(*CubinBytes);
    Image.CubinSm = Sm;
  }
  sys::fs::remove(In);
  sys::fs::remove(Out);
  sys::fs::remove(Log);
  if (RC != 0 && !Image.Units.empty())
    return makeError("ptxas rejected the PTX linked from the kernels and the device sources for " +
                     Opts.Arch + ":\n" + annotatePtxasLines(Output, Image.Units));
  if (RC != 0)
    inlinePtxDiagnostics(Image.Ptx, Output, Opts.Arch, Diags);
  if (RC != 0)
    return makeError("ptxas rejected the generated PTX for " + Opts.Arch + ":\n" + Output);
  std::map<std::string, uint64_t> Frames = CubinFrames ? std::move(*CubinFrames) : parsePtxasFrames(Output);
  recordStackBounds(Image, &Frames, Opts.Verbose);
  return Error::success();
}

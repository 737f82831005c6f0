//===- oxide-opt - Run oxide's device transformations on IR ---------------===//
//
// The lit tests' driver. Three modes:
//   oxide-opt -passes=build-kernel-entries,lower-panics [-library=lib.rlib] in.ll
//       run a pipeline of passes (oxide's, by their Passes.def names, and
//       LLVM's own) and print the IR; with LLVM's -print-after=NAME,
//       -print-after-all, -time-passes, -print-pipeline-passes and oxide's
//       -verify-each
//   oxide-opt --ptx [--arch sm_90] [--assemble] in.ll [more.ll…]
//       the whole device compile (oxide-link's), print the PTX
//   oxide-opt --rewrite-ptxas-hazards in.ptx
//       PtxasHazards.def's rewrite of a PTX file (PtxasHazards.cpp)
//   oxide-opt --stack-bound [--ptxas-log=FILE] in.ll
//       the stack bound of each `ptx_kernel` entry of the IR (StackBound.cpp),
//       with the frames of ptxas -v's output in FILE, or as without ptxas
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "oxide/Pipeline.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace llvm;
using namespace oxide;

static cl::list<std::string> Inputs(cl::Positional, cl::OneOrMore, cl::desc("<input .ll/.bc>"));
static cl::opt<std::string> Passes("passes",
                                   cl::desc("the passes to run, comma-separated, in order "
                                            "(oxide's by their Passes.def names, and LLVM's)"));
static cl::opt<bool> EmitPtx("ptx", cl::desc("run the whole device compile and print PTX"));
static cl::opt<bool> Assemble("assemble",
                              cl::desc("with --ptx: run ptxas on the PTX as oxide-link does "
                                       "(part by part for a split module)"));
static cl::opt<bool> RewritePtx("rewrite-ptxas-hazards",
                                cl::desc("rewrite a PTX file's PtxasHazards.def instructions"));
static cl::opt<bool> StackBoundMode("stack-bound",
                                    cl::desc("print the stack bound of each kernel entry"));
static cl::opt<std::string> PtxasLog("ptxas-log",
                                     cl::desc("ptxas -v output with the frames --stack-bound uses"));

static cl::list<std::string> Libraries("library",
                                      cl::desc("an rlib, bitcode or IR file link-library-bitcode may "
                                               "link from (repeatable, in link order)"));
static cl::opt<std::string> Arch("arch", cl::init(std::string(oxide::DefaultTargetName)),
                                 cl::desc("the GPU target of Targets.def the kernels are built for"));

static cl::opt<bool> LinkPtx("link-ptx",
                             cl::desc("link the first PTX file (oxide's) with the others (device "
                                      "sources' PTX, as nvcc writes it) and print the module"));

static cl::list<std::string>
    DeviceSymbols("device-symbol",
                  cl::desc("NAME=FILE: a function a CUDA C++ device source defines, for "
                           "bind-device-sources (repeatable)"));

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "oxide device transformations\n");
  DiagnosticSink Diags;
  LinkerOptions Opts = LinkerOptions::fromEnvironment();
  Opts.Arch = Arch;
  if (!findGpuTarget(Opts.Arch)) {
    errs() << "oxide-opt: " << unknownTargetMessage(Opts.Arch) << "\n";
    return 1;
  }
  Opts.Libraries.assign(Libraries.begin(), Libraries.end());

  if (RewritePtx) {
    auto Buf = MemoryBuffer::getFile(Inputs.front());
    if (!Buf) {
      errs() << "oxide-opt: cannot read " << Inputs.front() << "\n";
      return 1;
    }
    outs() << rewritePtxasHazards((*Buf)->getBuffer());
    return 0;
  }

  if (LinkPtx) {
    std::vector<std::string> Texts;
    for (const std::string &In : Inputs) {
      auto Buf = MemoryBuffer::getFile(In);
      if (!Buf) {
        errs() << "oxide-opt: cannot read " << In << "\n";
        return 1;
      }
      Texts.push_back((*Buf)->getBuffer().str());
    }
    std::vector<DeviceSourceUnit> Units;
    for (size_t I = 1; I < Texts.size(); ++I)
      Units.push_back({Inputs[I], Texts[I], ptxFunctions(Texts[I], /*Definitions=*/true)});
    std::vector<PtxUnitLines> Lines;
    Expected<std::string> Linked = linkPtxUnits(Texts[0], Units, Lines);
    if (!Linked) {
      errs() << "error: " << toString(Linked.takeError()) << "\n";
      return 1;
    }
    outs() << *Linked;
    for (const PtxUnitLines &L : Lines)
      errs() << "unit " << sys::path::filename(L.Source) << " lines " << L.FirstLine << "-"
             << L.LastLine << "\n";
    return 0;
  }

  if (StackBoundMode) {
    LLVMContext Ctx;
    SMDiagnostic Err;
    std::unique_ptr<Module> M = parseIRFile(Inputs.front(), Err, Ctx);
    if (!M) {
      Err.print(argv[0], errs());
      return 1;
    }
    DeviceImage Image;
    Image.CallGraph = buildDeviceCallGraph(*M);
    for (const std::string &Entry : Image.CallGraph.Entries) {
      KernelEntryInfo K;
      K.PtxName = K.RustPath = Entry;
      Image.Kernels.push_back(K);
    }
    std::map<std::string, uint64_t> Frames;
    if (!PtxasLog.empty()) {
      auto Log = MemoryBuffer::getFile(PtxasLog);
      if (!Log) {
        errs() << "oxide-opt: cannot read " << PtxasLog << "\n";
        return 1;
      }
      Frames = parsePtxasFrames((*Log)->getBuffer());
    }
    recordStackBounds(Image, PtxasLog.empty() ? nullptr : &Frames, /*Verbose=*/true);
    for (const KernelEntryInfo &K : Image.Kernels)
      outs() << "stack " << K.PtxName << " = " << K.StackBytes << "\n";
    return 0;
  }

  if (EmitPtx) {
    std::vector<std::string> Files(Inputs.begin(), Inputs.end());
    Expected<DeviceImage> Image = compileDeviceImage(Files, "test", Opts, Diags);
    if (!Image) {
      Diags.print(errs());
      errs() << "oxide-opt: " << toString(Image.takeError()) << "\n";
      return 1;
    }
    for (const KernelEntryInfo &K : Image->Kernels)
      outs() << "; kernel " << K.PtxName << " host=" << K.HostSymbol << " params=" << K.NumParams
             << " copies=" << K.HostCopies << "\n";
    if (!Image->PartPtx.empty())
      outs() << "; compiled in " << Image->SplitParts << " parts, " << Image->PartPtx.size()
             << " buckets\n";
    outs() << Image->Ptx;
    if (Assemble) {
      if (Error E = assemblePtx(*Image, Opts, Diags)) {
        errs() << "oxide-opt: " << toString(std::move(E)) << "\n";
        return 1;
      }
      outs() << "; ptxas accepted it: " << (Image->Cubin.empty() ? "no" : "a") << " cubin\n";
    }
    return 0;
  }

  LLVMContext Ctx;
  SMDiagnostic Err;
  std::unique_ptr<Module> M = parseIRFile(Inputs.front(), Err, Ctx);
  if (!M) {
    Err.print(argv[0], errs());
    return 1;
  }
  if (!Passes.empty()) {
    std::map<std::string, std::string> Symbols;
    for (StringRef S : DeviceSymbols)
      Symbols[S.split('=').first.str()] = S.split('=').second.str();
    // The link's target machine, so that the passes' analyses see the GPU
    // (branch divergence) as they do in a link.
    auto TM = createDeviceTarget(Opts);
    if (!TM) {
      errs() << "oxide-opt: " << toString(TM.takeError()) << "\n";
      return 2;
    }
    DevicePipeline Pipeline(Ctx, TM->get(),
                            {Diags, Opts.Arch, Opts.CudaPath, Opts.DeviceDebug, Opts.Libraries,
                             Opts.Verbose, Symbols});
    if (Error E = Pipeline.run(Passes, *M)) {
      errs() << "oxide-opt: " << toString(std::move(E)) << "\n";
      return 2;
    }
    if (PrintPipelinePasses)
      return 0;
  }
  M->print(outs(), nullptr);
  // Every lit test of a pass also checks that its output is valid IR.
  if (verifyModule(*M, &errs())) {
    errs() << "oxide-opt: the module is invalid after the passes\n";
    return 3;
  }
  if (!Diags.failure().empty())
    errs() << "oxide-opt: " << Diags.failure() << "\n";
  if (Diags.hasErrors()) {
    Diags.print(errs());
    return 1;
  }
  return Diags.failure().empty() ? 0 : 1;
}

//===- oxide-opt - Run oxide's device transformations on IR ---------------===//
//
// The lit tests' driver. Three modes:
//   oxide-opt -p build-kernel-entries,lower-panics in.ll   run the named passes
//                                                          in order, print the IR
//   oxide-opt --ptx [--arch sm_90] in.ll [more.ll…]        the whole device
//                                                          compile, print the PTX
//   oxide-opt --rewrite-ptxas-hazards in.ptx               PtxasHazards.def's
//                                                          rewrite of a PTX file
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "oxide/PassContext.h"
#include "oxide/Passes.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace oxide;

static cl::list<std::string> Inputs(cl::Positional, cl::OneOrMore, cl::desc("<input .ll/.bc>"));
static cl::list<std::string> Passes("p", cl::CommaSeparated, cl::desc("passes to run, in order"));
static cl::opt<bool> EmitPtx("ptx", cl::desc("run the whole device compile and print PTX"));
static cl::opt<bool> RewritePtx("rewrite-ptxas-hazards",
                                cl::desc("rewrite a PTX file's PtxasHazards.def instructions"));

static cl::opt<std::string> Arch("arch", cl::init("sm_80"), cl::desc("sm_XX the kernels target"));

static bool runPass(StringRef Name, Module &M, ModuleAnalysisManager &MAM, DiagnosticSink &D) {
  if (Name == "build-kernel-entries")
    BuildKernelEntriesPass(D).run(M, MAM);
  else if (Name == "lower-unwinding")
    LowerUnwindingPass().run(M, MAM);
  else if (Name == "lower-panics")
    LowerPanicsPass().run(M, MAM);
  else if (Name == "lower-atomic-stubs")
    LowerAtomicStubsPass(D).run(M, MAM);
  else if (Name == "lower-atomics")
    LowerAtomicsPass(smNumber(Arch)).run(M, MAM);
  else if (Name == "lower-wgmma")
    LowerWgmmaPass(D, Arch).run(M, MAM);
  else if (Name == "lower-shared-address")
    LowerSharedAddressPass().run(M, MAM);
  else if (Name == "lower-intrinsic-stubs")
    LowerIntrinsicStubsPass(D, smNumber(Arch), isArchSpecific(Arch)).run(M, MAM);
  else if (Name == "assign-address-spaces")
    AssignAddressSpacesPass().run(M, MAM);
  else if (Name == "map-math")
    MapMathPass().run(M, MAM);
  else if (Name == "lower-wide-conversions")
    LowerWideConversionsPass().run(M, MAM);
  else if (Name == "retarget")
    RetargetPass().run(M, MAM);
  else if (Name == "select-reachable")
    SelectReachablePass().run(M, MAM);
  else if (Name == "reject-unsupported")
    RejectUnsupportedPass(D).run(M, MAM);
  else if (Name == "record-kernel-dimensions")
    RecordKernelDimensionsPass().run(M, MAM);
  else if (Name == "record-readonly-params")
    RecordReadOnlyParamsPass().run(M, MAM);
  else if (Name == "tag-invariant-loads")
    TagInvariantLoadsPass().run(M, MAM);
  else if (Name == "defer-shared-stores")
    DeferSharedStoresPass().run(M, MAM);
  else if (Name == "hoist-bounds-checks")
    HoistBoundsChecksPass().run(M, MAM);
  else if (Name == "share-address-bases")
    ShareAddressBasesPass().run(M, MAM);
  else if (Name == "keep-nan-payloads")
    KeepNaNPayloadsPass().run(M, MAM);
  else if (Name == "version-bounds-checks")
    VersionBoundsChecksPass().run(M, MAM);
  else if (Name == "merge-bounds-checks")
    MergeBoundsChecksPass().run(M, MAM);
  else if (Name == "align-barriers")
    AlignBarriersPass().run(M, MAM);
  else {
    errs() << "oxide-opt: unknown pass `" << Name << "`\n";
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "oxide device transformations\n");
  DiagnosticSink Diags;

  if (RewritePtx) {
    auto Buf = MemoryBuffer::getFile(Inputs.front());
    if (!Buf) {
      errs() << "oxide-opt: cannot read " << Inputs.front() << "\n";
      return 1;
    }
    outs() << rewritePtxasHazards((*Buf)->getBuffer());
    return 0;
  }

  if (EmitPtx) {
    LinkerOptions Opts = LinkerOptions::fromEnvironment();
    Opts.Arch = Arch;
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
    outs() << Image->Ptx;
    return 0;
  }

  LLVMContext Ctx;
  SMDiagnostic Err;
  std::unique_ptr<Module> M = parseIRFile(Inputs.front(), Err, Ctx);
  if (!M) {
    Err.print(argv[0], errs());
    return 1;
  }
  PassContext PC;
  for (const std::string &P : Passes)
    if (!runPass(P, *M, PC.MAM, Diags))
      return 2;
  M->print(outs(), nullptr);
  // Every lit test of a pass also checks that its output is valid IR.
  if (verifyModule(*M, &errs())) {
    errs() << "oxide-opt: the module is invalid after the passes\n";
    return 3;
  }
  if (Diags.hasErrors()) {
    Diags.print(errs());
    return 1;
  }
  return 0;
}

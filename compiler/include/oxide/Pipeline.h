//===- Pipeline.h - The device pipeline on LLVM's pass manager --*- C++ -*-===//
//
// The passes of Passes.def run under LLVM's new pass manager, as LLVM's own
// do: registered with PassBuilder by name (so `-passes=` parses them and
// `-print-after=`, `-print-after-all`, `-verify-each` and `-time-passes`
// see them), their PreservedAnalyses honoured by shared analysis managers.
// DevicePipeline runs the sections of Passes.def (Legalize, Link, and
// Optimize, which is LLVM's O3 followed by oxide's post-O3 passes), stopping
// at the first OXIDE_STOP_ON_ERRORS row after which errors were reported.
// oxide-link and `oxide-opt --ptx` run it through compileDeviceImage;
// `oxide-opt -passes=` runs a textual pipeline on the same set-up.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_PIPELINE_H
#define OXIDE_PIPELINE_H

#include "oxide/Diagnostics.h"
#include "oxide/Targets.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/Error.h"
#include <map>
#include <string>
#include <vector>

namespace oxide {

/// What the passes' constructors take: Passes.def writes each pass's
/// arguments as expressions over a PassOptions named `Opts`.
struct PassOptions {
  DiagnosticSink &Diags;
  std::string Arch;        ///< the --arch the kernels are built for (sm_90a)
  std::string CudaPath;    ///< the CUDA toolkit, for libdevice
  std::string DeviceDebug; ///< OXIDE_DEVICE_DEBUG: "" (strip), lines, full
  /// The standard library's archives on the link line, whose embedded
  /// bitcode LinkLibraryBitcode may link from (Gather.cpp).
  std::vector<std::string> Libraries = {};
  bool Verbose = false;    ///< OXIDE_VERBOSE: passes say what they do
  /// The functions the build's CUDA C++ files define, each with its file
  /// (DeviceSources.cpp), which BindDeviceSources binds declarations to.
  std::map<std::string, std::string> DeviceSymbols = {};

  /// The Targets.def row of Arch; null for a name the table lacks (the
  /// tools refuse those before a pipeline runs), which skips the checks.
  const GpuTarget *target() const { return findGpuTarget(Arch); }
};

/// The sections of Passes.def, in the order they run. Optimize is LLVM's O3
/// and then oxide's post-O3 passes; O3 and AfterO3 are its two halves, for
/// a device link that runs O3 on pieces of the module in parallel and the
/// passes after it on the whole (Link/Compile.cpp).
enum class PipelineSection { Legalize, Link, Optimize, O3, AfterO3 };

/// Analysis managers, instrumentation and a PassBuilder that knows oxide's
/// passes, for one module's run through the device pipeline.
class DevicePipeline {
public:
  /// TM may be null (oxide-opt without --ptx: no target-specific analyses).
  DevicePipeline(llvm::LLVMContext &Ctx, llvm::TargetMachine *TM, PassOptions Opts);
  ~DevicePipeline();

  /// Runs one section of Passes.def on M. Fails with the message of the
  /// first OXIDE_STOP_ON_ERRORS row reached with errors reported, or with
  /// the failure of a link step (DiagnosticSink::fail).
  llvm::Error run(PipelineSection Section, llvm::Module &M);

  /// Runs a textual pipeline (`lower-panics,instcombine`) on M: oxide's
  /// passes by their Passes.def names, and LLVM's own.
  llvm::Error run(llvm::StringRef Passes, llvm::Module &M);

  /// Forgets every cached analysis: for a module whose functions were
  /// replaced behind the pass managers' back (pieces linked into it), whose
  /// cached results may name functions that are gone.
  void clearAnalyses();

private:
  PassOptions Opts;
  // The order opt uses: the analysis managers outlive the instrumentation
  // and the PassBuilder, which refer to them.
  llvm::LoopAnalysisManager LAM;
  llvm::FunctionAnalysisManager FAM;
  llvm::CGSCCAnalysisManager CGAM;
  llvm::ModuleAnalysisManager MAM;
  llvm::PassInstrumentationCallbacks PIC;
  llvm::StandardInstrumentations SI;
  llvm::PassBuilder PB;
};

} // namespace oxide

#endif

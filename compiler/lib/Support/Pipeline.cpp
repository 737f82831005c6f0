//===- Pipeline.cpp - The device pipeline on LLVM's pass manager ----------===//
//
// See Pipeline.h. Everything here is read off Passes.def: the names PassBuilder
// parses, the class names the instrumentation prints, and the order and
// sections of the device pipeline. LLVM's O3 runs with the same analysis
// managers and instrumentation, at the start of the Optimize section; oxide's
// post-O3 passes follow it in the same pass manager rather than at one of
// PassBuilder's extension points, so that nothing of O3's own (its final
// GlobalDCE, ConstantMerge, …) runs after them.
//===----------------------------------------------------------------------===//
#include "oxide/Pipeline.h"
#include "oxide/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Transforms/Scalar/LoopUnrollPass.h"

using namespace llvm;
using namespace oxide;

// opt has this option in its driver, not in LLVM's libraries; oxide-opt and
// oxide-link (OXIDE_LLVM_ARGS) both take it from here.
static cl::opt<bool> VerifyEach("verify-each",
                                cl::desc("verify the module after each pass of the device pipeline"));

namespace {

Error makeError(const Twine &Msg) { return createStringError(inconvertibleErrorCode(), Msg); }

/// Makes every row of Passes.def known by its name: to the instrumentation
/// (`-print-after=NAME` matches the pass's class through this map) and to
/// PassBuilder's pipeline parser.
void registerOxidePasses(PassBuilder &PB, PassInstrumentationCallbacks &PIC, const PassOptions &Opts) {
#define OXIDE_NAME_CLASS(NAME, CLASS, ARGS) PIC.addClassToPassName(CLASS::name(), NAME);
#define OXIDE_LEGALIZE_PASS OXIDE_NAME_CLASS
#define OXIDE_LINK_STEP OXIDE_NAME_CLASS
#define OXIDE_OPTIMIZE_PASS OXIDE_NAME_CLASS
#include "oxide/Passes.def"
#undef OXIDE_NAME_CLASS

  PB.registerPipelineParsingCallback(
      [&Opts](StringRef Name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
#define OXIDE_PARSE(NAME, CLASS, ARGS)                                                              \
  if (Name == NAME) {                                                                              \
    MPM.addPass(CLASS ARGS);                                                                       \
    return true;                                                                                   \
  }
#define OXIDE_LEGALIZE_PASS OXIDE_PARSE
#define OXIDE_LINK_STEP OXIDE_PARSE
#define OXIDE_OPTIMIZE_PASS OXIDE_PARSE
#include "oxide/Passes.def"
#undef OXIDE_PARSE
        return false;
      });

  // Unrolling hints (LowerUnrollHints): a loop under a full hint whose exact
  // trip count O3 cannot compute but whose maximum it can (a loop that may
  // leave early, as every debug build's overflow checks do) is unrolled to
  // that maximum, as nvcc does for `#pragma unroll`, up to LLVM's bound
  // (`-unroll-max-upperbound`). Only loops with unroll metadata
  // (OnlyWhenForced): other loops are compiled as before.
  PB.registerVectorizerStartEPCallback([](FunctionPassManager &FPM, OptimizationLevel Level) {
    FPM.addPass(LoopUnrollPass(
        LoopUnrollOptions(Level.getSpeedupLevel(), /*OnlyWhenForced=*/true, /*ForgetSCEV=*/false)
            .setUpperBound(true)));
  });
}

} // namespace

DevicePipeline::DevicePipeline(LLVMContext &Ctx, TargetMachine *TM, PassOptions O)
    : Opts(std::move(O)), SI(Ctx, /*DebugLogging=*/false, VerifyEach),
      PB(TM, PipelineTuningOptions(), std::nullopt, &PIC) {
  SI.registerCallbacks(PIC, &MAM);
  registerOxidePasses(PB, PIC, Opts);
  PB.registerModuleAnalyses(MAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerLoopAnalyses(LAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
}

DevicePipeline::~DevicePipeline() {
  // -time-passes: the report of this module's run (nothing when it is off).
  SI.getTimePasses().print();
}

Error DevicePipeline::run(PipelineSection Section, Module &M) {
  ModulePassManager MPM;
  bool WithO3 = Section == PipelineSection::Optimize || Section == PipelineSection::O3;
  bool AfterO3 = Section == PipelineSection::Optimize || Section == PipelineSection::AfterO3;
  if (WithO3)
    MPM = PB.buildPerModuleDefaultPipeline(OptimizationLevel::O3);
  // Runs the passes added since the last stop, then stops if they failed.
  auto RunToHere = [&](StringRef Message) -> Error {
    MPM.run(M, MAM);
    MPM = ModulePassManager();
    if (!Opts.Diags.failure().empty())
      return makeError(Opts.Diags.failure());
    if (Opts.Diags.hasErrors())
      return makeError(Message);
    return Error::success();
  };
#define OXIDE_LEGALIZE_PASS(NAME, CLASS, ARGS)                                                     \
  if (Section == PipelineSection::Legalize)                                                        \
    MPM.addPass(CLASS ARGS);
#define OXIDE_LINK_STEP(NAME, CLASS, ARGS)                                                         \
  if (Section == PipelineSection::Link)                                                            \
    MPM.addPass(CLASS ARGS);
#define OXIDE_OPTIMIZE_PASS(NAME, CLASS, ARGS)                                                     \
  if (AfterO3)                                                                                     \
    MPM.addPass(CLASS ARGS);
#define OXIDE_STOP_ON_ERRORS(MESSAGE)                                                              \
  if (Error E = RunToHere(MESSAGE))                                                                \
    return E;
#include "oxide/Passes.def"
  return RunToHere("the device pipeline reported errors");
}

void DevicePipeline::clearAnalyses() {
  LAM.clear();
  FAM.clear();
  CGAM.clear();
  MAM.clear();
}

Error DevicePipeline::run(StringRef Passes, Module &M) {
  ModulePassManager MPM;
  if (Error E = PB.parsePassPipeline(MPM, Passes))
    return E;
  // -print-pipeline-passes: the pipeline as parsed, instead of running it.
  if (PrintPipelinePasses) {
    MPM.printPipeline(outs(), [&](StringRef ClassName) {
      StringRef Name = PIC.getPassNameForClassName(ClassName);
      return Name.empty() ? ClassName : Name;
    });
    outs() << "\n";
    return Error::success();
  }
  MPM.run(M, MAM);
  return Error::success();
}

//===- LinkLibDevice.cpp - The libdevice functions the kernels call -------===//
//
// MapMath pointed Rust's float math at libdevice's `__nv_*` functions, the
// implementations CUDA C++ gets (same accuracy, same special cases). This step
// links the ones the module declares from the CUDA toolkit's
// `nvvm/libdevice/libdevice.10.bc`, and only those (LinkOnlyNeeded); the
// second SelectReachable after it drops what they no longer need. A module
// that calls nothing from libdevice is left alone, so a machine without the
// toolkit can still build kernels that do no float math.
//
// A libdevice that cannot be read is not an error in the user's code: the
// link stops (DiagnosticSink::fail) and says where it looked and how to point
// it at the toolkit.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace llvm;
using namespace oxide;

PreservedAnalyses LinkLibDevicePass::run(Module &M, ModuleAnalysisManager &) {
  bool NeedsLibDevice = false;
  for (Function &F : M)
    NeedsLibDevice |= F.isDeclaration() && F.getName().starts_with("__nv_");
  if (!NeedsLibDevice)
    return PreservedAnalyses::all();
  SmallString<256> P(CudaPath);
  sys::path::append(P, "nvvm", "libdevice", "libdevice.10.bc");
  SMDiagnostic Diag;
  std::unique_ptr<Module> LD = parseIRFile(P, Diag, M.getContext());
  if (!LD) {
    Diags.fail(("the kernels use float math from libdevice, but " + P +
                " could not be read; set OXIDE_CUDA_PATH to the CUDA toolkit")
                   .str());
    return PreservedAnalyses::all();
  }
  LD->setTargetTriple(M.getTargetTriple());
  LD->setDataLayout(M.getDataLayout());
  if (Linker::linkModules(M, std::move(LD), Linker::LinkOnlyNeeded))
    Diags.fail("linking libdevice failed");
  return PreservedAnalyses::none();
}

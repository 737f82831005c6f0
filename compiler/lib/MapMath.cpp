//===- MapMath.cpp - Host math → libdevice --------------------------------===//
//
// `f32::sin` and friends reach the bitcode as LLVM intrinsics the NVPTX
// backend cannot select (`llvm.sin.f32`) or as C math library calls
// (`cbrtf`). libdevice implements each of them with the accuracy CUDA C++
// gets; this pass points every such call at its `__nv_*` twin
// (MathFunctions.def). The linker then links libdevice, keeping only what is
// used.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {
struct MathMapping {
  StringRef Host;
  StringRef LibDevice;
};
const MathMapping MathTable[] = {
#define OXIDE_MATH(HOST, LIBDEVICE) {HOST, LIBDEVICE},
#include "oxide/MathFunctions.def"
#undef OXIDE_MATH
};
} // namespace

PreservedAnalyses MapMathPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (const MathMapping &Map : MathTable) {
    Function *Host = M.getFunction(Map.Host);
    if (!Host || !Host->isDeclaration())
      continue;
    FunctionCallee Device = M.getOrInsertFunction(Map.LibDevice, Host->getFunctionType());
    Host->replaceAllUsesWith(Device.getCallee());
    Host->eraseFromParent();
    Changed = true;
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

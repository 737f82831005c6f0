//===- PassContext.h - Analysis managers for running passes -----*- C++ -*-===//
//
// LLVM's module passes may ask for function- and loop-level analyses through
// proxies, so whoever runs a pass needs all four analysis managers registered
// and cross-linked. This bundles that set-up for the linker and oxide-opt.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_PASSCONTEXT_H
#define OXIDE_PASSCONTEXT_H

#include "llvm/Passes/PassBuilder.h"

namespace oxide {

struct PassContext {
  explicit PassContext(llvm::TargetMachine *TM = nullptr) : PB(TM) {
    PB.registerModuleAnalyses(MAM);
    PB.registerCGSCCAnalyses(CGAM);
    PB.registerFunctionAnalyses(FAM);
    PB.registerLoopAnalyses(LAM);
    PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
  }
  // Declared in this order so they are destroyed MAM first, as LLVM requires.
  llvm::LoopAnalysisManager LAM;
  llvm::FunctionAnalysisManager FAM;
  llvm::CGSCCAnalysisManager CGAM;
  llvm::ModuleAnalysisManager MAM;
  llvm::PassBuilder PB;
};

} // namespace oxide

#endif

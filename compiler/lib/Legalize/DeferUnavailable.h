//===- DeferUnavailable.h - A stub the target lacks, judged after O3 -*- C++ -*-===//
//
// Shared by the passes that lower stubs (LowerIntrinsicStubs, LowerWgmma):
// a stub whose instruction the target lacks is not refused where it is
// lowered, because a test of the target (`arch::compute_capability()`,
// `arch::has`) that O3 folds may rule the call out. Its calls go to a
// placeholder carrying the error; RejectUnavailableStubs reports those O3
// left.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_LEGALIZE_DEFERUNAVAILABLE_H
#define OXIDE_LEGALIZE_DEFERUNAVAILABLE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace llvm {
class CallInst;
class Function;
} // namespace llvm

namespace oxide {

/// Points every call of Stub (named Name in Stubs.def) at the placeholder
/// `__oxide_unavailable.<Name>`, a declaration of the stub's type whose
/// UnavailableStubAttr holds Message, Fix and Test (the Rust test of the
/// target that would rule the call out), and records on each call the
/// user's line that Where gives (UnavailableMetadata: the debug info is
/// stripped before O3). Until O3 the call is opaque, with side effects: it
/// stays wherever it can run and goes only where it cannot.
void deferUnavailable(llvm::Function &Stub, llvm::StringRef Name, llvm::StringRef Message,
                      llvm::StringRef Fix, llvm::StringRef Test,
                      llvm::function_ref<std::string(const llvm::CallInst &)> Where);

} // namespace oxide

#endif

//===- PanicFunctions.h - Recognising Rust's panic entry points -*- C++ -*-===//
//
// The functions of `core` every Rust panic ends in (PanicFunctions.def, and
// core's other panic helpers). LowerPanics gives each a device body; the
// link of the standard library's bitcode (LinkLibraryBitcode) leaves them
// declarations, so that their host bodies (formatting, unwinding) never
// reach the device module.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_PANICFUNCTIONS_H
#define OXIDE_PANICFUNCTIONS_H

#include "llvm/ADT/StringRef.h"

namespace oxide {

/// Where a panic function's `&core::panic::Location` is.
enum class PanicLocationArg {
  None,    ///< it carries no location that can be relied on
  LastArg, ///< the last parameter (rustc's #[track_caller] convention)
};

/// One row of PanicFunctions.def (see there for the fields).
struct PanicFunction {
  llvm::StringRef Prefix;
  llvm::StringRef Message;
  PanicLocationArg Location;
  llvm::StringRef IntegerArgs;
  int StringArg;
};

/// The panic function a Rust path names: a row of PanicFunctions.def, or,
/// for a function of `core` that is only declared and whose name contains
/// `panic` (`panic_on_ord_violation` in the sort routines, …), core's
/// generic helper row (no location; the message is the helper's name).
/// Null for anything else.
const PanicFunction *findPanicFunction(llvm::StringRef Path, bool IsDeclaration);

} // namespace oxide

#endif

//===- LaunchProgram.h - A launch condition the host evaluates -*- C++ -*-===//
//
// VersionBoundsChecks can hand the choice between a kernel's checked entry
// and its unchecked one to the host: the condition reads only kernel
// parameters and the launch's grid and block sizes, which the host has in
// hand at every launch, so it costs the GPU nothing there. This writer turns
// such a condition, built from the kernel's own IR values, into the postfix
// program of docs/ABI.md §3 (`KernelRecord.condition_ptr`), which cuda-host
// evaluates with exact integer arithmetic. Its tokens are LaunchCondition.def's,
// the table cuda-host's parser is generated from.
//
// The host must never say "holds" where the IR would not: every operation is
// written so that the host gives up (launches the checked entry) wherever
// the IR could wrap or produce poison, and computes the IR's value exactly
// everywhere else. Arithmetic results must stay below 2^(w-1) in a w-bit
// operation (neither unsigned nor signed wrap, whatever its flags say); a
// shift amount must be below w; a truncation masks unless it is flagged
// `nuw`/`nsw`, where the value must fit.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_LIB_LAUNCHPROGRAM_H
#define OXIDE_LIB_LAUNCHPROGRAM_H

#include "llvm/IR/Value.h"
#include <optional>
#include <string>

namespace oxide {

/// The named tokens of a launch condition (LaunchCondition.def).
enum class ConditionToken {
#define OXIDE_CONDITION_TOKEN(NAME, SPELLING, FORM) NAME,
#include "oxide/LaunchCondition.def"
};

/// Writes launch-invariant integer values as the host's postfix program.
class LaunchProgramWriter {
public:
  /// Appends V's tokens; false (and the program is unusable) if V contains
  /// anything the host cannot evaluate exactly.
  bool value(llvm::Value *V);
  /// Appends a token that pops its operands and pushes the result:
  /// Ule, And, MulExact (the exact, unbounded product). Only tokens written
  /// without a width.
  void op(ConditionToken Token);
  /// The program written so far.
  const std::string &program() const { return Program; }

private:
  std::string Program;
  bool value(llvm::Value *V, unsigned Depth);
  void token(const llvm::Twine &T);
  /// A token of the table written as it is, and one written with a width.
  void token(ConditionToken T);
  void token(ConditionToken T, unsigned Width);
};

} // namespace oxide

#endif

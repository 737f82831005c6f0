//===- Diagnostics.h - rustc-style errors from the device linker -*- C++ -*-===//
//
// The device linker runs as rustc's linker, so its errors appear in the middle
// of a cargo build. They are printed in rustc's shape (`error: …`, `--> file`,
// `= note: …`) so the user reads them like any other compile error, and they
// always name the kernel and the call chain that led to the problem.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_DIAGNOSTICS_H
#define OXIDE_DIAGNOSTICS_H

#include "llvm/Support/raw_ostream.h"
#include <string>
#include <vector>

namespace oxide {

struct Diagnostic {
  std::string Message;             // the `error:` line
  std::string Location;            // `file:line:col`, or empty
  std::vector<std::string> Notes;  // each printed as `= note: …`
};

class DiagnosticSink {
public:
  void error(Diagnostic D) { Errors.push_back(std::move(D)); }
  bool hasErrors() const { return !Errors.empty(); }
  const std::vector<Diagnostic> &errors() const { return Errors; }
  /// Prints every error, then a summary line like rustc's.
  void print(llvm::raw_ostream &OS) const;

private:
  std::vector<Diagnostic> Errors;
};

} // namespace oxide

#endif

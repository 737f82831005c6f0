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
#include <tuple>
#include <vector>

namespace llvm {
class Instruction;
}

namespace oxide {

/// A Rust source location, from an instruction's debug info.
struct SourceLoc {
  std::string File;
  unsigned Line = 0, Col = 0;

  bool empty() const { return File.empty(); }
  /// `file:line:col` (`file:line` when the column is unknown).
  std::string str() const;
  /// Inside Rust's standard library (rustc records `library/core/…`, or the
  /// toolchain's `/rustc/<hash>/…` or `rustlib/` paths) or a registry crate.
  bool isLibrary() const;
  bool operator<(const SourceLoc &O) const {
    return std::tie(File, Line, Col) < std::tie(O.File, O.Line, O.Col);
  }
};

/// The location of `I`, or an empty one when it has no debug info.
SourceLoc sourceLocation(const llvm::Instruction *I);

struct Diagnostic {
  std::string Message;             // the `error:` line
  std::string Location;            // `file:line:col`, or empty
  std::vector<std::string> Notes;  // each printed as `= note: …`
};

class DiagnosticSink {
public:
  void error(Diagnostic D) { Errors.push_back(std::move(D)); }
  bool hasErrors() const { return !Errors.empty(); }
  /// A link step that could not run (a file it needs is missing): not an
  /// error in the user's code, so it is not printed with them; the link
  /// stops and says this instead (the first one counts).
  void fail(std::string Message) {
    if (Failure.empty())
      Failure = std::move(Message);
  }
  const std::string &failure() const { return Failure; }
  const std::vector<Diagnostic> &errors() const { return Errors; }
  /// Prints every error, then a summary line like rustc's.
  void print(llvm::raw_ostream &OS) const;
  /// Prints every error as one line of rustc's JSON diagnostic format (the
  /// `message` of cargo's `compiler-message`), with a primary span where the
  /// error has a source location; for editors (`cargo oxide check
  /// --message-format=json`).
  void printJson(llvm::raw_ostream &OS) const;

private:
  std::vector<Diagnostic> Errors;
  std::string Failure;
};

} // namespace oxide

#endif

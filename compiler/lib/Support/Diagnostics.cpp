//===- Diagnostics.cpp - rustc-style error printing -----------------------===//
#include "oxide/Diagnostics.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Instruction.h"

using namespace llvm;
using namespace oxide;

std::string SourceLoc::str() const {
  return File + ":" + std::to_string(Line) + (Col ? ":" + std::to_string(Col) : "");
}

bool SourceLoc::isLibrary() const {
  StringRef F(File);
  for (StringRef Lib : {"library/core/", "library/alloc/", "library/std/", "library/stdarch/"})
    if (F.starts_with(Lib) || F.contains(("/" + Lib).str()))
      return true;
  return F.contains("/rustc/") || F.contains("/rustlib/") || F.contains("/.cargo/registry/") ||
         F.contains("/.cargo/git/") || F.starts_with("/usr/share/cargo/registry/");
}

SourceLoc oxide::sourceLocation(const Instruction *I) {
  if (!I || !I->getDebugLoc())
    return {};
  const DebugLoc &DL = I->getDebugLoc();
  auto *Scope = cast<DIScope>(DL.getScope());
  return {Scope->getFilename().str(), DL.getLine(), DL.getCol()};
}

void DiagnosticSink::print(llvm::raw_ostream &OS) const {
  for (const Diagnostic &D : Errors) {
    OS << "error: " << D.Message << "\n";
    if (!D.Location.empty())
      OS << "  --> " << D.Location << "\n";
    for (const std::string &N : D.Notes)
      OS << "   = note: " << N << "\n";
    OS << "\n";
  }
  if (!Errors.empty())
    OS << "error: oxide could not compile the kernels for the GPU (" << Errors.size()
       << (Errors.size() == 1 ? " error" : " errors") << ")\n";
}

//===- Diagnostics.cpp - rustc-style error printing -----------------------===//
#include "oxide/Diagnostics.h"

using namespace oxide;

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

//===- Diagnostics.cpp - rustc-style error printing -----------------------===//
#include "oxide/Diagnostics.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Instruction.h"
#include "llvm/Support/JSON.h"

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

namespace {

/// `file:line:col` (or `file:line`) split into its parts; the file may
/// itself contain ':'.
bool splitLocation(StringRef Location, SourceLoc &Out) {
  auto [Rest, Last] = Location.rsplit(':');
  unsigned A = 0, B = 0;
  if (Rest.empty() || Last.getAsInteger(10, A))
    return false;
  auto [File, Middle] = Rest.rsplit(':');
  if (!File.empty() && !Middle.getAsInteger(10, B)) {
    Out = {File.str(), B, A};
    return true;
  }
  Out = {Rest.str(), A, 0};
  return true;
}

} // namespace

void DiagnosticSink::printJson(raw_ostream &OS) const {
  for (const Diagnostic &D : Errors) {
    std::string Rendered;
    {
      raw_string_ostream R(Rendered);
      R << "error: " << D.Message << "\n";
      if (!D.Location.empty())
        R << "  --> " << D.Location << "\n";
      for (const std::string &N : D.Notes)
        R << "   = note: " << N << "\n";
    }
    json::Array Spans;
    SourceLoc Loc;
    if (!D.Location.empty() && splitLocation(D.Location, Loc)) {
      unsigned Col = Loc.Col ? Loc.Col : 1;
      Spans.push_back(json::Object{{"file_name", Loc.File},
                                   {"byte_start", 0},
                                   {"byte_end", 0},
                                   {"line_start", Loc.Line},
                                   {"line_end", Loc.Line},
                                   {"column_start", Col},
                                   {"column_end", Col + 1},
                                   {"is_primary", true},
                                   {"text", json::Array{}},
                                   {"label", nullptr},
                                   {"suggested_replacement", nullptr},
                                   {"suggestion_applicability", nullptr},
                                   {"expansion", nullptr}});
    }
    json::Array Children;
    for (const std::string &N : D.Notes)
      Children.push_back(json::Object{{"message", N},
                                      {"code", nullptr},
                                      {"level", "note"},
                                      {"spans", json::Array{}},
                                      {"children", json::Array{}},
                                      {"rendered", nullptr}});
    json::Object Message{{"$message_type", "diagnostic"},
                         {"message", D.Message},
                         {"code", nullptr},
                         {"level", "error"},
                         {"spans", std::move(Spans)},
                         {"children", std::move(Children)},
                         {"rendered", Rendered}};
    OS << json::Value(std::move(Message)) << "\n";
  }
}

//===- RustNames.cpp - Demangling rustc symbols ---------------------------===//
//
// Legacy Rust names are Itanium-shaped with a `h<16 hex>` hash as the last
// path segment and `$LT$`-style escapes; v0 names (`_R…`) have their own
// demangler in LLVM. Both are turned into plain Rust paths here.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/RustNames.h"
#include "llvm/Demangle/Demangle.h"
#include <cctype>
#include <cstring>

using namespace llvm;

namespace {

/// Undoes the escapes of rustc's legacy mangling (`$LT$` → `<`, `..` → `::`).
std::string unescapeLegacy(StringRef S) {
  static const std::pair<StringRef, StringRef> Escapes[] = {
      {"$LT$", "<"}, {"$GT$", ">"},  {"$RF$", "&"},  {"$BP$", "*"},
      {"$LP$", "("}, {"$RP$", ")"},  {"$C$", ","},   {"$u20$", " "},
      {"$u27$", "'"}, {"$u5b$", "["}, {"$u5d$", "]"}, {"$u7b$", "{"},
      {"$u7d$", "}"}, {"$u7e$", "~"}, {"$u3b$", ";"}, {"$u2b$", "+"},
      {"$u22$", "\""}};
  std::string Out;
  while (!S.empty()) {
    if (S.starts_with("..")) {
      Out += "::";
      S = S.drop_front(2);
      continue;
    }
    bool Replaced = false;
    if (S.front() == '$')
      for (const auto &[From, To] : Escapes)
        if (S.starts_with(From)) {
          Out += To.str();
          S = S.drop_front(From.size());
          Replaced = true;
          break;
        }
    if (!Replaced) {
      Out += S.front();
      S = S.drop_front();
    }
  }
  return Out;
}

/// Drops the trailing `::h0123456789abcdef` of a legacy name.
StringRef dropLegacyHash(StringRef Path) {
  size_t Pos = Path.rfind("::h");
  if (Pos == StringRef::npos || Path.size() - Pos != 3 + 16)
    return Path;
  for (char C : Path.drop_front(Pos + 3))
    if (!isxdigit(static_cast<unsigned char>(C)))
      return Path;
  return Path.take_front(Pos);
}

} // namespace

std::string oxide::demangleRust(StringRef Symbol) {
  // The IR linker renames clashing internal symbols `name.1`; the suffix is
  // not part of the Rust name.
  StringRef Base = Symbol;
  size_t Dot = Base.rfind('.');
  if (Dot != StringRef::npos && Dot + 1 < Base.size() &&
      Base.drop_front(Dot + 1).find_first_not_of("0123456789") == StringRef::npos)
    Base = Base.take_front(Dot);

  if (Base.starts_with("_R")) {
    if (char *D = rustDemangle(Base)) {
      std::string Out = D;
      std::free(D);
      return Out;
    }
    return Symbol.str();
  }
  if (Base.starts_with("_ZN")) {
    std::string D = demangle(Base.str());
    if (D != Base)
      return unescapeLegacy(dropLegacyHash(D));
  }
  return Symbol.str();
}

std::string oxide::ptxIdentifier(StringRef Symbol) {
  std::string Out;
  for (char C : Symbol)
    Out += (isalnum(static_cast<unsigned char>(C)) || C == '_' || C == '$') ? C : '_';
  if (Out.empty() || isdigit(static_cast<unsigned char>(Out.front())))
    Out.insert(Out.begin(), '_');
  return Out;
}

std::string oxide::kernelPathOf(StringRef WrapperSymbol) {
  std::string Path = demangleRust(WrapperSymbol);
  size_t Pos = Path.find(KernelEntryPrefix.str());
  if (Pos != std::string::npos)
    Path.erase(Pos, KernelEntryPrefix.size());
  return Path;
}

std::optional<oxide::FormattingMethod> oxide::formattingMethod(StringRef Path) {
  constexpr StringLiteral Fmt = "core::fmt::";
  if (!Path.consume_back(">::fmt"))
    return std::nullopt;
  // `<impl core::fmt::Debug for u8>`, at the end of a module path.
  if (size_t Impl = Path.find("<impl core::fmt::"); Impl != StringRef::npos) {
    auto [Trait, Type] = Path.drop_front(Impl + strlen("<impl ") + Fmt.size()).split(" for ");
    if (Type.empty() || Trait.contains(' '))
      return std::nullopt;
    return FormattingMethod{Trait.str(), Type.str()};
  }
  // `<u32 as core::fmt::Display>` (legacy names escape a leading `<` as `_<`).
  Path.consume_front("_");
  if (!Path.consume_front("<"))
    return std::nullopt;
  size_t As = Path.rfind(" as core::fmt::");
  if (As == StringRef::npos)
    return std::nullopt;
  StringRef Trait = Path.drop_front(As + strlen(" as ") + Fmt.size());
  if (Trait.empty() || Trait.contains(' ') || Trait.contains("::"))
    return std::nullopt;
  return FormattingMethod{Trait.str(), Path.take_front(As).str()};
}

bool oxide::isFormatWrite(StringRef Path) { return Path == "core::fmt::write"; }

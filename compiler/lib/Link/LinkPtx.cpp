//===- LinkPtx.cpp - oxide's PTX and nvcc's PTX made one module -----------===//
//
// The kernels' PTX declares each CUDA C++ function they call `.extern .func`;
// nvcc's PTX of the device sources (DeviceSources.cpp) defines them
// `.visible .func`. This step writes one module holding both, as a device
// link of relocatable objects would bind them, so that everything after it
// (ptxas, the cubin, the driver's JIT on another GPU, the emulator) sees one
// ordinary PTX module:
//   * the header is oxide's, with the highest `.version` of the parts (PTX
//     ISA versions are backward compatible; every part was written for the
//     same `.target`, since nvcc ran for the link's target);
//   * each device source follows the header, without its own header lines,
//     so its functions are defined before oxide's code calls them;
//   * an `.extern .func` declaration of a function another part defines
//     goes where the definition comes first (ptxas refuses a declaration
//     after a definition) and becomes a `.visible` forward declaration where
//     it comes later, after its prototype is checked against the
//     definition's: a Rust `extern "C"` signature that
//     does not match the C++ one (another count, size or kind of parameter)
//     is an error naming both, not a call that reads the wrong registers;
//   * a name defined `.visible` by two parts is an error naming both files;
//   * a device source's internal module-level symbols (nvcc's `$str`, a
//     `static __device__` table, libdevice's `__cudart_i2opi_f`, which
//     oxide's libdevice copy may hold too) that clash with a name of another
//     part are renamed within that source's text, as a linker keeps local
//     symbols of two objects apart.
// What a device source's functions reach stays theirs: no Rust semantics is
// involved beyond the C ABI of the calls, which both compilers lower to the
// PTX calling convention.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include <set>

using namespace llvm;
using namespace oxide;

namespace {

Error makeError(const Twine &Msg) { return createStringError(inconvertibleErrorCode(), Msg); }

bool isWordChar(char C) { return isAlnum(C) || C == '_' || C == '$' || C == '%' || C == '.'; }

/// A module-level symbol of a PTX text.
struct TopSymbol {
  std::string Name;
  bool Internal; // neither .visible, .extern, .weak nor .common
};

/// The name a module-level statement head declares, or "".
std::string declaredName(StringRef Head) {
  if (Head.contains(".func") || Head.contains(".entry")) {
    size_t Kw = Head.contains(".func") ? Head.find(".func") + 5 : Head.find(".entry") + 6;
    StringRef Rest = Head.drop_front(Kw).ltrim();
    if (Rest.starts_with("(")) {
      size_t Close = Rest.find(')');
      Rest = Rest.drop_front(Close + 1).ltrim();
    }
    return Rest.take_until([](char C) { return C == '(' || isSpace(C); }).str();
  }
  for (StringRef Space : {".global", ".const", ".shared"})
    if (Head.contains(Space)) {
      StringRef Decl = Head.split('=').first.rtrim();
      Decl = Decl.take_until([](char C) { return C == '[' || C == '<'; }).rtrim();
      size_t Start = Decl.find_last_of(" \t\n");
      return Decl.drop_front(Start == StringRef::npos ? 0 : Start + 1).str();
    }
  return "";
}

/// Every module-level symbol a PTX text declares or defines.
std::vector<TopSymbol> topSymbols(StringRef Ptx) {
  std::vector<TopSymbol> Out;
  std::string Text = ptxWithoutComments(Ptx);
  StringRef S(Text);
  int Depth = 0;
  size_t Start = 0;
  auto Take = [&](StringRef Head) {
    Head = Head.trim();
    if (Head.starts_with(".version") || Head.starts_with(".target") ||
        Head.starts_with(".address_size") || Head.starts_with(".file") ||
        Head.starts_with(".section") || Head.empty())
      return;
    std::string Name = declaredName(Head);
    if (Name.empty())
      return;
    bool Internal = !(Head.starts_with(".visible") || Head.starts_with(".extern") ||
                      Head.starts_with(".weak") || Head.starts_with(".common"));
    Out.push_back({Name, Internal});
  };
  for (size_t I = 0; I < S.size(); ++I) {
    char C = S[I];
    if (C == '{') {
      if (Depth++ == 0)
        Take(S.slice(Start, I));
    } else if (C == '}') {
      if (--Depth == 0)
        Start = I + 1;
    } else if (C == ';' && Depth == 0) {
      Take(S.slice(Start, I));
      Start = I + 1;
    } else if (C == '\n' && Depth == 0) {
      StringRef Head = S.slice(Start, I).trim();
      if (Head.starts_with(".version") || Head.starts_with(".target") ||
          Head.starts_with(".address_size") || Head.starts_with(".file"))
        Start = I + 1;
    }
  }
  return Out;
}

/// Replaces every whole word of \p Text found in \p Renames.
std::string renameWords(StringRef Text, const std::map<std::string, std::string> &Renames) {
  if (Renames.empty())
    return Text.str();
  std::string Out;
  Out.reserve(Text.size());
  for (size_t I = 0; I < Text.size();) {
    if (!isWordChar(Text[I])) {
      Out += Text[I++];
      continue;
    }
    size_t J = I;
    while (J < Text.size() && isWordChar(Text[J]))
      ++J;
    StringRef Word = Text.slice(I, J);
    auto It = Renames.find(Word.str());
    Out += It == Renames.end() ? Word.str() : It->second;
    I = J;
  }
  return Out;
}

/// Resolves `.extern .func` declarations: one of a function in \p Before
/// (defined earlier in the linked module) is dropped, since ptxas refuses a
/// declaration after the definition (its lines stay, blank, so line numbers
/// hold); one of a function in \p After becomes a `.visible` forward
/// declaration.
std::string resolveExterns(StringRef Ptx, const std::set<std::string> &Before,
                           const std::set<std::string> &After) {
  std::string Text = ptxWithoutComments(Ptx);
  std::string Out;
  size_t Copied = 0;
  for (size_t At = Text.find(".extern"); At != std::string::npos;
       At = Text.find(".extern", At + 1)) {
    StringRef Rest = StringRef(Text).drop_front(At + 7).ltrim();
    if (!Rest.starts_with(".func"))
      continue;
    size_t End = Text.find(';', At);
    if (End == std::string::npos)
      continue;
    std::string Name = declaredName(StringRef(Text).slice(At + 7, End).ltrim());
    if (Before.count(Name)) {
      Out += Ptx.slice(Copied, At).str() + std::string(Ptx.slice(At, End + 1).count('\n'), '\n');
      Copied = End + 1;
    } else if (After.count(Name)) {
      Out += Ptx.slice(Copied, At).str() + ".visible";
      Copied = At + 7;
    }
  }
  return Out + Ptx.drop_front(Copied).str();
}

/// `.version 8.7` → {8, 7}; {0, 0} without one.
std::pair<unsigned, unsigned> ptxVersion(StringRef Ptx) {
  size_t At = Ptx.find("\n.version");
  if (At == StringRef::npos)
    return {0, 0};
  StringRef V = Ptx.drop_front(At + 9).ltrim().take_until(isSpace);
  auto [Major, Minor] = V.split('.');
  unsigned A = 0, B = 0;
  Major.getAsInteger(10, A);
  Minor.getAsInteger(10, B);
  return {A, B};
}

bool isHeaderLine(StringRef Line) {
  Line = Line.trim();
  return Line.starts_with(".version") || Line.starts_with(".target") ||
         Line.starts_with(".address_size");
}

} // namespace

Expected<std::string> oxide::linkPtxUnits(StringRef OxidePtx,
                                          const std::vector<DeviceSourceUnit> &Units,
                                          std::vector<PtxUnitLines> &Lines) {
  Lines.clear();
  if (Units.empty())
    return OxidePtx.str();
  const std::string OxideName = "the kernels' PTX";

  // Who defines what: a name defined twice is refused.
  std::map<std::string, std::pair<size_t, PtxPrototype>> Definer; // name → part (0 = oxide)
  std::vector<std::map<std::string, PtxPrototype>> Defs = {ptxFunctions(OxidePtx, true)};
  for (const DeviceSourceUnit &U : Units)
    Defs.push_back(U.Functions);
  auto PartName = [&](size_t P) { return P == 0 ? OxideName : Units[P - 1].Source; };
  for (size_t P = 0; P < Defs.size(); ++P)
    for (const auto &[Name, Proto] : Defs[P]) {
      auto [It, New] = Definer.try_emplace(Name, P, Proto);
      if (!New)
        return makeError("`" + Name + "` is defined twice: by " + PartName(It->second.first) +
                         " and by " + PartName(P) +
                         "\n  = help: give one of them another name (a device function's name "
                         "is global to the linked module)");
    }

  // What a device source calls must be defined by some part, or be one of
  // the functions the driver itself provides to every module.
  for (size_t P = 1; P <= Units.size(); ++P)
    for (const auto &[Name, Proto] : ptxFunctions(Units[P - 1].Ptx, /*Definitions=*/false))
      if (!Definer.count(Name) && !isDriverFunction(Name))
        return makeError("the device source " + Units[P - 1].Source + " calls `" + Name +
                         "`, which neither it, another device source nor a Rust export "
                         "defines\n  = help: define it in a .cu file the build script names, "
                         "or export it from Rust with `#[device] #[no_mangle] pub extern \"C\" "
                         "fn " + Name + "(..)`; CUDA's device runtime (cudadevrt) is not "
                         "linked");

  // Each call across parts must use the definition's prototype.
  std::vector<std::string> Texts = {OxidePtx.str()};
  for (const DeviceSourceUnit &U : Units)
    Texts.push_back(U.Ptx);
  // The linked module holds the device sources in order, then oxide's code.
  auto Position = [&](size_t P) { return P == 0 ? Texts.size() : P; };
  // For part P: the functions it calls that come before / after it.
  auto Split = [&](size_t P, std::set<std::string> &Before, std::set<std::string> &After) {
    for (const auto &[Name, Proto] : ptxFunctions(Texts[P], /*Definitions=*/false)) {
      auto It = Definer.find(Name);
      if (It == Definer.end() || It->second.first == P)
        continue;
      (Position(It->second.first) < Position(P) ? Before : After).insert(Name);
    }
  };
  for (size_t P = 0; P < Texts.size(); ++P)
    for (const auto &[Name, Proto] : ptxFunctions(Texts[P], /*Definitions=*/false)) {
      auto It = Definer.find(Name);
      if (It == Definer.end() || It->second.first == P)
        continue;
      if (!(It->second.second == Proto)) {
        // A struct by value is `.b8 [N]` in the PTX ABI; rustc lowered the
        // Rust side for the host's C ABI (x86-64 passes small structs in
        // registers), which no device compiler shares.
        auto ByValue = [](const PtxPrototype &P) {
          for (const std::string &T : P.Params)
            if (StringRef(T).contains(".b8 ["))
              return true;
          return false;
        };
        if (ByValue(It->second.second) || ByValue(Proto))
          return makeError(
              "`" + Name + "` takes a struct by value, which cannot cross between Rust and CUDA "
              "C++ device code:\n  " + PartName(P) + " calls it as " + Proto.str() + "\n  " +
              PartName(It->second.first) + " defines it as " + It->second.second.str() +
              "\n  = note: rustc lowers a struct argument for the host's C ABI, not the PTX "
              "ABI nvcc uses\n  = help: pass a pointer to it (`*const T` / `const T*`) or its "
              "fields as separate arguments");
        return makeError(
            "`" + Name + "` is called with another signature than it is defined with:\n" +
            "  " + PartName(P) + " calls it as " + Proto.str() + "\n  " +
            PartName(It->second.first) + " defines it as " + It->second.second.str() +
            "\n  = help: make the `extern \"C\"` declaration match the C++ function (f32 = "
            "float, f64 = double, i32/u32 = int/unsigned, i64/u64 = long long, *const T / "
            "*mut T = const T* / T*)");
      }
    }

  // A device source's internal symbols that clash with another part's.
  std::vector<std::set<std::string>> Names(Texts.size());
  std::vector<std::vector<TopSymbol>> Symbols;
  for (size_t P = 0; P < Texts.size(); ++P) {
    Symbols.push_back(topSymbols(Texts[P]));
    for (const TopSymbol &T : Symbols.back())
      Names[P].insert(T.Name);
  }
  std::set<std::string> Taken;
  for (const auto &N : Names)
    Taken.insert(N.begin(), N.end());

  std::string Body;
  unsigned Major = ptxVersion(OxidePtx).first, Minor = ptxVersion(OxidePtx).second;
  // The header ends after oxide's `.address_size` line.
  size_t HeaderEnd = OxidePtx.find(".address_size");
  HeaderEnd = HeaderEnd == StringRef::npos ? 0 : OxidePtx.find('\n', HeaderEnd);
  HeaderEnd = HeaderEnd == StringRef::npos ? OxidePtx.size() : HeaderEnd + 1;
  std::set<std::string> OxideBefore, OxideAfter;
  Split(0, OxideBefore, OxideAfter);
  std::string Header = resolveExterns(OxidePtx.take_front(HeaderEnd), OxideBefore, OxideAfter);
  unsigned Line = 1 + StringRef(Header).count('\n');
  for (size_t P = 1; P < Texts.size(); ++P) {
    auto [A, B] = ptxVersion(Texts[P]);
    if (std::make_pair(A, B) > std::make_pair(Major, Minor))
      std::tie(Major, Minor) = std::make_pair(A, B);
    std::map<std::string, std::string> Renames;
    for (const TopSymbol &T : Symbols[P]) {
      if (!T.Internal)
        continue;
      bool Clashes = false;
      for (size_t Q = 0; Q < Texts.size(); ++Q)
        Clashes |= Q != P && Names[Q].count(T.Name);
      if (!Clashes)
        continue;
      std::string New;
      for (unsigned K = 0;; ++K) {
        New = T.Name + "$oxide" + std::to_string(P) + (K ? "_" + std::to_string(K) : "");
        if (!Taken.count(New))
          break;
      }
      Taken.insert(New);
      Renames[T.Name] = New;
    }
    std::set<std::string> Before, After;
    Split(P, Before, After);
    std::string Text = resolveExterns(renameWords(Texts[P], Renames), Before, After);
    std::string Kept = "// oxide: device source " + Units[P - 1].Source + " (nvcc -ptx)\n";
    unsigned First = Line + 1;
    SmallVector<StringRef> SourceLines;
    StringRef(Text).split(SourceLines, '\n');
    PtxUnitLines L;
    L.Source = Units[P - 1].Source;
    L.FirstLine = First;
    // Header lines become blank, so every line keeps its number.
    for (StringRef SL : SourceLines)
      Kept += (isHeaderLine(SL) ? "" : SL.str()) + "\n";
    L.Shift = int(First) - 1;
    Line += StringRef(Kept).count('\n');
    L.LastLine = Line - 1;
    Lines.push_back(L);
    Body += Kept;
  }
  std::string Rest = resolveExterns(OxidePtx.drop_front(HeaderEnd), OxideBefore, OxideAfter);

  // The highest .version of the parts.
  size_t V = Header.find(".version");
  if (V != std::string::npos) {
    size_t End = Header.find('\n', V);
    Header.replace(V, End - V, ".version " + std::to_string(Major) + "." + std::to_string(Minor));
  }
  return Header + Body + Rest;
}

std::string oxide::annotatePtxasLines(StringRef Output, const std::vector<PtxUnitLines> &Lines) {
  if (Lines.empty())
    return Output.str();
  std::string Out;
  SmallVector<StringRef> OutLines;
  Output.split(OutLines, '\n');
  for (StringRef L : OutLines) {
    Out += L.str();
    size_t At = L.find(", line ");
    unsigned N = 0;
    if (At != StringRef::npos &&
        !L.drop_front(At + 7).take_while(isDigit).getAsInteger(10, N))
      for (const PtxUnitLines &U : Lines)
        if (N >= U.FirstLine && N <= U.LastLine)
          Out += "\n  = note: line " + std::to_string(N) + " is line " +
                 std::to_string(N - U.Shift) + " of nvcc's PTX for " + U.Source +
                 " (`nvcc -ptx -rdc=true` writes it)";
    Out += "\n";
  }
  return Out;
}

namespace {

/// A module-level statement of a PTX text: [Begin, End) with its name.
struct TopStatement {
  size_t Begin = 0, End = 0;
  std::string Name;
  bool Extern = false;     // an `.extern` declaration
  bool Definition = false; // a function with a body, or a variable
};

/// The module-level statements of a PTX text after its header, in order.
std::vector<TopStatement> topStatements(StringRef Ptx) {
  std::vector<TopStatement> Out;
  std::string Text = ptxWithoutComments(Ptx);
  StringRef S(Text);
  int Depth = 0;
  size_t Start = 0;
  std::string Head;
  auto Emit = [&](size_t End, StringRef H, bool Body) {
    StringRef T = H.trim();
    std::string Name = declaredName(T);
    if (!Name.empty() && !T.starts_with(".version") && !T.starts_with(".target") &&
        !T.starts_with(".address_size")) {
      TopStatement St;
      St.Begin = Start;
      St.End = End;
      St.Name = Name;
      St.Extern = T.starts_with(".extern");
      bool Function = T.contains(".func") || T.contains(".entry");
      St.Definition = !St.Extern && (Function ? Body : true);
      Out.push_back(St);
    }
    Start = End;
  };
  for (size_t I = 0; I < S.size(); ++I) {
    char C = S[I];
    if (C == '{') {
      if (Depth++ == 0)
        Head = S.slice(Start, I).str();
    } else if (C == '}') {
      if (--Depth == 0) {
        // `= { … };` ends an initialised variable; otherwise a body ends.
        size_t Next = S.find_first_not_of(" \t\r\n", I + 1);
        if (Next != StringRef::npos && S[Next] == ';')
          Emit(Next + 1, Head, /*Body=*/false), I = Next;
        else
          Emit(I + 1, Head, /*Body=*/true);
      }
    } else if (C == ';' && Depth == 0) {
      Emit(I + 1, S.slice(Start, I), /*Body=*/false);
    } else if (C == '\n' && Depth == 0) {
      StringRef Line = S.slice(Start, I).trim();
      if (Line.empty() || Line.starts_with(".version") || Line.starts_with(".target") ||
          Line.starts_with(".address_size") || Line.starts_with(".file"))
        Start = I + 1;
    }
  }
  return Out;
}

/// The end of a PTX text's header (after its `.address_size` line).
size_t headerEnd(StringRef Ptx) {
  size_t At = Ptx.find(".address_size");
  if (At == StringRef::npos)
    return 0;
  At = Ptx.find('\n', At);
  return At == StringRef::npos ? Ptx.size() : At + 1;
}

/// A statement's text without its comments and the space around its
/// lines, to compare two parts' definitions of one variable.
std::string definitionText(StringRef Statement) {
  std::string Out;
  SmallVector<StringRef, 4> Lines;
  Statement.split(Lines, '\n');
  for (StringRef Line : Lines) {
    Line = Line.split("//").first.trim();
    if (!Line.empty())
      Out += Line.str() + "\n";
  }
  return Out;
}

} // namespace

Expected<std::string> oxide::joinPtxParts(const std::vector<std::string> &Parts) {
  if (Parts.empty())
    return std::string();
  std::string Out = StringRef(Parts[0]).take_front(headerEnd(Parts[0])).str();
  std::map<std::string, size_t> DefinedBy;
  std::set<std::string> Known; // defined or declared by an earlier part
  // Shared-memory variables each part that uses them defines alike
  // (SplitByKernel.cpp): the text of the first definition, the one kept.
  std::map<std::string, std::string> SharedDefinitions;
  for (size_t P = 0; P < Parts.size(); ++P) {
    StringRef Body = StringRef(Parts[P]).drop_front(headerEnd(Parts[P]));
    std::vector<TopStatement> Stmts = topStatements(Body);
    size_t Copied = 0;
    for (const TopStatement &St : Stmts) {
      bool Repeated = false;
      if (St.Definition) {
        std::string Text = definitionText(Body.slice(St.Begin, St.End));
        StringRef T(Text);
        bool Shared = T.contains(".shared") && !T.contains(".func") && !T.contains(".entry");
        auto [It, New] = DefinedBy.try_emplace(St.Name, P);
        if (Shared && New)
          SharedDefinitions[St.Name] = Text;
        Repeated = !New && Shared && SharedDefinitions.count(St.Name) && SharedDefinitions[St.Name] == Text;
        if (!New && It->second != P && !Repeated)
          return makeError("internal error: parts " + Twine(It->second) + " and " + Twine(P) +
                           " of the split device module both define `" + St.Name + "`");
      }
      if (Repeated || St.Extern && Known.count(St.Name)) {
        Out += Body.slice(Copied, St.Begin).str();
        Copied = St.End;
      }
    }
    Out += Body.drop_front(Copied).str();
    if (!Out.empty() && Out.back() != '\n')
      Out += '\n';
    for (const TopStatement &St : Stmts)
      Known.insert(St.Name);
  }
  return Out;
}

//===- PtxasHazards.cpp - Refuse PTX that ptxas would miscompile ----------===//
//
// The last check before PTX leaves the device linker: no instruction of
// PtxasHazards.def may reach ptxas where its miscompilation can show.
// KeepNegationWrap rewrites every IR form known to become one; this check
// makes a form it does not know a build error naming the PTX function and
// the instruction, rather than a kernel that silently returns a wrong
// number on the GPU.
//
// Each hazard is wrong only in the bits above the type's sign bit or in
// the sign itself: -(-32768) is 0x8000 in its low 16 bits either way. So an
// instruction whose result is read only through `and` with a mask that
// clears the sign bit (the backend's expansion of an 8- or 16-bit rotate
// negates the shift amount, then masks it to 3 or 4 bits) cannot go wrong
// and is allowed. Every other read, or a register the function also
// writes elsewhere, is judged conservatively: refused.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

using namespace llvm;

namespace {

struct Hazard {
  StringRef Mnemonic;
  StringRef Why;
};

const Hazard Hazards[] = {
#define OXIDE_PTXAS_HAZARD(MNEMONIC, WHY) {MNEMONIC, WHY},
#include "oxide/PtxasHazards.def"
#undef OXIDE_PTXAS_HAZARD
};

/// One PTX instruction: `[@guard] mnemonic op0, op1, …`.
struct Statement {
  StringRef Mnemonic;
  SmallVector<StringRef, 4> Operands;
};

/// The instructions of a line (inline assembly puts several, and opens a
/// `{` scope, on one line). Directives, labels and comments are skipped.
SmallVector<Statement> statementsOf(StringRef Line) {
  SmallVector<Statement> Out;
  Line = Line.split("//").first;
  SmallVector<StringRef> Parts;
  Line.split(Parts, ';');
  for (StringRef S : Parts) {
    S = S.trim();
    while (S.consume_front("{") || S.consume_front("}"))
      S = S.trim();
    if (S.starts_with("@")) // a guard predicate: `@%p1 neg.s16 …`
      S = S.drop_until([](char C) { return C == ' ' || C == '\t'; }).trim();
    if (S.empty() || S.starts_with(".") || S.ends_with(":"))
      continue;
    Statement St;
    auto [Mnemonic, Rest] = S.split(' ');
    if (Mnemonic.contains('\t'))
      std::tie(Mnemonic, Rest) = S.split('\t');
    St.Mnemonic = Mnemonic.trim();
    SmallVector<StringRef> Ops;
    Rest.split(Ops, ',');
    for (StringRef Op : Ops)
      if (!Op.trim().empty())
        St.Operands.push_back(Op.trim());
    Out.push_back(St);
  }
  return Out;
}

/// Whether `Operand` names `Reg` (also inside `[reg+8]` or `{a, b}`).
bool mentions(StringRef Operand, StringRef Reg) {
  size_t At = 0;
  while ((At = Operand.find(Reg, At)) != StringRef::npos) {
    size_t End = At + Reg.size();
    bool StartsToken = At == 0 || !isalnum(Operand[At - 1]);
    bool EndsToken = End == Operand.size() || !isalnum(Operand[End]);
    if (StartsToken && EndsToken)
      return true;
    At = End;
  }
  return false;
}

/// The bit width of `abs.s32`, `neg.s16`, … (the last field).
unsigned widthOf(StringRef Mnemonic) {
  unsigned Bits = 0;
  Mnemonic.rsplit('.').second.drop_front(1).getAsInteger(10, Bits);
  return Bits;
}

/// Whether a read of the hazard's result cannot see where it is wrong:
/// `and.bN d, reg, K` (either order) with K below the sign bit.
bool onlyLowBits(const Statement &Use, StringRef Reg, unsigned Bits) {
  if (!Use.Mnemonic.starts_with("and.b") || Use.Operands.size() != 3 || Bits == 0 || Bits > 64)
    return false;
  StringRef Other = mentions(Use.Operands[1], Reg) ? Use.Operands[2] : Use.Operands[1];
  uint64_t Mask = 0;
  if (Other.getAsInteger(0, Mask))
    return false;
  return Mask < (uint64_t(1) << (Bits - 1));
}

/// The name of the function a `.func`/`.entry` header line declares.
StringRef functionName(StringRef Line) {
  size_t Open = Line.find('(');
  StringRef Head = Line.take_front(Open);
  // `.func (.param .b64 func_retval0) name(`: the name follows the result.
  if (Open != StringRef::npos && Head.trim().ends_with(".func")) {
    size_t Close = Line.find(')', Open);
    if (Close != StringRef::npos)
      return Line.drop_front(Close + 1).ltrim().take_until(
          [](char C) { return C == '(' || C == ' ' || C == '\t'; });
  }
  return Head.rtrim().rsplit(' ').second;
}

/// The first hazard in one function's body that is read beyond its low bits.
std::optional<std::string> checkFunction(StringRef Name, ArrayRef<StringRef> Body) {
  SmallVector<Statement> All;
  for (StringRef Line : Body)
    for (Statement &S : statementsOf(Line))
      All.push_back(S);
  for (const Statement &S : All) {
    const Hazard *Found = nullptr;
    for (const Hazard &H : Hazards)
      if (S.Mnemonic == H.Mnemonic)
        Found = &H;
    if (!Found || S.Operands.empty())
      continue;
    StringRef Reg = S.Operands[0];
    unsigned Bits = widthOf(S.Mnemonic);
    bool Harmless = true;
    for (const Statement &U : All) {
      if (&U == &S)
        continue;
      bool Writes = !U.Operands.empty() && U.Operands[0] == Reg;
      bool Reads = false;
      for (size_t I = Writes ? 1 : 0; I < U.Operands.size(); ++I)
        Reads |= mentions(U.Operands[I], Reg);
      // A store's first operand is an address, read, not written.
      if (U.Mnemonic.starts_with("st.") && !U.Operands.empty() && mentions(U.Operands[0], Reg))
        Reads = true;
      if (Writes || (Reads && !onlyLowBits(U, Reg, Bits))) {
        Harmless = false;
        break;
      }
    }
    if (!Harmless)
      return ("the NVPTX backend emitted `" + Found->Mnemonic + "` in `" + Name + "`, which ptxas " +
              "miscompiles (" + Found->Why + "); this is a bug in oxide's KeepNegationWrap pass, " +
              "please report it with the kernel")
          .str();
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> oxide::findPtxasHazard(StringRef Ptx) {
  StringRef Name = "?";
  SmallVector<StringRef> Body;
  while (!Ptx.empty()) {
    auto [Line, Rest] = Ptx.split('\n');
    Ptx = Rest;
    StringRef Code = Line.trim();
    bool Header = !Code.starts_with("//") && (Code.contains(".func") || Code.contains(".entry"));
    if (Header) {
      if (std::optional<std::string> Hazard = checkFunction(Name, Body))
        return Hazard;
      Body.clear();
      Name = functionName(Code);
      continue;
    }
    Body.push_back(Code);
  }
  return checkFunction(Name, Body);
}

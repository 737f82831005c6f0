//===- PtxasHazards.cpp - Rewrite the PTX ptxas would miscompile ----------===//
//
// Rust's `wrapping_neg`, `wrapping_abs`, `unsigned_abs`, `abs_diff`,
// `overflowing_neg`, `checked_neg`, `saturating_neg` and friends all meet
// one value without a positive counterpart, `iN::MIN`, whose negation and
// absolute value are `iN::MIN` again; LLVM and PTX agree. ptxas does not,
// in two ways (PtxasHazards.def lists the instructions):
//   * it keeps a 16-bit value sign-extended in a 32-bit register and does
//     not truncate after `neg.s16` or `abs.s16`, so -(-32768) stays
//     +32768 for a later `setp.lt.s16`, `shr.s16`, `div.s16` or
//     `cvt.s64.s16` (`0i16.overflowing_sub(-32768).1` was false);
//   * it assumes `abs.s32` and `abs.s64` are never negative and folds
//     `abs(x) < 0` to false (`y.checked_add(i64::MIN.wrapping_abs())` was
//     None for y = 0).
// The NVPTX backend chooses these instructions for negations and absolute
// values however they were written (`0 - x`, `llvm.abs`, the xor/subtract
// and select idioms, an absolute difference, the expansion of 128-bit
// division, a 128-bit `abs` narrowed to 64 bits because the high half holds
// only sign bits), some of them after the last IR the device linker sees.
// So the device linker rewrites the instructions themselves: each becomes
// the exact equivalent PtxasHazards.def gives, which ptxas compiles with
// wrap-around (the sweep of tests/gpu/int_edges passes on the H200 with
// these forms, where it failed with the originals).
//
// The same goes for one more ptxas mistake that no IR rewrite can avoid: an
// i8 argument or result of a device function travels in a 32-bit `.param`
// slot, stored as 32 bits and read back with a byte load, and where ptxas
// inlines the call it forwards the stored value without the byte load's
// sign extension. Every load narrower than its scalar slot is rewritten to
// read the whole slot (as wide as the store that filled it) and convert
// from its low bits explicitly.
//
// The PTX is the NVPTX backend's: one instruction per line, `[@guard]
// opcode operands;`, except in inline assembly, which may put several on a
// line; every statement is looked at. A replacement keeps the guard on each
// of its instructions and declares its scratch register in a scope of its
// own, so it is valid wherever the original was.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <map>

using namespace llvm;

namespace {

struct Hazard {
  StringRef Mnemonic;
  StringRef ScratchType;
  StringRef Replacement;
};

const Hazard Hazards[] = {
#define OXIDE_PTXAS_HAZARD(MNEMONIC, REG, REPLACEMENT, WHY) {MNEMONIC, REG, REPLACEMENT},
#define OXIDE_PTXAS_NARROW_PARAM_LOAD(MNEMONIC, BITS, SIGNED, WHY)
#include "oxide/PtxasHazards.def"
#undef OXIDE_PTXAS_NARROW_PARAM_LOAD
#undef OXIDE_PTXAS_HAZARD
};

struct NarrowParamLoad {
  StringRef Mnemonic;
  unsigned Bits;
  bool Signed;
};

const NarrowParamLoad NarrowParamLoads[] = {
#define OXIDE_PTXAS_HAZARD(MNEMONIC, REG, REPLACEMENT, WHY)
#define OXIDE_PTXAS_NARROW_PARAM_LOAD(MNEMONIC, BITS, SIGNED, WHY) {MNEMONIC, BITS, SIGNED},
#include "oxide/PtxasHazards.def"
#undef OXIDE_PTXAS_NARROW_PARAM_LOAD
#undef OXIDE_PTXAS_HAZARD
};

/// The scalar `.param .b32`/`.b64` slots declared so far in a function,
/// with their widths.
using ParamSlots = std::map<std::string, unsigned>;

/// The width of a register the backend named (`%rs` 16, `%r` 32, `%rd` 64
/// bits), or 0.
unsigned registerWidth(StringRef Reg) {
  if (Reg.starts_with("%rs"))
    return 16;
  if (Reg.starts_with("%rd"))
    return 64;
  if (Reg.starts_with("%r"))
    return 32;
  return 0;
}

/// Fills `{p}`, `{d}` and `{a}` in; none when a key cannot be.
std::optional<std::string> substitute(StringRef Template, StringRef Guard, StringRef D, StringRef A) {
  std::string Out;
  while (!Template.empty()) {
    size_t Open = Template.find('{'), Close = Template.find('}', Open);
    if (Open == StringRef::npos || Close == StringRef::npos) {
      Out += Template.str();
      break;
    }
    StringRef Key = Template.slice(Open + 1, Close);
    Out += Template.take_front(Open).str();
    if (Key == "p")
      Out += Guard.str();
    else if (Key == "d")
      Out += D.str();
    else if (Key == "a")
      Out += A.str();
    else if (Key.empty() || Key.contains(' '))
      Out += Template.slice(Open, Close + 1).str(); // a scope brace, not a key
    else
      return std::nullopt;
    Template = Template.drop_front(Close + 1);
  }
  return Out;
}

/// `ld.param.<narrow> D, [slot]` → the whole slot, then the conversion
/// from its low bits; none unless `[slot]` is a whole scalar slot.
std::optional<std::string> rewriteNarrowLoad(const NarrowParamLoad &L, StringRef Guard, StringRef D,
                                             StringRef A, const ParamSlots &Slots) {
  StringRef Slot = A;
  if (!Slot.consume_front("[") || !Slot.consume_back("]"))
    return std::nullopt;
  auto It = Slots.find(Slot.trim().str());
  unsigned DestBits = registerWidth(D);
  if (It == Slots.end() || DestBits == 0)
    return std::nullopt;
  std::string SlotBits = std::to_string(It->second), Dest = std::to_string(DestBits);
  std::string P = Guard.empty() ? "" : (Guard + " ").str();
  std::string Convert;
  if (DestBits == L.Bits) // a 16-bit register: its 16 bits are the value, either sign
    Convert = "cvt.u" + Dest + ".u" + SlotBits;
  else
    Convert = std::string("cvt.") + (L.Signed ? "s" : "u") + Dest + "." + (L.Signed ? "s" : "u") +
              std::to_string(L.Bits);
  return "{ .reg .b" + SlotBits + " %oxide_t; " + P + "ld.param.b" + SlotBits + " %oxide_t, " + A.str() +
         "; " + P + Convert + " " + D.str() + ", %oxide_t; }";
}

/// The replacement for one statement (no `;`), or none when it is not a
/// hazard. `Slots` holds the scalar parameter slots declared so far in the
/// function.
std::optional<std::string> rewriteStatement(StringRef Statement, const ParamSlots &Slots) {
  StringRef S = Statement.trim();
  StringRef Guard;
  if (S.starts_with("@")) {
    size_t Space = S.find_first_of(" \t");
    if (Space == StringRef::npos)
      return std::nullopt;
    Guard = S.take_front(Space);
    S = S.drop_front(Space).ltrim();
  }
  size_t End = S.find_first_of(" \t");
  if (End == StringRef::npos)
    return std::nullopt;
  StringRef Opcode = S.take_front(End);
  for (const NarrowParamLoad &L : NarrowParamLoads) {
    if (Opcode != L.Mnemonic)
      continue;
    auto [D, A] = S.drop_front(End).split(',');
    return rewriteNarrowLoad(L, Guard, D.trim(), A.trim(), Slots);
  }
  for (const Hazard &H : Hazards) {
    if (Opcode != H.Mnemonic)
      continue;
    auto [D, A] = S.drop_front(End).split(',');
    D = D.trim();
    A = A.trim();
    if (D.empty() || A.empty() || A.contains(','))
      return std::nullopt; // not the two-operand form: leave it to ptxas to reject
    std::string Prefix = Guard.empty() ? "" : (Guard + " ").str();
    std::optional<std::string> Body = substitute(H.Replacement, Prefix, D, A);
    if (!Body)
      return std::nullopt;
    if (H.ScratchType.empty())
      return *Body;
    return "{ .reg " + H.ScratchType.str() + " %oxide_t; " + *Body + " }";
  }
  return std::nullopt;
}

/// Records the names a line declares as scalar `.param .b32 name` or
/// `.param .b64 name` (a function's parameter or result, a call's argument
/// or result slot; not an array `name[16]`).
void noteParamSlots(StringRef Line, ParamSlots &Slots) {
  for (unsigned Bits : {32u, 64u}) {
    std::string Decl = ".param .b" + std::to_string(Bits);
    size_t At = 0;
    while ((At = Line.find(Decl, At)) != StringRef::npos) {
      At += Decl.size();
      StringRef Rest = Line.drop_front(At).ltrim();
      StringRef Name = Rest.take_while([](char C) { return isalnum(C) || C == '_' || C == '$' || C == '%'; });
      if (!Name.empty() && !Rest.drop_front(Name.size()).ltrim().starts_with("["))
        Slots[Name.str()] = Bits;
    }
  }
}

} // namespace

std::string oxide::rewritePtxasHazards(StringRef Ptx) {
  std::string Out;
  Out.reserve(Ptx.size());
  ParamSlots Slots;
  while (!Ptx.empty()) {
    auto [Line, Rest] = Ptx.split('\n');
    bool HadNewline = Ptx.size() != Line.size();
    Ptx = Rest;
    if (Line.contains(".entry") || Line.contains(".func"))
      Slots.clear();
    // A kernel's own parameters are filled by the launch, not by a store.
    if (Line.contains(".param") && !Line.contains(".entry"))
      noteParamSlots(Line, Slots);
    // Cheap test first: almost no line names one of the table's mnemonics.
    bool Suspect = llvm::any_of(Hazards, [&](const Hazard &H) { return Line.contains(H.Mnemonic); }) ||
                   llvm::any_of(NarrowParamLoads, [&](const NarrowParamLoad &L) { return Line.contains(L.Mnemonic); });
    std::string New;
    if (Suspect && !Line.ltrim().starts_with("//")) {
      StringRef Code = Line.split("//").first;
      StringRef Comment = Line.drop_front(Code.size());
      SmallVector<StringRef> Statements;
      Code.split(Statements, ';');
      bool Changed = false;
      std::string Rebuilt;
      for (size_t I = 0; I < Statements.size(); ++I) {
        StringRef St = Statements[I];
        bool Last = I + 1 == Statements.size();
        // Keep a `{` or `}` of inline assembly in front of the statement.
        size_t Start = St.find_first_not_of(" \t{}");
        StringRef Lead = Start == StringRef::npos ? St : St.take_front(Start);
        std::optional<std::string> R =
            Start == StringRef::npos ? std::nullopt : rewriteStatement(St.drop_front(Start), Slots);
        if (R) {
          Changed = true;
          Rebuilt += Lead.str() + *R;
          // The replacement ends with `;` or `}`; the original's `;` is dropped.
        } else {
          Rebuilt += St.str();
          if (!Last)
            Rebuilt += ";";
        }
      }
      if (Changed)
        New = Rebuilt + Comment.str();
    }
    Out += New.empty() ? Line.str() : New;
    if (HadNewline)
      Out += '\n';
  }
  return Out;
}

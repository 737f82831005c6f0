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
// The PTX is the NVPTX backend's: one instruction per line, `[@guard]
// opcode operands;`, except in inline assembly, which may put several on a
// line; every statement is looked at. A replacement keeps the guard on each
// of its instructions and declares its scratch register in a scope of its
// own, so it is valid wherever the original was.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

using namespace llvm;

namespace {

struct Hazard {
  StringRef Mnemonic;
  StringRef ScratchType;
  StringRef Replacement;
};

const Hazard Hazards[] = {
#define OXIDE_PTXAS_HAZARD(MNEMONIC, REG, REPLACEMENT, WHY) {MNEMONIC, REG, REPLACEMENT},
#include "oxide/PtxasHazards.def"
#undef OXIDE_PTXAS_HAZARD
};

std::string substitute(StringRef Template, StringRef Guard, StringRef D, StringRef A) {
  std::string Out;
  while (!Template.empty()) {
    size_t Open = Template.find('{');
    if (Open == StringRef::npos || Open + 2 >= Template.size() || Template[Open + 2] != '}') {
      Out += Template.str();
      break;
    }
    Out += Template.take_front(Open).str();
    char Key = Template[Open + 1];
    Out += (Key == 'p' ? Guard : Key == 'd' ? D : Key == 'a' ? A : StringRef()).str();
    Template = Template.drop_front(Open + 3);
  }
  return Out;
}

/// The replacement for one statement (no `;`), or none when it is not a
/// hazard.
std::optional<std::string> rewriteStatement(StringRef Statement) {
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
  for (const Hazard &H : Hazards) {
    if (Opcode != H.Mnemonic)
      continue;
    auto [D, A] = S.drop_front(End).split(',');
    D = D.trim();
    A = A.trim();
    if (D.empty() || A.empty() || A.contains(','))
      return std::nullopt; // not the two-operand form: leave it to ptxas to reject
    std::string Prefix = Guard.empty() ? "" : (Guard + " ").str();
    std::string Body = substitute(H.Replacement, Prefix, D, A);
    if (H.ScratchType.empty())
      return Body;
    return "{ .reg " + H.ScratchType.str() + " %oxide_t; " + Body + " }";
  }
  return std::nullopt;
}

} // namespace

std::string oxide::rewritePtxasHazards(StringRef Ptx) {
  std::string Out;
  Out.reserve(Ptx.size());
  while (!Ptx.empty()) {
    auto [Line, Rest] = Ptx.split('\n');
    bool HadNewline = Ptx.size() != Line.size();
    Ptx = Rest;
    // Cheap test first: almost no line has one.
    bool Suspect = Line.contains("neg.s16") || Line.contains("abs.s");
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
            Start == StringRef::npos ? std::nullopt : rewriteStatement(St.drop_front(Start));
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

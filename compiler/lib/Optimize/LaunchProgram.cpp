//===- LaunchProgram.cpp - A launch condition the host evaluates ----------===//
//
// See LaunchProgram.h. The tokens are LaunchCondition.def's (docs/ABI.md §3);
// cuda-host's `condition` module, generated from the same table, reads them.
//===----------------------------------------------------------------------===//
#include "LaunchProgram.h"
#include "llvm/IR/Argument.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Operator.h"

using namespace llvm;
using namespace oxide;

namespace {

enum class Form { Plain, Width, Bits };

struct TokenInfo {
  StringRef Spelling;
  Form Takes;
};

const TokenInfo Tokens[] = {
#define OXIDE_CONDITION_TOKEN(NAME, SPELLING, FORM) {SPELLING, Form::FORM},
#include "oxide/LaunchCondition.def"
};

const TokenInfo &info(ConditionToken T) { return Tokens[static_cast<unsigned>(T)]; }

/// The grid and block sizes the host knows at launch, by token.
std::optional<ConditionToken> launchSizeToken(Intrinsic::ID ID) {
  switch (ID) {
  case Intrinsic::nvvm_read_ptx_sreg_ntid_x: return ConditionToken::BlockDimX;
  case Intrinsic::nvvm_read_ptx_sreg_ntid_y: return ConditionToken::BlockDimY;
  case Intrinsic::nvvm_read_ptx_sreg_ntid_z: return ConditionToken::BlockDimZ;
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_x: return ConditionToken::GridDimX;
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_y: return ConditionToken::GridDimY;
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_z: return ConditionToken::GridDimZ;
  default: return std::nullopt;
  }
}

/// The token of a binary operator (its width W goes with it where the
/// token takes one), or nothing.
std::optional<ConditionToken> binaryToken(const BinaryOperator &B) {
  switch (B.getOpcode()) {
  case Instruction::Add: return ConditionToken::Add;
  case Instruction::Sub: return ConditionToken::Sub;
  case Instruction::Mul: return ConditionToken::Mul;
  case Instruction::Shl: return ConditionToken::Shl;
  // `exact` promises no bits shifted out; the host gives up otherwise.
  case Instruction::LShr: return B.isExact() ? ConditionToken::LshrExact : ConditionToken::Lshr;
  case Instruction::And: return ConditionToken::And;
  case Instruction::Xor: return ConditionToken::Xor;
  case Instruction::Or:
    return cast<PossiblyDisjointInst>(B).isDisjoint() ? ConditionToken::OrDisjoint : ConditionToken::Or;
  default: return std::nullopt;
  }
}

} // namespace

void LaunchProgramWriter::token(const Twine &T) {
  if (!Program.empty())
    Program += ' ';
  Program += T.str();
}

void LaunchProgramWriter::token(ConditionToken T) {
  assert(info(T).Takes == Form::Plain && "this token is written with a width");
  token(info(T).Spelling);
}

void LaunchProgramWriter::token(ConditionToken T, unsigned Width) {
  assert(info(T).Takes != Form::Plain && "this token is written without a width");
  token(info(T).Spelling + Twine(Width));
}

void LaunchProgramWriter::op(ConditionToken Token) { token(Token); }

bool LaunchProgramWriter::value(Value *V) { return value(V, 0); }

bool LaunchProgramWriter::value(Value *V, unsigned Depth) {
  auto *Ty = dyn_cast<IntegerType>(V->getType());
  if (!Ty || Ty->getBitWidth() > 64 || Depth > 16)
    return false;
  unsigned W = Ty->getBitWidth();
  if (auto *C = dyn_cast<ConstantInt>(V)) {
    token(Twine(C->getZExtValue()));
    return true;
  }
  if (auto *Arg = dyn_cast<Argument>(V)) {
    // A scalar parameter: its bytes are the value.
    if (W % 8 != 0)
      return false;
    token("p" + Twine(Arg->getArgNo()) + "@0:" + Twine(W / 8));
    return true;
  }
  if (auto *Load = dyn_cast<LoadInst>(V)) {
    // Bytes of a byval parameter the kernel only reads, at a constant offset.
    if (!Load->isSimple() || W % 8 != 0)
      return false;
    const DataLayout &DL = Load->getModule()->getDataLayout();
    APInt Offset(DL.getIndexTypeSizeInBits(Load->getPointerOperandType()), 0);
    auto *Arg = dyn_cast<Argument>(
        Load->getPointerOperand()->stripAndAccumulateConstantOffsets(DL, Offset, /*AllowNonInbounds=*/true));
    if (!Arg || !Arg->hasByValAttr() || !Arg->onlyReadsMemory() || Offset.isNegative())
      return false;
    uint64_t Size = DL.getTypeAllocSize(Arg->getParamByValType());
    if (Offset.getZExtValue() + W / 8 > Size)
      return false;
    token("p" + Twine(Arg->getArgNo()) + "@" + Twine(Offset.getZExtValue()) + ":" + Twine(W / 8));
    return true;
  }
  if (auto *II = dyn_cast<IntrinsicInst>(V)) {
    if (std::optional<ConditionToken> Size = launchSizeToken(II->getIntrinsicID())) {
      token(*Size);
      return true;
    }
    ConditionToken Op;
    switch (II->getIntrinsicID()) {
    case Intrinsic::umin: Op = ConditionToken::Umin; break;
    case Intrinsic::umax: Op = ConditionToken::Umax; break;
    default: return false;
    }
    if (!value(II->getArgOperand(0), Depth + 1) || !value(II->getArgOperand(1), Depth + 1))
      return false;
    token(Op);
    return true;
  }
  if (auto *B = dyn_cast<BinaryOperator>(V)) {
    std::optional<ConditionToken> Op = binaryToken(*B);
    if (!Op || !value(B->getOperand(0), Depth + 1) || !value(B->getOperand(1), Depth + 1))
      return false;
    if (info(*Op).Takes == Form::Width)
      token(*Op, W);
    else
      token(*Op);
    return true;
  }
  if (auto *Cast = dyn_cast<CastInst>(V)) {
    auto *SrcTy = dyn_cast<IntegerType>(Cast->getSrcTy());
    if (!SrcTy || !value(Cast->getOperand(0), Depth + 1))
      return false;
    unsigned SrcW = SrcTy->getBitWidth();
    switch (Cast->getOpcode()) {
    case Instruction::ZExt:
      return true; // the host's values are already zero-extended
    case Instruction::SExt:
      // Equal to zext for values whose sign bit is clear; else give up.
      token(ConditionToken::Fits, SrcW - 1);
      return true;
    case Instruction::Trunc: {
      auto *T = cast<TruncInst>(Cast);
      if (T->hasNoSignedWrap())
        token(ConditionToken::Fits, W - 1);
      else if (T->hasNoUnsignedWrap())
        token(ConditionToken::Fits, W);
      else
        token(ConditionToken::Trunc, W);
      return true;
    }
    default:
      return false;
    }
  }
  if (auto *Freeze = dyn_cast<FreezeInst>(V))
    return value(Freeze->getOperand(0), Depth + 1); // the host gives up on poison anyway
  return false;
}

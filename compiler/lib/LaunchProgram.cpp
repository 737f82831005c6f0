//===- LaunchProgram.cpp - A launch condition the host evaluates ----------===//
//
// See LaunchProgram.h. The token set is docs/ABI.md §3's; cuda-host's
// `precondition` module is the other half and must agree token for token.
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

/// The grid and block sizes the host knows at launch, by token.
std::optional<StringRef> launchSizeToken(Intrinsic::ID ID) {
  switch (ID) {
  case Intrinsic::nvvm_read_ptx_sreg_ntid_x: return StringRef("ntid.x");
  case Intrinsic::nvvm_read_ptx_sreg_ntid_y: return StringRef("ntid.y");
  case Intrinsic::nvvm_read_ptx_sreg_ntid_z: return StringRef("ntid.z");
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_x: return StringRef("nctaid.x");
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_y: return StringRef("nctaid.y");
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_z: return StringRef("nctaid.z");
  default: return std::nullopt;
  }
}

/// The token of a binary operator of width W, or nothing.
std::optional<std::string> binaryToken(const BinaryOperator &B, unsigned W) {
  std::string Width = std::to_string(W);
  switch (B.getOpcode()) {
  case Instruction::Add: return "add" + Width;
  case Instruction::Sub: return "sub" + Width;
  case Instruction::Mul: return "mul" + Width;
  case Instruction::Shl: return "shl" + Width;
  // `exact` promises no bits shifted out; the host gives up otherwise.
  case Instruction::LShr: return (B.isExact() ? "lshr.exact" : "lshr") + Width;
  case Instruction::And: return std::string("and");
  case Instruction::Xor: return std::string("xor");
  case Instruction::Or:
    return std::string(cast<PossiblyDisjointInst>(B).isDisjoint() ? "or.disjoint" : "or");
  default: return std::nullopt;
  }
}

} // namespace

void LaunchProgramWriter::token(const Twine &T) {
  if (!Program.empty())
    Program += ' ';
  Program += T.str();
}

void LaunchProgramWriter::op(StringRef Token) { token(Token); }

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
    if (std::optional<StringRef> Size = launchSizeToken(II->getIntrinsicID())) {
      token(*Size);
      return true;
    }
    StringRef Op;
    switch (II->getIntrinsicID()) {
    case Intrinsic::umin: Op = "umin"; break;
    case Intrinsic::umax: Op = "umax"; break;
    default: return false;
    }
    if (!value(II->getArgOperand(0), Depth + 1) || !value(II->getArgOperand(1), Depth + 1))
      return false;
    token(Op);
    return true;
  }
  if (auto *B = dyn_cast<BinaryOperator>(V)) {
    std::optional<std::string> Op = binaryToken(*B, W);
    if (!Op || !value(B->getOperand(0), Depth + 1) || !value(B->getOperand(1), Depth + 1))
      return false;
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
      token("fits" + Twine(SrcW - 1));
      return true;
    case Instruction::Trunc: {
      auto *T = cast<TruncInst>(Cast);
      if (T->hasNoSignedWrap())
        token("fits" + Twine(W - 1));
      else if (T->hasNoUnsignedWrap())
        token("fits" + Twine(W));
      else
        token("trunc" + Twine(W));
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

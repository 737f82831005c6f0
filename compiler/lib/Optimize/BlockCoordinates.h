//===- BlockCoordinates.h - Special registers one value for a whole block -*- C++ -*-===//
//
// The NVVM special registers that every thread of a block reads alike
// (%ctaid, %nctaid, %ntid): a source of uniformity for AlignBarriers'
// analysis and ThreadUniformBranches' test, which keep one list here.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_OPTIMIZE_BLOCKCOORDINATES_H
#define OXIDE_OPTIMIZE_BLOCKCOORDINATES_H

#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

namespace oxide {

/// Whether intrinsic Id reads a coordinate or size shared by the whole
/// block: the block's index, the grid's and the block's dimensions.
inline bool isBlockWideCoordinate(llvm::Intrinsic::ID Id) {
  switch (Id) {
  case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x:
  case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y:
  case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z:
  case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x:
  case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y:
  case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z:
  case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x:
  case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_y:
  case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_z:
    return true;
  default:
    return false;
  }
}

} // namespace oxide

#endif

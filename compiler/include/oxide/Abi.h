//===- Abi.h - The names and numbers of oxide's ABI -------------*- C++ -*-===//
//
// What the device linker and the Rust crates must agree on (docs/ABI.md):
// one constant per row of Abi.def, the table the crates' build scripts read
// too (reserved symbols, sections, metadata and attributes; the numbers of
// the image records), and the target every device module gets.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_ABI_H
#define OXIDE_ABI_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include <cstdint>
#include <string>

namespace oxide {

namespace abi_types {
using u32 = uint32_t;
using u64 = uint64_t;
} // namespace abi_types

#define OXIDE_RESERVED_NAME(NAME, SPELLING, DOC) inline constexpr llvm::StringLiteral NAME = SPELLING;
#define OXIDE_ABI_VALUE(NAME, TYPE, VALUE, DOC) inline constexpr abi_types::TYPE NAME = VALUE;
#include "oxide/Abi.def"

/// The symbol of the intrinsic stub NAME (`__oxide_stub_<NAME>`).
inline std::string stubSymbol(const llvm::Twine &Name) { return (llvm::Twine(StubPrefix) + Name).str(); }

/// Whether Symbol is the intrinsic stub NAME.
inline bool isStubSymbol(llvm::StringRef Symbol, llvm::StringRef Name) {
  return Symbol.consume_front(StubPrefix) && Symbol == Name;
}

/// Whether N is a device function the CUDA driver resolves when it loads a
/// module (DriverFunctions.def): PTX may call it without defining it.
inline bool isDriverFunction(llvm::StringRef N) {
#define OXIDE_DRIVER_FUNCTION(NAME)                                                                \
  if (N == #NAME)                                                                                  \
    return true;
#include "oxide/DriverFunctions.def"
#undef OXIDE_DRIVER_FUNCTION
  return false;
}

/// The NVPTX target triple and data layout every device module gets.
inline constexpr llvm::StringLiteral DeviceTriple = "nvptx64-nvidia-cuda";
inline constexpr llvm::StringLiteral DeviceDataLayout =
    "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64";

} // namespace oxide

#endif

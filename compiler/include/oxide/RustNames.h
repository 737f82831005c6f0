//===- RustNames.h - Reading rustc's symbol names ---------------*- C++ -*-===//
//
// rustc mangles user crates with the legacy scheme (`_ZN…17h<hash>E`) and the
// standard library with v0 (`_R…`). The device linker recognises functions by
// their Rust paths (panic entry points, kernel entries), so it demangles both
// and drops the legacy hash suffix.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_RUSTNAMES_H
#define OXIDE_RUSTNAMES_H

#include "llvm/ADT/StringRef.h"
#include <string>

namespace oxide {

/// The Rust path of a symbol (`core::panicking::panic_bounds_check`), or the
/// symbol itself when it is not a Rust name.
std::string demangleRust(llvm::StringRef Symbol);

/// A PTX-legal identifier for a symbol: characters outside [A-Za-z0-9_$] become
/// `_`, and a leading digit gets a `_` prefix.
std::string ptxIdentifier(llvm::StringRef Symbol);

/// The Rust path of the kernel whose entry wrapper has this symbol:
/// `my_crate::scale::<f32>` for `my_crate::__oxide_kernel_entry_scale::<f32>`.
std::string kernelPathOf(llvm::StringRef WrapperSymbol);

} // namespace oxide

#endif

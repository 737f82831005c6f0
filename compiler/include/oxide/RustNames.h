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
#include <optional>
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

/// A method of one of core's formatting traits, as its Rust path names it.
struct FormattingMethod {
  std::string Trait; ///< `Display`, `Debug`, `LowerHex`, …
  std::string Type;  ///< the implementing type: `u32`, `&T`, `&u32`, `my::Point`
};

/// `fmt` of a `core::fmt` trait: `<u32 as core::fmt::Display>::fmt`, or the
/// impl-path form legacy names give local copies
/// (`core::fmt::num::<impl core::fmt::Debug for u8>::fmt`).
std::optional<FormattingMethod> formattingMethod(llvm::StringRef Path);

/// Whether a function's Rust path is `core::fmt::write`, the one function of
/// core that calls the formatting methods an `Arguments` holds (format!,
/// write!, and the host's panic handler all go through it).
bool isFormatWrite(llvm::StringRef Path);

} // namespace oxide

#endif

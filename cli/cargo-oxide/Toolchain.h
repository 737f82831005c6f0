//===- Toolchain.h - rustc, LLVM and CUDA toolkit facts ---------*- C++ -*-===//
//
// Part of oxide. Parsing of what the tools say about themselves (`rustc -vV`,
// `ptxas --version`) and the compatibility rule between rustc and oxide:
// oxide reads the bitcode rustc writes, and LLVM bitcode reads forward but not
// backward, so rustc's LLVM major version must not be newer than oxide's.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_TOOLCHAIN_H
#define OXIDE_CLI_TOOLCHAIN_H

#include "Diagnostic.h"
#include "Process.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace oxide::cli {

namespace fs = std::filesystem;

/// The LLVM major version oxide-link was built with (CMake's
/// OXIDE_LLVM_MAJOR).
int oxideLlvmMajor();

/// What `rustc -vV` reports.
struct RustcInfo {
  std::string
      VersionLine;     ///< first line, "rustc 1.95.0 (59807616e 2026-04-14)"
  std::string Release; ///< "1.95.0", "1.97.0-nightly"
  std::string Host;    ///< "x86_64-unknown-linux-gnu"
  std::string LlvmVersion; ///< "22.1.2"; empty if rustc did not say
  int LlvmMajor = 0;       ///< 22; 0 if unknown
};

/// Parses the output of `rustc -vV`. Fails if it does not look like rustc.
Expected<RustcInfo> parseRustcVersion(std::string_view Text);

/// The rule: rustc's LLVM major <= oxide's. (An unknown rustc LLVM, 0, fails.)
bool isRustcLlvmSupported(int RustcLlvmMajor, int OxideLlvmMajor);

/// One line explaining the pairing, for doctor and error messages.
std::string describeLlvmPairing(int RustcLlvmMajor, int OxideLlvmMajor);

/// The last non-empty line of a tool's output (`ptxas --version` ends with
/// the build line, e.g. "Build cuda_13.0.r13.0/compiler.36424714_0").
std::string lastNonEmptyLine(std::string_view Text);

/// The CUDA toolkit root: $OXIDE_CUDA_PATH, else /usr/local/cuda.
fs::path cudaToolkitRoot(const Environment &Env);

/// A CUDA tool (ptxas, nvdisasm, cuobjdump): <toolkit>/bin/<name>, else PATH.
std::optional<fs::path> findCudaTool(std::string_view Name,
                                     const Environment &Env);

/// <toolkit>/nvvm/libdevice/libdevice.10.bc.
fs::path libdevicePath(const Environment &Env);

/// The oxide source tree (whose crates/ `cargo oxide new` depends on):
/// $OXIDE_ROOT, else the tree cargo-oxide was built from (OXIDE_SOURCE_DIR).
fs::path oxideSourceRoot(const Environment &Env);

/// The rustc cargo would use: $RUSTC, else `rustc` (rustup's proxy, which
/// honours RUSTUP_TOOLCHAIN).
std::string rustcProgram(const Environment &Env);

/// Renders a CUDA driver version number: 13000 -> "13.0", 12040 -> "12.4".
std::string formatCudaVersion(int Version);

/// The host's target triple, from `rustc -vV` (the rustc cargo will use);
/// nullopt when rustc cannot tell.
std::optional<std::string> hostTriple(const Environment &Env);

} // namespace oxide::cli

#endif // OXIDE_CLI_TOOLCHAIN_H

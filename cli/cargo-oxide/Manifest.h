//===- Manifest.h - the parts of Cargo.toml cargo-oxide reads ---*- C++ -*-===//
//
// Part of oxide. cargo-oxide must know a few facts about a package before it
// runs cargo: is this Cargo.toml a workspace root, what is the package called
// (examples/<dir>/ may hold a package with another name), and which binary is
// the default one (`cargo rustc` needs exactly one target).
//
// This is not a TOML parser. It reads table headers, keys and string values
// well enough for those facts, and skips every other value (arrays, inline
// tables, multi-line strings) without being confused by brackets or '#'
// inside them. Asking `cargo metadata` would be exact but costs a cargo run
// and JSON parsing for a few strings.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_MANIFEST_H
#define OXIDE_CLI_MANIFEST_H

#include "Diagnostic.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxide::cli {

struct Manifest {
  /// The file has a `[workspace]` table (or any `workspace.*` key): it is the
  /// root of a workspace.
  bool HasWorkspace = false;
  /// The file has a `[package]` table: it describes a package.
  bool HasPackage = false;
  /// `package.name`; empty when absent.
  std::string PackageName;
  /// `package.default-run`.
  std::optional<std::string> DefaultRun;
  /// `package.autobins`; false stops cargo finding src/main.rs by itself.
  bool AutoBins = true;
  /// The names of the `[[bin]]` tables, in order (unnamed ones skipped).
  std::vector<std::string> BinNames;
  /// The file has a `[lib]` table.
  bool HasLibTable = false;
  /// `package.metadata.oxide.arch`: the GPU architecture the package needs
  /// (`[package.metadata.oxide] arch = "sm_90a"` for wgmma), unvalidated
  /// (resolveArch() checks it against Targets.def).
  std::optional<std::string> OxideArch;
  /// `package.metadata.oxide.emulate`: whether the program can run on the
  /// CPU emulator: `"no: WHY"` when it cannot (refuseEmulation()),
  /// `"host: WHY"` when only as host code (packageEmulation()).
  std::optional<std::string> OxideEmulate;
  /// `workspace.members` and `workspace.exclude`: paths relative to the
  /// manifest's directory, possibly with glob characters (`examples/*`).
  std::vector<std::string> WorkspaceMembers;
  std::vector<std::string> WorkspaceExclude;
};

/// Reads the facts above from the text of a Cargo.toml. Fails only on text
/// that is broken beyond skipping (an unterminated string or table header).
Expected<Manifest> parseManifest(std::string_view Text);

/// parseManifest() of a file; the error names the file.
Expected<Manifest> readManifest(const std::filesystem::path &Path);

/// The Rust crate name cargo derives from a package or binary name: '-'
/// becomes '_'. rustc names its output files (and oxide its kernel module)
/// after it.
std::string crateNameOf(std::string_view PackageName);

} // namespace oxide::cli

#endif // OXIDE_CLI_MANIFEST_H

//===- New.h - the files `cargo oxide new` writes ---------------*- C++ -*-===//
//
// Part of oxide. The pure half of `cargo oxide new`: checking the name and
// rendering Cargo.toml and src/main.rs. New.cpp writes them to disk.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_NEW_H
#define OXIDE_CLI_NEW_H

#include "Diagnostic.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace oxide::cli {

/// Fails unless cargo would accept \p Name as a package name (letters, digits,
/// '-' and '_', not starting with a digit, not a Rust keyword or a name that
/// clashes with the standard crates).
std::optional<Error> checkPackageName(std::string_view Name);

/// A TOML string holding \p Text (a literal string when possible, so paths
/// need no escaping).
std::string tomlString(std::string_view Text);

/// The registry a new project takes oxide's crates from: the local registry
/// scripts/install-crates.sh installs in cargo's home under this name.
inline constexpr std::string_view OxideRegistry = "oxide";

/// The version requirement a new project puts on oxide's crates: the
/// workspace version of Cargo.toml ([workspace.package]) as cargo would
/// write it (`cargo add`: major.minor), which CMake reads from there.
#ifndef OXIDE_CRATES_REQUIREMENT
#error "OXIDE_CRATES_REQUIREMENT is set by cli/cargo-oxide/CMakeLists.txt"
#endif
inline constexpr std::string_view OxideCratesVersion = OXIDE_CRATES_REQUIREMENT;

/// Cargo.toml of a new project: cuda-device, cuda-host and cuda-core (with
/// \p Async, cuda-async too) by version from the registry `oxide`, and the
/// emulator's optimisation in debug builds. No paths.
std::string renderCargoToml(std::string_view Name, bool Async = false);

/// .cargo/config.toml of a new project: oxide-link (by name, found on PATH)
/// as the host linker, `-C save-temps` and no incremental builds, so that
/// plain `cargo build` / `cargo run` compile the kernels like
/// `cargo oxide build` (with OXIDE_ARCH from the environment, else
/// Targets.def's default).
std::string renderCargoConfig();

/// src/main.rs of a new project: a vecadd kernel and the host code that runs
/// and checks it (with \p Async, as cuda-async operations, awaited). \p Name
/// is the package name; the kernel module is named after its crate name.
std::string renderMainRs(std::string_view Name, bool Async = false);

} // namespace oxide::cli

#endif // OXIDE_CLI_NEW_H

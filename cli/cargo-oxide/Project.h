//===- Project.h - workspaces, examples and packages ------------*- C++ -*-===//
//
// Part of oxide. Answers "which package does this command act on, and where
// does its output go?":
//
//  * the workspace root: the nearest directory, walking up from the current
//    one, whose Cargo.toml has a [workspace] table; failing that the nearest
//    package (a standalone package is its own root, as for cargo);
//  * the examples: every <root>/examples/<dir>/Cargo.toml;
//  * the members: the workspace's `members` globs, less `exclude`;
//  * the package: `NAME` is an example directory, or a member's directory
//    or package name (tests/gpu/<NAME> works too); no NAME means the package
//    the current directory is in;
//  * the per-package folder oxide writes into, under cargo's target
//    directory (which `cargo metadata` reports: Metadata.h).
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_PROJECT_H
#define OXIDE_CLI_PROJECT_H

#include "Diagnostic.h"
#include "Manifest.h"
#include "Process.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace oxide::cli {

namespace fs = std::filesystem;

/// One package: where it is and what its Cargo.toml says.
struct Package {
  fs::path Dir;
  fs::path ManifestPath;
  Manifest Info;

  const std::string &name() const { return Info.PackageName; }

  /// The binaries cargo would build, in cargo's discovery order: [[bin]]
  /// tables, src/main.rs (named after the package), src/bin/*.rs and
  /// src/bin/*/main.rs.
  std::vector<std::string> binaries() const;

  /// The binary `cargo run` runs: default-run, or the only binary. Fails with
  /// a hint when there is none or there are several.
  Expected<std::string> defaultBinary() const;
};

/// Where cargo-oxide is working.
struct Workspace {
  fs::path Root;
  fs::path ManifestPath;
  Manifest Info;

  /// True when the root Cargo.toml has no [package] (a virtual manifest).
  bool isVirtual() const { return !Info.HasPackage; }
};

/// Finds the workspace containing \p Start (see the file comment).
Expected<Workspace> findWorkspace(const fs::path &Start);

/// Every package under <root>/examples/, sorted by directory name. Directories
/// without a readable Cargo.toml are skipped.
std::vector<Package> listExamples(const fs::path &Root);

/// Every package of the workspace: the root package, if any, and the
/// members (their globs expanded, `exclude` removed), sorted by directory.
/// Globs support `*` and `?` within one path component, which covers the
/// `dir/*` form workspaces use.
std::vector<Package> listMembers(const Workspace &WS);

/// Whether \p Name matches the one-component glob \p Pattern (`*`, `?`).
bool globMatch(std::string_view Pattern, std::string_view Name);

/// Reads the package whose Cargo.toml is in \p Dir.
Expected<Package> loadPackage(const fs::path &Dir);

/// The package a command acts on. With \p Name, the first of: the example in
/// examples/<Name>/; an example called Name; the member in a directory called
/// Name; a member, the root or the current package called Name ('-' and '_'
/// compare equal, as in cargo). Without: the package containing \p Cwd, not
/// looking above the workspace root.
Expected<Package> resolvePackage(const Workspace &WS, const fs::path &Cwd,
                                 const std::optional<std::string> &Name);

/// "available examples: a, b, c; other packages: x, y" (or a sentence saying
/// there are no examples), for error hints. Only packages with a binary are
/// named: they are the ones `run` can act on.
std::string describeExamples(const Workspace &WS);

/// "release" or "debug": the folder under the target directory cargo uses.
std::string profileDirName(bool Release);

/// <target>/oxide/<package>/ - where inspect and pipeline put their output.
fs::path oxideOutputDir(const fs::path &TargetDir, const std::string &Package);

} // namespace oxide::cli

#endif // OXIDE_CLI_PROJECT_H

//===- Metadata.h - the project as `cargo metadata` describes it -*- C++ -*-===//
//
// Part of oxide. cargo-oxide asks cargo what a project is rather than reading
// Cargo.toml itself: `cargo metadata --format-version 1 --no-deps` resolves
// what only cargo can, .cargo/config.toml's build.target-dir,
// CARGO_TARGET_DIR, workspace inheritance, targets cargo finds by itself, and
// gives each package's `[package.metadata.oxide]` table as written.
// `--no-deps` keeps the query quick and offline: no dependency is resolved.
//
// The JSON reader here knows exactly the JSON that cargo and rustc print;
// it is not a general library.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_METADATA_H
#define OXIDE_CLI_METADATA_H

#include "Diagnostic.h"
#include "Process.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oxide::cli {

namespace fs = std::filesystem;

/// One JSON value.
struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind Type = Kind::Null;
  bool Bool = false;
  double Number = 0;
  std::string Text;
  std::vector<JsonValue> Items;
  /// An object's members, in order, each with its name in Key.
  std::vector<JsonValue> Members;
  std::string Key;

  /// The member called \p Key of an object; null for anything else.
  const JsonValue *get(std::string_view Key) const;
  /// The text of a string; nullopt for anything else.
  std::optional<std::string> string() const;
};

/// Parses one JSON document; the error says where it went wrong.
Expected<JsonValue> parseJson(std::string_view Text);

/// \p Value written back as compact JSON.
std::string toJson(const JsonValue &Value);

/// \p Text as a JSON string literal, quotes included.
std::string jsonQuote(std::string_view Text);

/// What cargo-oxide needs of one package.
struct PackageMetadata {
  std::string Name;
  fs::path ManifestPath;
  /// `[package.metadata.oxide] arch` and `emulate`, as written.
  std::optional<std::string> OxideArch;
  std::optional<std::string> OxideEmulate;
  std::optional<std::string> DefaultRun;
  /// The names of the package's `bin` targets, as cargo found them.
  std::vector<std::string> Binaries;
};

/// What cargo-oxide needs of the project.
struct ProjectMetadata {
  fs::path WorkspaceRoot;
  /// cargo's target directory, with every setting cargo honours applied.
  fs::path TargetDirectory;
  /// The workspace's packages (members only: `--no-deps`).
  std::vector<PackageMetadata> Packages;

  /// The package whose Cargo.toml is \p ManifestPath, if it is one of them.
  const PackageMetadata *package(const fs::path &ManifestPath) const;
};

/// Reads the output of `cargo metadata --format-version 1`.
Expected<ProjectMetadata> parseCargoMetadata(std::string_view Json);

/// The cargo command line of the query, for the workspace of \p ManifestPath.
std::vector<std::string> cargoMetadataArgs(const fs::path &ManifestPath);

/// Runs `cargo metadata` (cargoProgram()) in \p Cwd with \p Env; the error
/// carries what cargo said.
Expected<ProjectMetadata> readCargoMetadata(const Environment &Env,
                                            const fs::path &Cwd,
                                            const fs::path &ManifestPath);

} // namespace oxide::cli

#endif // OXIDE_CLI_METADATA_H

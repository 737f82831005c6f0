//===- TestSupport.h - helpers for the cargo-oxide unit tests ---*- C++ -*-===//
//
// Part of oxide. Temporary directories and small file helpers, so each test
// builds the project layout it needs and leaves nothing behind.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_TESTS_TESTSUPPORT_H
#define OXIDE_CLI_TESTS_TESTSUPPORT_H

#include <filesystem>
#include <string>
#include <string_view>

namespace oxide::cli::test {

namespace fs = std::filesystem;

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it
/// when the object goes away. The path is canonical (no symlinks), so tests
/// can compare it with what the code under test computes.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const fs::path &path() const { return Path; }
  fs::path operator/(const fs::path &Rel) const { return Path / Rel; }

private:
  fs::path Path;
};

/// Writes \p Content to \p Path, creating the parent directories.
void writeFile(const fs::path &Path, std::string_view Content);

/// writeFile() and chmod 0755.
void writeExecutable(const fs::path &Path, std::string_view Content);

/// The whole file, or "" if it cannot be read.
std::string readFile(const fs::path &Path);

/// Whether \p Haystack contains \p Needle (for EXPECT_TRUE with a message).
bool contains(std::string_view Haystack, std::string_view Needle);

/// The arguments cargo-oxide adds after every cargo subcommand
/// (emulatorProfileArgs), as the fake cargos log them: ` [--config] [...]`.
extern const std::string EmulatorProfile;

/// \p Script (a fake cargo, `#!/bin/sh` first) answering `cargo metadata
/// --format-version 1 --no-deps --manifest-path M` as cargo would for the
/// test workspaces, unlogged: the package of M and those of
/// <dir of M>/examples/*/, with their name, `[[bin]]`/src/main.rs binary,
/// `arch =` and `emulate =` lines as [package.metadata.oxide]; the target
/// directory is $CARGO_TARGET_DIR, else $FAKE_TARGET, else <dir of M>/target.
std::string withFakeCargoMetadata(std::string_view Script);

} // namespace oxide::cli::test

#endif // OXIDE_CLI_TESTS_TESTSUPPORT_H

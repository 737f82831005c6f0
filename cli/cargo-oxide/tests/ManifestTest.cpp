//===- ManifestTest.cpp - reading Cargo.toml ------------------------------===//
//
// Part of oxide. Tests the small Cargo.toml reader: the facts it extracts, and
// that strings, comments and arrays cannot fool it into seeing a table.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace oxide::cli;
using oxide::cli::test::contains;

namespace {

Manifest parseOk(std::string_view Text) {
  Expected<Manifest> M = parseManifest(Text);
  EXPECT_TRUE(static_cast<bool>(M)) << M.error().Message;
  return M ? *M : Manifest{};
}

TEST(ManifestTest, Package) {
  Manifest M = parseOk(R"toml(
[package]
name = "vecadd"
version.workspace = true
edition = "2021"

[dependencies]
cuda-device = { path = "../../crates/cuda-device" }
)toml");
  EXPECT_TRUE(M.HasPackage);
  EXPECT_FALSE(M.HasWorkspace);
  EXPECT_EQ(M.PackageName, "vecadd");
  EXPECT_FALSE(M.DefaultRun);
  EXPECT_TRUE(M.BinNames.empty());
  EXPECT_TRUE(M.AutoBins);
}

TEST(ManifestTest, OxideWorkspaceRoot) {
  // The root Cargo.toml of oxide itself.
  Manifest M = parseOk(R"toml([workspace]
resolver = "2"
members = [
    "crates/cuda-device",
    "crates/cuda-macros",
    "examples/*",
]

[workspace.package]
version = "0.1.0"
edition = "2021"

[profile.dev]
# Kernels are compiled from the unoptimised bitcode by the device linker, which
# runs its own O3; the host side of an example stays a debug build.
panic = "unwind"
)toml");
  EXPECT_TRUE(M.HasWorkspace);
  EXPECT_FALSE(M.HasPackage);
  EXPECT_TRUE(M.PackageName.empty());
}

TEST(ManifestTest, WorkspaceMembersAndExclude) {
  Manifest M = parseOk(R"toml([workspace]
members = [
    "crates/cuda-device",   # the device library
    'examples/*',
    # "commented/out",
    "tests/gpu/*",
]
exclude = ["examples/broken"]
)toml");
  EXPECT_EQ(M.WorkspaceMembers,
            (std::vector<std::string>{"crates/cuda-device", "examples/*",
                                      "tests/gpu/*"}));
  EXPECT_EQ(M.WorkspaceExclude, (std::vector<std::string>{"examples/broken"}));

  EXPECT_TRUE(parseOk("[workspace]\nmembers = []\n").WorkspaceMembers.empty());
  EXPECT_EQ(parseOk("workspace.members = [\"a\"]\n").WorkspaceMembers,
            (std::vector<std::string>{"a"}));
  Expected<Manifest> Bad = parseManifest("[workspace]\nmembers = [1]\n");
  ASSERT_FALSE(static_cast<bool>(Bad));
  EXPECT_TRUE(contains(Bad.error().Message, "expected a string"));
  // Only the workspace's lists are read; other arrays are skipped.
  EXPECT_TRUE(
      parseOk("[package]\nmembers = [1, 2]\n").WorkspaceMembers.empty());
}

TEST(ManifestTest, WorkspaceSubtableOrDottedKeyMakesARoot) {
  EXPECT_TRUE(parseOk("[workspace.package]\nversion = \"1\"\n").HasWorkspace);
  EXPECT_TRUE(parseOk("workspace.members = [\"a\"]\n").HasWorkspace);
  EXPECT_FALSE(parseOk("[workspaces]\n").HasWorkspace);
}

TEST(ManifestTest, PackageAndWorkspaceTogether) {
  Manifest M = parseOk("[package]\nname = \"app\"\n[workspace]\n");
  EXPECT_TRUE(M.HasPackage);
  EXPECT_TRUE(M.HasWorkspace);
  EXPECT_EQ(M.PackageName, "app");
}

TEST(ManifestTest, StringsAndCommentsDoNotOpenTables) {
  Manifest M = parseOk(R"toml(
[package]
name = "tricky" # the name; [workspace] in a comment
description = "has [workspace] and # inside"
readme = '''
[workspace]
'''
long = """
[workspace]
name = "not-this"
"""
keywords = [
  "[workspace]",   # a comment in an array ]
  'x]',
]
[package.metadata.oxide]
nested = { a = [1, [2, 3]], b = "}" }
)toml");
  EXPECT_FALSE(M.HasWorkspace);
  EXPECT_EQ(M.PackageName, "tricky");
}

TEST(ManifestTest, QuotedAndDottedKeys) {
  EXPECT_EQ(parseOk("[package]\n\"name\" = 'lit\\eral'\n").PackageName,
            "lit\\eral");
  EXPECT_EQ(parseOk("package.name = \"dotted\"\n").PackageName, "dotted");
  EXPECT_EQ(parseOk("[ package ]\nname=\"spaced\"\n").PackageName, "spaced");
  EXPECT_EQ(parseOk("[package]\nname = \"esc\\\"aped\"\n").PackageName,
            "esc\"aped");
}

TEST(ManifestTest, NamesInOtherTablesAreNotThePackageName) {
  Manifest M = parseOk(R"toml(
[dependencies.foo]
name = "wrong"
[package]
version = "1"
[lib]
name = "alsowrong"
)toml");
  EXPECT_TRUE(M.HasPackage);
  EXPECT_TRUE(M.PackageName.empty());
  EXPECT_TRUE(M.HasLibTable);
}

TEST(ManifestTest, OxideArch) {
  EXPECT_FALSE(parseOk("[package]\nname = \"p\"\n").OxideArch);
  EXPECT_EQ(parseOk("[package]\nname = \"p\"\n\n[package.metadata.oxide]\n"
                    "arch = \"sm_90a\" # wgmma\n")
                .OxideArch,
            "sm_90a");
  EXPECT_EQ(parseOk("package.metadata.oxide.arch = 'sm_100'\n").OxideArch,
            "sm_100");
  // Other tables' `arch` keys are not the package's.
  EXPECT_FALSE(parseOk("[package.metadata.other]\narch = \"sm_90a\"\n"
                       "[target.x]\narch = \"sm_90a\"\n")
                   .OxideArch);
}

TEST(ManifestTest, BinariesAndDefaultRun) {
  Manifest M = parseOk(R"toml(
[package]
name = "multi"
default-run = "main-tool"
autobins = false # only the listed ones

[[bin]]
name = "main-tool"
path = "src/main.rs"

[[bin]]
path = "src/unnamed.rs"

[[bin]]
name = "second"
)toml");
  EXPECT_EQ(M.DefaultRun, "main-tool");
  EXPECT_FALSE(M.AutoBins);
  EXPECT_EQ(M.BinNames, (std::vector<std::string>{"main-tool", "second"}));
}

TEST(ManifestTest, CrlfLineEndings) {
  Manifest M = parseOk("[package]\r\nname = \"win\"\r\n[workspace]\r\n");
  EXPECT_EQ(M.PackageName, "win");
  EXPECT_TRUE(M.HasWorkspace);
}

TEST(ManifestTest, BrokenTextReportsTheLine) {
  Expected<Manifest> M = parseManifest("[package]\nname = \"open\n");
  ASSERT_FALSE(static_cast<bool>(M));
  EXPECT_TRUE(contains(M.error().Message, "line 2"));
  EXPECT_TRUE(contains(M.error().Message, "unterminated string"));
  EXPECT_FALSE(M.error().Hint.empty());

  EXPECT_FALSE(static_cast<bool>(parseManifest("[package\nname = \"x\"\n")));
  EXPECT_FALSE(static_cast<bool>(parseManifest("a = [1, 2\n")));
  EXPECT_FALSE(static_cast<bool>(parseManifest("name = \"x\" junk\n")));
}

TEST(ManifestTest, EmptyFile) {
  Manifest M = parseOk("");
  EXPECT_FALSE(M.HasPackage);
  EXPECT_FALSE(M.HasWorkspace);
}

TEST(ManifestTest, ReadManifestNamesTheFile) {
  Expected<Manifest> M = readManifest("/nonexistent/dir/Cargo.toml");
  ASSERT_FALSE(static_cast<bool>(M));
  EXPECT_TRUE(contains(M.error().Message, "/nonexistent/dir/Cargo.toml"));
}

TEST(ManifestTest, CrateName) {
  EXPECT_EQ(crateNameOf("my-kernel"), "my_kernel");
  EXPECT_EQ(crateNameOf("vecadd"), "vecadd");
  EXPECT_EQ(crateNameOf("a-b_c-"), "a_b_c_");
}

} // namespace

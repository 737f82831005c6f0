//===- ProjectTest.cpp - workspace, example and package discovery ---------===//
//
// Part of oxide. Each test lays out a small project in a temporary directory
// and checks which workspace root, examples and package are found.
//
//===----------------------------------------------------------------------===//

#include "Project.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace oxide::cli;
using namespace oxide::cli::test;

namespace {

/// An oxide-like workspace: a virtual root with examples, one of which has a
/// package name that differs from its directory.
class ProjectTest : public ::testing::Test {
protected:
  TempDir Tmp;
  fs::path Root;

  void SetUp() override {
    Root = Tmp / "ws";
    writeFile(Root / "Cargo.toml",
              "[workspace]\nmembers = [\"crates/*\", \"examples/*\"]\n");
    writeFile(Root / "crates/cuda-device/Cargo.toml",
              "[package]\nname = \"cuda-device\"\n");
    addExample("vecadd", "vecadd");
    addExample("matrix_mul", "gemm-example");
    addExample("scale", "scale_example");
    fs::create_directories(Root / "examples/not-a-package/src");
    writeFile(Root / "examples/README.md", "examples\n");
  }

  void addExample(const std::string &Dir, const std::string &Name) {
    writeFile(Root / "examples" / Dir / "Cargo.toml",
              "[package]\nname = \"" + Name + "\"\n");
    writeFile(Root / "examples" / Dir / "src/main.rs", "fn main() {}\n");
  }

  Workspace workspaceAt(const fs::path &Start) {
    Expected<Workspace> WS = findWorkspace(Start);
    EXPECT_TRUE(static_cast<bool>(WS)) << WS.error().Message;
    return WS ? *WS : Workspace{};
  }
};

TEST_F(ProjectTest, FindsTheWorkspaceRootFromDeepInside) {
  Workspace WS = workspaceAt(Root / "examples/vecadd/src");
  EXPECT_EQ(WS.Root, Root);
  EXPECT_EQ(WS.ManifestPath, Root / "Cargo.toml");
  EXPECT_TRUE(WS.isVirtual());
  EXPECT_EQ(workspaceAt(Root).Root, Root);
}

TEST_F(ProjectTest, StandalonePackageIsItsOwnRoot) {
  fs::path App = Tmp / "app";
  writeFile(App / "Cargo.toml", "[package]\nname = \"app\"\n");
  fs::create_directories(App / "src/nested");
  Workspace WS = workspaceAt(App / "src/nested");
  EXPECT_EQ(WS.Root, App);
  EXPECT_FALSE(WS.isVirtual());
}

TEST_F(ProjectTest, PackageWithOwnWorkspaceTableInsideAnotherWorkspace) {
  // What `cargo oxide new` creates: a package that is its own workspace even
  // inside another workspace's tree.
  fs::path App = Root / "scratch/app";
  writeFile(App / "Cargo.toml", "[package]\nname = \"app\"\n[workspace]\n");
  EXPECT_EQ(workspaceAt(App).Root, App);
}

TEST_F(ProjectTest, NoCargoTomlAnywhere) {
  fs::path Lonely = Tmp / "lonely/dir";
  fs::create_directories(Lonely);
  Expected<Workspace> WS = findWorkspace(Lonely);
  ASSERT_FALSE(static_cast<bool>(WS));
  EXPECT_TRUE(contains(WS.error().Message, "could not find Cargo.toml"));
  EXPECT_TRUE(contains(WS.error().Hint, "cargo oxide new"));
}

TEST_F(ProjectTest, ListsExamplesSortedSkippingNonPackages) {
  std::vector<Package> Examples = listExamples(Root);
  ASSERT_EQ(Examples.size(), 3u);
  EXPECT_EQ(Examples[0].Dir.filename(), "matrix_mul");
  EXPECT_EQ(Examples[0].name(), "gemm-example");
  EXPECT_EQ(Examples[1].name(), "scale_example");
  EXPECT_EQ(Examples[2].name(), "vecadd");
  EXPECT_EQ(Examples[2].ManifestPath, Root / "examples/vecadd/Cargo.toml");
}

TEST_F(ProjectTest, NoExamplesDirectory) {
  TempDir Other;
  EXPECT_TRUE(listExamples(Other.path()).empty());
}

TEST_F(ProjectTest, ResolvesByDirectoryName) {
  Workspace WS = workspaceAt(Root);
  Expected<Package> Pkg = resolvePackage(WS, Root, std::string("matrix_mul"));
  ASSERT_TRUE(static_cast<bool>(Pkg)) << Pkg.error().Message;
  EXPECT_EQ(Pkg->name(), "gemm-example");
  EXPECT_EQ(Pkg->Dir, Root / "examples/matrix_mul");
}

TEST_F(ProjectTest, ResolvesByPackageNameWithDashUnderscoreEquivalence) {
  Workspace WS = workspaceAt(Root);
  for (const char *Name : {"gemm-example", "gemm_example"}) {
    Expected<Package> Pkg = resolvePackage(WS, Root, std::string(Name));
    ASSERT_TRUE(static_cast<bool>(Pkg)) << Name;
    EXPECT_EQ(Pkg->Dir, Root / "examples/matrix_mul") << Name;
  }
  Expected<Package> Scale =
      resolvePackage(WS, Root, std::string("scale-example"));
  ASSERT_TRUE(static_cast<bool>(Scale));
  EXPECT_EQ(Scale->name(), "scale_example");
}

TEST_F(ProjectTest, UnknownNameListsTheExamples) {
  Workspace WS = workspaceAt(Root);
  Expected<Package> Pkg = resolvePackage(WS, Root, std::string("vecad"));
  ASSERT_FALSE(static_cast<bool>(Pkg));
  EXPECT_TRUE(
      contains(Pkg.error().Message, "no example or package named `vecad`"));
  EXPECT_EQ(Pkg.error().Hint,
            "available examples: matrix_mul (package gemm-example), scale "
            "(package scale_example), vecadd");
}

TEST_F(ProjectTest, NamesThatAreNotDirectoriesAreNotPaths) {
  Workspace WS = workspaceAt(Root);
  EXPECT_FALSE(static_cast<bool>(resolvePackage(WS, Root, std::string(".."))));
  EXPECT_FALSE(
      static_cast<bool>(resolvePackage(WS, Root, std::string("vecadd/src"))));
}

TEST_F(ProjectTest, NoNameUsesThePackageOfTheCurrentDirectory) {
  Workspace WS = workspaceAt(Root);
  Expected<Package> Pkg =
      resolvePackage(WS, Root / "examples/scale/src", std::nullopt);
  ASSERT_TRUE(static_cast<bool>(Pkg)) << Pkg.error().Message;
  EXPECT_EQ(Pkg->name(), "scale_example");
}

TEST_F(ProjectTest, NoNameAtAVirtualRootIsAnErrorListingExamples) {
  Workspace WS = workspaceAt(Root);
  Expected<Package> Pkg = resolvePackage(WS, Root, std::nullopt);
  ASSERT_FALSE(static_cast<bool>(Pkg));
  EXPECT_TRUE(contains(Pkg.error().Message, "not inside a package"));
  EXPECT_TRUE(contains(Pkg.error().Hint, "cargo oxide run vecadd"));
  EXPECT_TRUE(contains(Pkg.error().Hint, "available examples:"));
}

TEST_F(ProjectTest, NoNameDoesNotLookAboveTheWorkspaceRoot) {
  // A package above the workspace is not ours.
  TempDir Outer;
  writeFile(Outer / "Cargo.toml", "[package]\nname = \"outer\"\n");
  writeFile(Outer / "inner/Cargo.toml", "[workspace]\n");
  Workspace WS = workspaceAt(Outer / "inner");
  EXPECT_EQ(WS.Root, Outer / "inner");
  EXPECT_FALSE(static_cast<bool>(resolvePackage(WS, WS.Root, std::nullopt)));
}

TEST_F(ProjectTest, StandalonePackageWithoutExamples) {
  fs::path App = Tmp / "app";
  writeFile(App / "Cargo.toml", "[package]\nname = \"app\"\n");
  Workspace WS = workspaceAt(App);
  Expected<Package> Here = resolvePackage(WS, App, std::nullopt);
  ASSERT_TRUE(static_cast<bool>(Here));
  EXPECT_EQ(Here->name(), "app");
  // Its own name works too.
  EXPECT_TRUE(static_cast<bool>(resolvePackage(WS, App, std::string("app"))));
  Expected<Package> Missing = resolvePackage(WS, App, std::string("vecadd"));
  ASSERT_FALSE(static_cast<bool>(Missing));
  EXPECT_TRUE(contains(Missing.error().Hint, "there are no examples"));
}

TEST_F(ProjectTest, MembersExpandGlobsAndHonourExclude) {
  writeFile(Root / "Cargo.toml", R"toml([workspace]
members = ["crates/*", "examples/*", "tests/gpu/*", "tools/single"]
exclude = ["examples/scale"]
)toml");
  writeFile(Root / "tests/gpu/panic_oob/Cargo.toml",
            "[package]\nname = \"panic_oob\"\n");
  writeFile(Root / "tests/gpu/panic_oob/src/main.rs", "fn main() {}\n");
  writeFile(Root / "tests/gpu/.hidden/Cargo.toml",
            "[package]\nname = \"hidden\"\n");
  writeFile(Root / "tools/single/Cargo.toml", "[package]\nname = \"single\"\n");
  Workspace WS = workspaceAt(Root);
  std::vector<std::string> Names;
  for (const Package &P : listMembers(WS))
    Names.push_back(P.name());
  EXPECT_EQ(Names, (std::vector<std::string>{"cuda-device", "gemm-example",
                                             "vecadd", "panic_oob", "single"}));
}

TEST_F(ProjectTest, MembersIncludeTheRootPackage) {
  fs::path App = Tmp / "app";
  writeFile(App / "Cargo.toml",
            "[package]\nname = \"app\"\n[workspace]\nmembers = [\"sub\"]\n");
  writeFile(App / "sub/Cargo.toml", "[package]\nname = \"sub\"\n");
  std::vector<Package> Members = listMembers(workspaceAt(App));
  ASSERT_EQ(Members.size(), 2u);
  EXPECT_EQ(Members[0].name(), "app");
  EXPECT_EQ(Members[1].name(), "sub");
}

TEST_F(ProjectTest, ResolvesMembersOutsideExamples) {
  writeFile(Root / "Cargo.toml",
            "[workspace]\nmembers = [\"examples/*\", \"tests/gpu/*\"]\n");
  writeFile(Root / "tests/gpu/barrier_dir/Cargo.toml",
            "[package]\nname = \"barrier-test\"\n");
  writeFile(Root / "tests/gpu/barrier_dir/src/main.rs", "fn main() {}\n");
  Workspace WS = workspaceAt(Root);
  for (const char *Name : {"barrier_dir", "barrier-test", "barrier_test"}) {
    Expected<Package> Pkg = resolvePackage(WS, Root, std::string(Name));
    ASSERT_TRUE(static_cast<bool>(Pkg)) << Name;
    EXPECT_EQ(Pkg->Dir, Root / "tests/gpu/barrier_dir") << Name;
  }
  // Examples come first when names collide.
  writeFile(Root / "tests/gpu/vecadd/Cargo.toml",
            "[package]\nname = \"vecadd-gpu-test\"\n");
  EXPECT_EQ(resolvePackage(WS, Root, std::string("vecadd"))->Dir,
            Root / "examples/vecadd");
  // Members with a binary are offered in the hint.
  Expected<Package> Missing = resolvePackage(WS, Root, std::string("nope"));
  ASSERT_FALSE(static_cast<bool>(Missing));
  EXPECT_TRUE(contains(Missing.error().Hint, "; other packages: barrier-test"));
}

TEST_F(ProjectTest, AmbiguousDirectoryNames) {
  writeFile(Root / "Cargo.toml", "[workspace]\nmembers = [\"a/*\", \"b/*\"]\n");
  writeFile(Root / "a/dup/Cargo.toml", "[package]\nname = \"dup-a\"\n");
  writeFile(Root / "b/dup/Cargo.toml", "[package]\nname = \"dup-b\"\n");
  Workspace WS = workspaceAt(Root);
  Expected<Package> Pkg = resolvePackage(WS, Root, std::string("dup"));
  ASSERT_FALSE(static_cast<bool>(Pkg));
  EXPECT_TRUE(contains(Pkg.error().Message, "several packages"));
  EXPECT_TRUE(contains(Pkg.error().Hint, "dup-a (a/dup), dup-b (b/dup)"));
  EXPECT_EQ(resolvePackage(WS, Root, std::string("dup-b"))->Dir,
            Root / "b/dup");
}

TEST(GlobTest, Matching) {
  EXPECT_TRUE(globMatch("*", "anything"));
  EXPECT_TRUE(globMatch("*", ""));
  EXPECT_TRUE(globMatch("ex*", "examples"));
  EXPECT_TRUE(globMatch("*_test", "panic_test"));
  EXPECT_TRUE(globMatch("a*b*c", "aXXbYYc"));
  EXPECT_TRUE(globMatch("v?cadd", "vecadd"));
  EXPECT_FALSE(globMatch("v?cadd", "vcadd"));
  EXPECT_FALSE(globMatch("ex*", "tests"));
  EXPECT_FALSE(globMatch("a*b", "aXbY"));
  EXPECT_TRUE(globMatch("exact", "exact"));
  EXPECT_FALSE(globMatch("exact", "exactly"));
}

TEST_F(ProjectTest, OutputFolders) {
  EXPECT_EQ(profileDirName(false), "debug");
  EXPECT_EQ(profileDirName(true), "release");
  EXPECT_EQ(oxideOutputDir("/t", "vecadd"), fs::path("/t/oxide/vecadd"));
}

TEST_F(ProjectTest, BinariesInCargoOrder) {
  fs::path Dir = Tmp / "bins";
  writeFile(Dir / "Cargo.toml", R"toml([package]
name = "bins"
[[bin]]
name = "explicit"
path = "tools/explicit.rs"
)toml");
  writeFile(Dir / "src/main.rs", "fn main() {}\n");
  writeFile(Dir / "src/bin/zeta.rs", "fn main() {}\n");
  writeFile(Dir / "src/bin/alpha/main.rs", "fn main() {}\n");
  writeFile(Dir / "src/bin/notes.txt", "\n");
  Expected<Package> Pkg = loadPackage(Dir);
  ASSERT_TRUE(static_cast<bool>(Pkg));
  EXPECT_EQ(Pkg->binaries(),
            (std::vector<std::string>{"explicit", "bins", "alpha", "zeta"}));

  Expected<std::string> Default = Pkg->defaultBinary();
  ASSERT_FALSE(static_cast<bool>(Default));
  EXPECT_TRUE(contains(Default.error().Message, "several binaries"));
  EXPECT_TRUE(contains(Default.error().Hint, "default-run = \"explicit\""));
}

TEST_F(ProjectTest, DefaultBinary) {
  Expected<Package> Vecadd = loadPackage(Root / "examples/vecadd");
  ASSERT_TRUE(static_cast<bool>(Vecadd));
  EXPECT_EQ(*Vecadd->defaultBinary(), "vecadd");

  fs::path Dir = Tmp / "dr";
  writeFile(Dir / "Cargo.toml",
            "[package]\nname = \"dr\"\ndefault-run = \"two\"\n");
  writeFile(Dir / "src/bin/one.rs", "fn main() {}\n");
  writeFile(Dir / "src/bin/two.rs", "fn main() {}\n");
  EXPECT_EQ(*loadPackage(Dir)->defaultBinary(), "two");

  fs::path Lib = Tmp / "lib";
  writeFile(Lib / "Cargo.toml", "[package]\nname = \"lib\"\n");
  writeFile(Lib / "src/lib.rs", "\n");
  Expected<std::string> None = loadPackage(Lib)->defaultBinary();
  ASSERT_FALSE(static_cast<bool>(None));
  EXPECT_TRUE(contains(None.error().Message, "has no binary"));
}

TEST_F(ProjectTest, LoadPackageNeedsAName) {
  fs::path Dir = Tmp / "nameless";
  writeFile(Dir / "Cargo.toml", "[package]\nversion = \"1\"\n");
  Expected<Package> Pkg = loadPackage(Dir);
  ASSERT_FALSE(static_cast<bool>(Pkg));
  EXPECT_TRUE(contains(Pkg.error().Message, "has no [package] name"));
}

} // namespace

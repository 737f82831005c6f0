//===- NewTest.cpp - the files `cargo oxide new` writes -------------------===//
//
// Part of oxide. Tests name checking and the rendered Cargo.toml and main.rs.
//
//===----------------------------------------------------------------------===//

#include "New.h"

#include "Manifest.h"
#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace oxide::cli;
using oxide::cli::test::contains;

namespace {

TEST(NewTest, AcceptsCargoPackageNames) {
  for (const char *Good : {"my_kernel", "my-kernel", "k", "Vec2", "a1_b-2"})
    EXPECT_FALSE(checkPackageName(Good)) << Good;
}

TEST(NewTest, RejectsBadNames) {
  for (const char *Bad : {"", "1st", "has space", "dot.ted", "ünï", "a/b"}) {
    std::optional<Error> E = checkPackageName(Bad);
    ASSERT_TRUE(E) << Bad;
    EXPECT_TRUE(contains(E->Hint, "cargo oxide new my_kernel")) << Bad;
  }
  for (const char *Reserved : {"fn", "self", "test", "core", "std", "build"}) {
    std::optional<Error> E = checkPackageName(Reserved);
    ASSERT_TRUE(E) << Reserved;
    EXPECT_TRUE(contains(E->Message, "reserved")) << Reserved;
  }
}

TEST(NewTest, TomlStrings) {
  EXPECT_EQ(tomlString("/plain/path"), "'/plain/path'");
  EXPECT_EQ(tomlString("C:\\dir"), "'C:\\dir'"); // literal: no escaping needed
  EXPECT_EQ(tomlString("it's \"x\"\\"), "\"it's \\\"x\\\"\\\\\"");
}

TEST(NewTest, CargoTomlIsAStandalonePackageDependingOnOxide) {
  std::string Text = renderCargoToml("my-kernel");
  Expected<Manifest> M = parseManifest(Text);
  ASSERT_TRUE(static_cast<bool>(M)) << M.error().Message << "\n" << Text;
  EXPECT_EQ(M->PackageName, "my-kernel");
  EXPECT_TRUE(M->HasPackage);
  EXPECT_TRUE(M->HasWorkspace); // builds even inside another workspace
  for (const char *Crate : {"cuda-device", "cuda-host", "cuda-core"})
    EXPECT_TRUE(contains(Text, std::string(Crate) +
                                   " = { version = \"0.1\", registry = "
                                   "\"oxide\" }\n"))
        << Text;
  // Emulated kernels (no GPU) run on an optimised PTX VM in debug builds too.
  EXPECT_TRUE(contains(Text, "[profile.dev.package.ptx-vm]\nopt-level = 3\n"))
      << Text;
  EXPECT_TRUE(
      contains(Text, "[profile.dev.package.cuda-emulator]\nopt-level = 2\n"))
      << Text;
}

TEST(NewTest, NoFileOfANewProjectHoldsAPath) {
  // The project moves and is shared: no absolute path, no path dependency.
  for (bool Async : {false, true})
    for (const std::string &Text :
         {renderCargoToml("k", Async), renderCargoConfig(),
          renderMainRs("k", Async)}) {
      EXPECT_FALSE(contains(Text, "path =")) << Text;
      EXPECT_FALSE(contains(Text, "'/")) << Text;
      EXPECT_FALSE(contains(Text, "\"/")) << Text;
      EXPECT_FALSE(contains(Text, "/home")) << Text;
      EXPECT_FALSE(contains(Text, ".cargo/bin")) << Text;
    }
}

TEST(NewTest, MainRsUsesTheCrateNameAsModuleName) {
  std::string Text = renderMainRs("my-kernel");
  EXPECT_FALSE(contains(Text, "@CRATE@"));
  EXPECT_TRUE(contains(Text, "load_kernel_module(&ctx, \"my_kernel\")"));
  EXPECT_TRUE(contains(Text, "//! my_kernel:"));
}

TEST(NewTest, MainRsIsTheVecaddProgram) {
  std::string Text = renderMainRs("k");
  for (const char *Piece :
       {"#[kernel]",
        "pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>)",
        "thread::index_1d()", "c.get_mut(idx)", "CudaContext::new(0)",
        "default_stream()", "DeviceBuffer::from_host", "::zeroed(",
        "to_host_vec", "cuda_launch!", "LaunchConfig::for_num_elems",
        "✓ SUCCESS: All {N} elements correct!",
        "no GPU: the kernels were built and their PTX validated, but could "
        "not be launched",
        "std::process::exit(2)"})
    EXPECT_TRUE(contains(Text, Piece)) << Piece;
}

TEST(NewTest, AsyncCargoTomlAddsCudaAsync) {
  std::string Plain = renderCargoToml("k");
  EXPECT_FALSE(contains(Plain, "cuda-async")) << Plain;
  std::string Text = renderCargoToml("k", /*Async=*/true);
  Expected<Manifest> M = parseManifest(Text);
  ASSERT_TRUE(static_cast<bool>(M)) << M.error().Message << "\n" << Text;
  EXPECT_TRUE(M->HasWorkspace);
  for (const char *Crate :
       {"cuda-device", "cuda-host", "cuda-core", "cuda-async"})
    EXPECT_TRUE(contains(Text, std::string(Crate) +
                                   " = { version = \"0.1\", registry = "
                                   "\"oxide\" }\n"))
        << Text;
}

TEST(NewTest, AsyncMainRsIsTheAwaitedVecadd) {
  std::string Text = renderMainRs("my-kernel", /*Async=*/true);
  EXPECT_FALSE(contains(Text, "@CRATE@"));
  EXPECT_TRUE(contains(Text, "//! my_kernel:"));
  EXPECT_TRUE(contains(Text, "load_kernel_module(pool.context(), \"my_kernel\")"));
  for (const char *Piece :
       {"#[cuda_module]", "#[kernel]",
        "pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>)",
        "use cuda_async::{block_on, memory, AsyncError, DeviceBox, "
        "DeviceOperation};",
        "cuda_async::default_pool()", "DeviceBox::upload(a.clone()).await?",
        ".zip(memory::zeroed::<f32>(N))", ".then(move |stream,",
        "kernels::launch::vecadd(&module, stream, config, &a_dev, &b_dev, "
        "&mut c_dev)?",
        ".and_then(memory::to_host)", "addition.await?",
        "match block_on(run())", "✓ SUCCESS: All {N} elements correct!",
        "Err(e) => e.report()"})
    EXPECT_TRUE(contains(Text, Piece)) << Piece;
  // The synchronous template is unchanged by the flag's existence.
  EXPECT_FALSE(contains(renderMainRs("k"), "cuda_async"));
}

} // namespace

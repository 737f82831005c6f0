//===- ToolchainTest.cpp - rustc, LLVM and CUDA toolkit facts -------------===//
//
// Part of oxide. Tests `rustc -vV` parsing, the rustc/oxide LLVM rule and the
// CUDA toolkit paths.
//
//===----------------------------------------------------------------------===//

#include "Toolchain.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace oxide::cli;
using oxide::cli::test::contains;

namespace {

// Verbatim from the stable toolchain on the build machine.
const char *StableVV = "rustc 1.95.0 (59807616e 2026-04-14)\n"
                       "binary: rustc\n"
                       "commit-hash: 59807616e1fa2540724bfbac14d7976d7e4a3860\n"
                       "commit-date: 2026-04-14\n"
                       "host: x86_64-unknown-linux-gnu\n"
                       "release: 1.95.0\n"
                       "LLVM version: 22.1.2\n";

const char *NightlyVV = "rustc 1.97.0-nightly (0123abcde 2026-05-20)\n"
                        "binary: rustc\n"
                        "commit-hash: 0123abcdef\n"
                        "commit-date: 2026-05-20\n"
                        "host: aarch64-unknown-linux-gnu\n"
                        "release: 1.97.0-nightly\n"
                        "LLVM version: 22.1.4\n";

TEST(ToolchainTest, ParsesStable) {
  Expected<RustcInfo> Info = parseRustcVersion(StableVV);
  ASSERT_TRUE(static_cast<bool>(Info)) << Info.error().Message;
  EXPECT_EQ(Info->VersionLine, "rustc 1.95.0 (59807616e 2026-04-14)");
  EXPECT_EQ(Info->Release, "1.95.0");
  EXPECT_EQ(Info->Host, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(Info->LlvmVersion, "22.1.2");
  EXPECT_EQ(Info->LlvmMajor, 22);
}

TEST(ToolchainTest, ParsesNightly) {
  Expected<RustcInfo> Info = parseRustcVersion(NightlyVV);
  ASSERT_TRUE(static_cast<bool>(Info));
  EXPECT_EQ(Info->Release, "1.97.0-nightly");
  EXPECT_EQ(Info->Host, "aarch64-unknown-linux-gnu");
  EXPECT_EQ(Info->LlvmMajor, 22);
}

TEST(ToolchainTest, ToleratesCrlfAndMissingLines) {
  Expected<RustcInfo> Info = parseRustcVersion(
      "rustc 1.80.1 (abc 2024-08-01)\r\nLLVM version: 18.1.7\r\n");
  ASSERT_TRUE(static_cast<bool>(Info));
  EXPECT_EQ(Info->Release, "1.80.1"); // taken from the first line
  EXPECT_EQ(Info->LlvmVersion, "18.1.7");
  EXPECT_EQ(Info->LlvmMajor, 18);

  Expected<RustcInfo> NoLlvm = parseRustcVersion("rustc 1.95.0 (x y)\n");
  ASSERT_TRUE(static_cast<bool>(NoLlvm));
  EXPECT_EQ(NoLlvm->LlvmMajor, 0);
  EXPECT_TRUE(NoLlvm->LlvmVersion.empty());
}

TEST(ToolchainTest, RejectsWhatIsNotRustc) {
  Expected<RustcInfo> Info = parseRustcVersion("gcc (Debian 12.2.0)\n");
  ASSERT_FALSE(static_cast<bool>(Info));
  EXPECT_TRUE(contains(Info.error().Message, "gcc (Debian 12.2.0)"));
  EXPECT_TRUE(contains(Info.error().Hint, "rustup"));
  EXPECT_FALSE(static_cast<bool>(parseRustcVersion("")));
}

TEST(ToolchainTest, LlvmRuleRustcMustNotBeNewer) {
  EXPECT_TRUE(isRustcLlvmSupported(22, 22));
  EXPECT_TRUE(isRustcLlvmSupported(21, 22));
  EXPECT_TRUE(isRustcLlvmSupported(18, 22));
  EXPECT_FALSE(isRustcLlvmSupported(23, 22));
  EXPECT_FALSE(isRustcLlvmSupported(0, 22)); // unknown is not good enough
}

TEST(ToolchainTest, LlvmRuleAppliesToTheInstalledToolchains) {
  // DESIGN.md §2: stable (LLVM 22.1.2) and nightly (22.1.4) must both pass
  // with oxide's LLVM 22.
  EXPECT_TRUE(isRustcLlvmSupported(parseRustcVersion(StableVV)->LlvmMajor, 22));
  EXPECT_TRUE(
      isRustcLlvmSupported(parseRustcVersion(NightlyVV)->LlvmMajor, 22));
  EXPECT_GE(oxideLlvmMajor(), 1);
}

TEST(ToolchainTest, DescribesThePairing) {
  EXPECT_EQ(describeLlvmPairing(22, 22), "rustc's LLVM 22 <= oxide's LLVM 22");
  EXPECT_TRUE(
      contains(describeLlvmPairing(23, 22), "newer than oxide's LLVM 22"));
  EXPECT_TRUE(contains(describeLlvmPairing(0, 22), "did not report"));
}

TEST(ToolchainTest, LastNonEmptyLine) {
  const char *Ptxas = "ptxas: NVIDIA (R) Ptx optimizing assembler\n"
                      "Copyright (c) 2005-2025 NVIDIA Corporation\n"
                      "Cuda compilation tools, release 13.0, V13.0.88\n"
                      "Build cuda_13.0.r13.0/compiler.36424714_0\n\n";
  EXPECT_EQ(lastNonEmptyLine(Ptxas),
            "Build cuda_13.0.r13.0/compiler.36424714_0");
  EXPECT_EQ(lastNonEmptyLine(""), "");
  EXPECT_EQ(lastNonEmptyLine("one"), "one");
}

TEST(ToolchainTest, CudaPaths) {
  Environment Env;
  EXPECT_EQ(cudaToolkitRoot(Env), fs::path("/usr/local/cuda"));
  EXPECT_EQ(libdevicePath(Env),
            fs::path("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"));
  Env.set("OXIDE_CUDA_PATH", "/opt/cuda-13");
  EXPECT_EQ(cudaToolkitRoot(Env), fs::path("/opt/cuda-13"));
  EXPECT_EQ(libdevicePath(Env),
            fs::path("/opt/cuda-13/nvvm/libdevice/libdevice.10.bc"));
  Env.set("OXIDE_CUDA_PATH", "/nonexistent");
  Env.set("PATH", "/nonexistent-too");
  EXPECT_FALSE(findCudaTool("ptxas", Env));
}

TEST(ToolchainTest, SourceRootAndRustc) {
  Environment Env;
  EXPECT_FALSE(oxideSourceRoot(Env).empty()); // CMake's OXIDE_SOURCE_DIR
  Env.set("OXIDE_ROOT", "/src/oxide/");
  EXPECT_EQ(oxideSourceRoot(Env), fs::path("/src/oxide/"));
  EXPECT_EQ(rustcProgram(Env), "rustc");
  Env.set("RUSTC", "/x/rustc");
  EXPECT_EQ(rustcProgram(Env), "/x/rustc");
}

TEST(ToolchainTest, CudaVersionFormatting) {
  EXPECT_EQ(formatCudaVersion(13000), "13.0");
  EXPECT_EQ(formatCudaVersion(12040), "12.4");
  EXPECT_EQ(formatCudaVersion(12090), "12.9");
}

} // namespace

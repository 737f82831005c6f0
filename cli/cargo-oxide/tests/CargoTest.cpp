//===- CargoTest.cpp - the oxide build environment ------------------------===//
//
// Part of oxide. Tests how the environment of a cargo run is composed:
// RUSTFLAGS (plain and encoded), the other OXIDE_* variables, the device
// linker's location and the link stamps.
//
//===----------------------------------------------------------------------===//

#include "Cargo.h"
#include "oxide/Targets.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace oxide::cli;
using namespace oxide::cli::test;

namespace {

const fs::path Linker = "/opt/oxide/bin/oxide-link";

OxideBuildConfig config(const fs::path &LinkerPath, const std::string &Arch,
                        bool Verbose = false,
                        std::optional<fs::path> DumpDir = std::nullopt) {
  OxideBuildConfig Config;
  Config.Linker = LinkerPath;
  Config.Arch = Arch;
  Config.Verbose = Verbose;
  Config.DumpDir = std::move(DumpDir);
  return Config;
}

/// resolveArch() of \p In, which must succeed.
ArchChoice resolved(const ArchInputs &In, const Environment &Env) {
  Expected<ArchChoice> C = resolveArch(In, Env);
  EXPECT_TRUE(static_cast<bool>(C)) << (C ? "" : C.error().Message);
  return C ? *C : ArchChoice{};
}

/// A GPU detector that finds \p Major.\p Minor and counts its calls.
std::function<std::optional<ComputeCapability>()> gpu(int Major, int Minor,
                                                      int *Calls = nullptr) {
  return [=]() -> std::optional<ComputeCapability> {
    if (Calls)
      ++*Calls;
    return ComputeCapability{Major, Minor};
  };
}

TEST(CargoTest, ArchResolutionOrderEachLevel) {
  const fs::path Manifest = "/ws/examples/gemm/Cargo.toml";
  int Probes = 0;
  ArchInputs All{std::string("sm_86"), std::string("sm_90a"), Manifest,
                 gpu(10, 0, &Probes)};
  Environment Env;
  Env.set("OXIDE_ARCH", "sm_89");

  // 1. --arch, over everything.
  ArchChoice C = resolved(All, Env);
  EXPECT_EQ(C.Arch, "sm_86");
  EXPECT_EQ(C.Source, ArchSource::Flag);
  // 2. the package's [package.metadata.oxide] arch, over OXIDE_ARCH.
  All.Flag.reset();
  C = resolved(All, Env);
  EXPECT_EQ(C.Arch, "sm_90a");
  EXPECT_EQ(C.Source, ArchSource::Package);
  EXPECT_TRUE(contains(C.Origin, Manifest.string())) << C.Origin;
  // 3. OXIDE_ARCH, over the GPU.
  All.PackageArch.reset();
  C = resolved(All, Env);
  EXPECT_EQ(C.Arch, "sm_89");
  EXPECT_EQ(C.Source, ArchSource::Environment);
  EXPECT_EQ(Probes, 0) << "the GPU is asked only when nothing names a target";
  // 4. the GPU present; an empty OXIDE_ARCH is unset.
  Env.set("OXIDE_ARCH", "");
  C = resolved(All, Env);
  EXPECT_EQ(C.Arch, "sm_100");
  EXPECT_EQ(C.Source, ArchSource::Gpu);
  EXPECT_EQ(Probes, 1);
  // 5. the default: no GPU, or one the table has no target for, or no
  // detector at all.
  All.DetectGpu = [] { return std::optional<ComputeCapability>(); };
  C = resolved(All, Env);
  EXPECT_EQ(C.Arch, oxide::DefaultTargetName);
  EXPECT_EQ(C.Source, ArchSource::Default);
  All.DetectGpu = gpu(6, 1);
  EXPECT_EQ(resolved(All, Env).Arch, oxide::DefaultTargetName);
  All.DetectGpu = nullptr;
  EXPECT_EQ(resolved(All, Env).Arch, oxide::DefaultTargetName);
}

TEST(CargoTest, UnknownArchIsRefusedNamingWhereItCameFrom) {
  const fs::path Manifest = "/ws/p/Cargo.toml";
  Environment Env;
  Expected<ArchChoice> FromFlag =
      resolveArch({std::string("sm_999"), std::nullopt, Manifest, {}}, Env);
  ASSERT_FALSE(FromFlag);
  EXPECT_TRUE(contains(FromFlag.error().Message, "unknown GPU architecture `sm_999`"));
  EXPECT_TRUE(contains(FromFlag.error().Message, "sm_90a")) << "lists the known ones";

  Expected<ArchChoice> FromPackage =
      resolveArch({std::nullopt, std::string("hopper"), Manifest, {}}, Env);
  ASSERT_FALSE(FromPackage);
  EXPECT_TRUE(contains(FromPackage.error().Message, "`hopper`"));
  EXPECT_TRUE(contains(FromPackage.error().Message, Manifest.string()));

  Env.set("OXIDE_ARCH", "sm_100f0");
  Expected<ArchChoice> FromEnv = resolveArch({}, Env);
  ASSERT_FALSE(FromEnv);
  EXPECT_TRUE(contains(FromEnv.error().Message, "(OXIDE_ARCH)"));
  // A bad OXIDE_ARCH does not matter when something before it decides.
  EXPECT_EQ(resolved({std::string("sm_90"), std::nullopt, Manifest, {}}, Env).Arch,
            "sm_90");
}

TEST(CargoTest, OxideRustFlags) {
  EXPECT_EQ(oxideRustFlags(Linker),
            (std::vector<std::string>{"-C", "linker=/opt/oxide/bin/oxide-link",
                                      "-C", "save-temps"}));
}

TEST(CargoTest, AppendToEmptyRustFlags) {
  EXPECT_EQ(appendRustFlags("", oxideRustFlags(Linker)),
            "-C linker=/opt/oxide/bin/oxide-link -C save-temps");
}

TEST(CargoTest, AppendKeepsTheUsersFlagsFirst) {
  EXPECT_EQ(appendRustFlags("-C target-cpu=native  ", oxideRustFlags(Linker)),
            "-C target-cpu=native -C linker=/opt/oxide/bin/oxide-link -C "
            "save-temps");
}

TEST(CargoTest, AppendIsIdempotent) {
  std::string Once = appendRustFlags("--cfg x", oxideRustFlags(Linker));
  EXPECT_EQ(appendRustFlags(Once, oxideRustFlags(Linker)), Once);
  // Other spellings of the same option count as present.
  EXPECT_EQ(appendRustFlags("-Csave-temps", oxideRustFlags(Linker)),
            "-Csave-temps -C linker=/opt/oxide/bin/oxide-link");
  EXPECT_EQ(appendRustFlags("--codegen save-temps", {"-C", "save-temps"}),
            "--codegen save-temps");
}

TEST(CargoTest, AnotherLinkerIsOverriddenNotKept) {
  // rustc takes the last -C linker, so ours is appended after the user's.
  std::string Flags =
      appendRustFlags("-C linker=clang", oxideRustFlags(Linker));
  EXPECT_EQ(Flags, "-C linker=clang -C linker=/opt/oxide/bin/oxide-link -C "
                   "save-temps");
}

TEST(CargoTest, AppendEncoded) {
  EXPECT_EQ(appendEncodedRustFlags("", {"-C", "save-temps"}),
            "-C\x1fsave-temps");
  EXPECT_EQ(appendEncodedRustFlags("--cfg\x1f"
                                   "a b",
                                   {"-C", "save-temps"}),
            "--cfg\x1f"
            "a b\x1f-C\x1fsave-temps");
  EXPECT_EQ(appendEncodedRustFlags("-C\x1fsave-temps", {"-C", "save-temps"}),
            "-C\x1fsave-temps");
}

TEST(CargoTest, ApplySetsTheWholeEnvironment) {
  Environment Env;
  Env.set("RUSTFLAGS", "--cfg user");
  Env.set("CARGO_INCREMENTAL", "1");
  Env.set("PATH", "/usr/bin");
  OxideBuildConfig Config =
      config(Linker, "sm_90", /*Verbose=*/true, fs::path("/t/oxide/vecadd"));
  applyOxideEnvironment(Env, Config);
  EXPECT_EQ(Env.get("RUSTFLAGS"),
            "--cfg user -C linker=/opt/oxide/bin/oxide-link -C save-temps");
  EXPECT_EQ(Env.get("CARGO_INCREMENTAL"), "0");
  EXPECT_EQ(Env.get("OXIDE_ARCH"), "sm_90");
  EXPECT_EQ(Env.get("OXIDE_DUMP_DIR"), "/t/oxide/vecadd");
  EXPECT_EQ(Env.get("OXIDE_VERBOSE"), "1");
  EXPECT_EQ(Env.get("PATH"), "/usr/bin"); // the rest is untouched
  EXPECT_FALSE(Env.contains("CARGO_ENCODED_RUSTFLAGS"));
}

TEST(CargoTest, ApplyWithoutDumpDirOrVerbose) {
  Environment Env;
  Env.set("OXIDE_DUMP_DIR", "/stale/from/shell");
  applyOxideEnvironment(Env, config(Linker, "sm_80"));
  EXPECT_FALSE(Env.contains("OXIDE_DUMP_DIR"));
  EXPECT_FALSE(Env.contains("OXIDE_VERBOSE"));
  // Without RUSTFLAGS from the user, the flags join .cargo/config.toml's
  // build.rustflags instead of replacing them.
  EXPECT_FALSE(Env.contains("RUSTFLAGS"));
  EXPECT_EQ(Env.get("CARGO_BUILD_RUSTFLAGS"),
            "-C linker=/opt/oxide/bin/oxide-link -C save-temps");
}

TEST(CargoTest, RustFlagsGoWhereTheUsersConfigurationHasThem) {
  OxideBuildConfig Target = config(Linker, "sm_80");
  Target.RustFlagsVariable =
      targetRustFlagsVariable("x86_64-unknown-linux-gnu");
  EXPECT_EQ(Target.RustFlagsVariable,
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS");
  Environment Env;
  Env.set(Target.RustFlagsVariable, "--cfg mine");
  applyOxideEnvironment(Env, Target);
  EXPECT_EQ(Env.get(Target.RustFlagsVariable),
            "--cfg mine -C linker=/opt/oxide/bin/oxide-link -C save-temps");
  EXPECT_FALSE(Env.contains("CARGO_BUILD_RUSTFLAGS"));

  EXPECT_TRUE(configSetsTargetRustFlags(
      "[target.x86_64-unknown-linux-gnu]\nlinker = \"cc\"\n"
      "rustflags = [\"--cfg\", \"x\"]\n"));
  EXPECT_TRUE(configSetsTargetRustFlags(
      "[target.'cfg(unix)']\n  rustflags=[\"-Ctarget-cpu=native\"]\n"));
  EXPECT_TRUE(configSetsTargetRustFlags(
      "target.x86_64-unknown-linux-gnu.rustflags = [\"--cfg\", \"x\"]\n"));
  // build.rustflags, a target table without rustflags, comments: no.
  EXPECT_FALSE(configSetsTargetRustFlags(
      "[build]\nrustflags = [\"-C\", \"save-temps\"]\n"
      "[target.x86_64-unknown-linux-gnu]\nlinker = \"/o/oxide-link\"\n"
      "# rustflags = [\"commented\"]\n"));

  // The choice reads the config files from the directory cargo runs in,
  // and asks for the host only when it needs it.
  TempDir Tmp;
  Environment Home;
  Home.set("HOME", (Tmp / "home").string());
  writeFile(Tmp / "p/.cargo/config.toml", "[build]\nrustflags = [\"--cfg\", \"u\"]\n");
  bool Asked = false;
  auto Host = [&] {
    Asked = true;
    return std::optional<std::string>("x86_64-unknown-linux-gnu");
  };
  EXPECT_EQ(chooseRustFlagsVariable(Home, Tmp / "p", Host),
            "CARGO_BUILD_RUSTFLAGS");
  EXPECT_FALSE(Asked);
  writeFile(Tmp / ".cargo/config.toml",
            "[target.x86_64-unknown-linux-gnu]\nrustflags = [\"--cfg\", \"u\"]\n");
  EXPECT_EQ(chooseRustFlagsVariable(Home, Tmp / "p", Host),
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS");
  EXPECT_TRUE(Asked);
}

TEST(CargoTest, ApplyExtendsEncodedRustFlagsWhenCargoWouldReadThem) {
  Environment Env;
  Env.set("CARGO_ENCODED_RUSTFLAGS", "--cfg\x1f"
                                     "enc");
  Env.set("RUSTFLAGS", "--cfg ignored-by-cargo");
  applyOxideEnvironment(Env, config(Linker, "sm_80"));
  EXPECT_EQ(
      Env.get("CARGO_ENCODED_RUSTFLAGS"),
      "--cfg\x1f"
      "enc\x1f-C\x1flinker=/opt/oxide/bin/oxide-link\x1f-C\x1fsave-temps");
  EXPECT_EQ(Env.get("RUSTFLAGS"), "--cfg ignored-by-cargo");

  Environment Empty;
  Empty.set("CARGO_ENCODED_RUSTFLAGS", "");
  applyOxideEnvironment(Empty, config(Linker, "sm_80"));
  EXPECT_EQ(Empty.get("CARGO_ENCODED_RUSTFLAGS"),
            "-C\x1flinker=/opt/oxide/bin/oxide-link\x1f-C\x1fsave-temps");
  EXPECT_FALSE(Empty.contains("RUSTFLAGS"));
}

TEST(CargoTest, LinkerPathWithSpacesUsesEncodedFlags) {
  Environment Env;
  Env.set("RUSTFLAGS", " -C opt-level=1  --cfg a ");
  applyOxideEnvironment(Env, config("/home/me/My Tools/oxide-link", "sm_80"));
  EXPECT_FALSE(Env.contains("RUSTFLAGS"));
  EXPECT_EQ(
      Env.get("CARGO_ENCODED_RUSTFLAGS"),
      "-C\x1fopt-level=1\x1f--cfg\x1f"
      "a\x1f-C\x1flinker=/home/me/My Tools/oxide-link\x1f-C\x1fsave-temps");
}

TEST(CargoTest, DeviceLinkerNextToTheExecutable) {
  Environment Env;
  EXPECT_EQ(expectedDeviceLinker(Env, fs::path("/opt/oxide/bin/cargo-oxide")),
            fs::path("/opt/oxide/bin/oxide-link"));
  EXPECT_TRUE(expectedDeviceLinker(Env, std::nullopt).empty());
}

TEST(CargoTest, DeviceLinkerFromEnvironmentIsMadeAbsolute) {
  Environment Env;
  Env.set("OXIDE_LINK", "/abs/oxide-link");
  EXPECT_EQ(expectedDeviceLinker(Env, fs::path("/x/cargo-oxide")),
            fs::path("/abs/oxide-link"));
  Env.set("OXIDE_LINK", "rel/./oxide-link");
  fs::path Got = expectedDeviceLinker(Env, std::nullopt);
  EXPECT_TRUE(Got.is_absolute());
  EXPECT_EQ(Got, (fs::current_path() / "rel/oxide-link"));
}

TEST(CargoTest, LocateDeviceLinkerChecksItIsExecutable) {
  TempDir Tmp;
  Environment Env;
  Expected<fs::path> Missing = locateDeviceLinker(Env, Tmp / "cargo-oxide");
  ASSERT_FALSE(static_cast<bool>(Missing));
  EXPECT_TRUE(contains(Missing.error().Message, "device linker not found"));
  EXPECT_TRUE(contains(Missing.error().Hint, "OXIDE_LINK"));

  writeFile(Tmp / "oxide-link", "not executable");
  EXPECT_FALSE(static_cast<bool>(locateDeviceLinker(Env, Tmp / "cargo-oxide")));

  writeExecutable(Tmp / "oxide-link", "#!/bin/sh\n");
  Expected<fs::path> Found = locateDeviceLinker(Env, Tmp / "cargo-oxide");
  ASSERT_TRUE(static_cast<bool>(Found));
  EXPECT_EQ(*Found, Tmp / "oxide-link");

  Env.set("OXIDE_LINK", (Tmp / "nope").string());
  Expected<fs::path> BadEnv = locateDeviceLinker(Env, Tmp / "cargo-oxide");
  ASSERT_FALSE(static_cast<bool>(BadEnv));
  EXPECT_TRUE(contains(BadEnv.error().Message, "(from OXIDE_LINK)"));
}

TEST(CargoTest, CargoProgram) {
  Environment Env;
  EXPECT_EQ(cargoProgram(Env), "cargo");
  Env.set("CARGO", "/home/u/.rustup/toolchains/nightly/bin/cargo");
  EXPECT_EQ(cargoProgram(Env), "/home/u/.rustup/toolchains/nightly/bin/cargo");
}

TEST(CargoTest, LinkStampsTrackArchAndLinker) {
  TempDir Tmp;
  writeExecutable(Tmp / "oxide-link", "#!/bin/sh\n");
  OxideBuildConfig A = config(Tmp / "oxide-link", "sm_80");
  OxideBuildConfig B = A;
  B.Arch = "sm_90";
  OxideBuildConfig Verbose = A;
  Verbose.Verbose = true;
  Verbose.DumpDir = Tmp.path();
  EXPECT_NE(linkStamp(A), linkStamp(B));
  EXPECT_EQ(linkStamp(A), linkStamp(Verbose)); // output-neutral settings

  fs::path Path = linkStampPath(Tmp / "target", "vecadd", "debug");
  EXPECT_EQ(Path, Tmp / "target/oxide/.stamps/vecadd-debug");
  EXPECT_EQ(linkStampPath("/t", "vecadd", "release"),
            fs::path("/t/oxide/.stamps/vecadd-release"));
  EXPECT_FALSE(linkStampMatches(Path, linkStamp(A)));
  writeLinkStamp(Path, linkStamp(A));
  EXPECT_TRUE(linkStampMatches(Path, linkStamp(A)));
  EXPECT_FALSE(linkStampMatches(Path, linkStamp(B)));

  // A rebuilt oxide-link changes the stamp.
  std::string Before = linkStamp(A);
  writeExecutable(Tmp / "oxide-link", "#!/bin/sh\n# rebuilt, and longer\n");
  EXPECT_NE(linkStamp(A), Before);
}

TEST(CargoTest, LinkStampsAreKeptPerToolchain) {
  Environment Env;
  EXPECT_EQ(toolchainOf(Env), "");
  Env.set("RUSTC", "/opt/rust/bin/rustc");
  EXPECT_EQ(toolchainOf(Env), "/opt/rust/bin/rustc");
  Env.set("RUSTUP_TOOLCHAIN", "nightly-x86_64-unknown-linux-gnu");
  EXPECT_EQ(toolchainOf(Env), "nightly-x86_64-unknown-linux-gnu");

  EXPECT_EQ(
      linkStampPath("/t", "vecadd", "debug", "nightly-x86_64-unknown-linux-gnu"),
      fs::path("/t/oxide/.stamps/"
               "vecadd-debug@nightly-x86_64-unknown-linux-gnu"));
  EXPECT_EQ(linkStampPath("/t", "vecadd", "release", "/opt/rust/bin/rustc"),
            fs::path("/t/oxide/.stamps/vecadd-release@_opt_rust_bin_rustc"));

  TempDir Tmp;
  writeExecutable(Tmp / "oxide-link", "#!/bin/sh\n");
  OxideBuildConfig Stable = config(Tmp / "oxide-link", "sm_80");
  Stable.Toolchain = "stable";
  OxideBuildConfig Nightly = Stable;
  Nightly.Toolchain = "nightly";
  EXPECT_NE(linkStamp(Stable), linkStamp(Nightly));
}

TEST(CargoTest, CargoFailureMessages) {
  ProcessResult NotStarted;
  NotStarted.StartError = "`cargo` not found";
  Error E = cargoFailure("cargo build", NotStarted);
  EXPECT_TRUE(contains(E.Message, "cannot run cargo"));
  EXPECT_TRUE(contains(E.Hint, "rustup"));

  ProcessResult Failed;
  Failed.Started = true;
  Failed.ExitCode = 101;
  Error F = cargoFailure("cargo build", Failed);
  EXPECT_EQ(F.Message, "cargo build failed (exit code 101)");
  EXPECT_TRUE(contains(F.Hint, "--verbose"));
}

} // namespace

namespace {

/// What rustc 1.95 prints when oxide-link fails (shortened command line).
const char *RustcLinkFailure =
    "   Compiling gemm_bf16 v0.1.0 (/ws/examples/gemm_bf16)\n"
    "error: linking with `/opt/oxide/bin/oxide-link` failed: exit status: 1\n"
    "  |\n"
    "  = note:  \"/opt/oxide/bin/oxide-link\" \"-m64\" \"/ws/target/debug/deps/x.o\" \"-o\" \"/ws/target/debug/deps/gemm_bf16\"\n"
    "  = note: some arguments are omitted. use `--verbose` to show all linker arguments\n"
    "  = note: error: wgmma needs sm_90a, but the kernels are being built for sm_80\n"
    "            --> examples/gemm_bf16/src/lib.rs:262:21\n"
    "             = note: build with `--arch sm_90a`\n"
    "          \n"
    "          error: oxide could not compile the kernels for the GPU (1 error)\n"
    "          \n"
    "\n"
    "error: could not compile `gemm_bf16` (bin \"gemm_bf16\") due to 1 previous error\n";

const char *OxideFirst =
    "   Compiling gemm_bf16 v0.1.0 (/ws/examples/gemm_bf16)\n"
    "error: wgmma needs sm_90a, but the kernels are being built for sm_80\n"
    "  --> examples/gemm_bf16/src/lib.rs:262:21\n"
    "   = note: build with `--arch sm_90a`\n"
    "\n"
    "error: oxide could not compile the kernels for the GPU (1 error)\n"
    "\n"
    "error: could not compile `gemm_bf16` (bin \"gemm_bf16\") due to 1 previous error\n";

} // namespace

TEST(CargoTest, LinkFailureShowsOxideDiagnosticsAlone) {
  // Whole, and in pieces of every size (a pipe splits where it likes).
  for (size_t Piece : {size_t(100000), size_t(1), size_t(7), size_t(64)}) {
    LinkFailureFilter Filter;
    std::string Out;
    std::string_view In = RustcLinkFailure;
    for (size_t At = 0; At < In.size(); At += Piece)
      Out += Filter.feed(In.substr(At, Piece));
    Out += Filter.finish();
    EXPECT_EQ(Out, OxideFirst) << "pieces of " << Piece;
    EXPECT_TRUE(Filter.rewrote());
  }
}

TEST(CargoTest, LinkFailureFilterLeavesEverythingElse) {
  // Another linker's failure, ordinary errors and a progress bar pass as
  // they are.
  std::string Other =
      "error: linking with `cc` failed: exit status: 1\n"
      "  |\n"
      "  = note:  \"cc\" \"-m64\"\n"
      "\n"
      "error[E0425]: cannot find value `x` in this scope\n"
      "\r\x1b[K    Building [=====>   ] 3/10: cuda-core\r";
  LinkFailureFilter Filter;
  std::string Out = Filter.feed(Other);
  EXPECT_EQ(Out + Filter.finish(), Other);
  EXPECT_FALSE(Filter.rewrote());

  // With cargo's colours the header is still found.
  LinkFailureFilter Coloured;
  std::string Text = Coloured.feed(
      "\x1b[1m\x1b[91merror\x1b[0m\x1b[1m: linking with `/o/oxide-link` failed: exit status: 1\x1b[0m\n"
      "  \x1b[1m\x1b[94m|\x1b[0m\n"
      "  \x1b[1m\x1b[94m= \x1b[0m\x1b[1mnote\x1b[0m: error: no kernel\n"
      "\n");
  EXPECT_EQ(Text, "error: no kernel\n");
  EXPECT_EQ(stripAnsi("\x1b[1m\x1b[91merror\x1b[0m: x"), "error: x");
}

// Projects not made by `cargo oxide new` lack the manifest's profile
// overrides; a debug build of the PTX VM ran an emulated 256^3 GEMM fifteen
// times slower. Every cargo command cargo-oxide runs carries them.
TEST(CargoTest, EveryCargoRunOptimisesTheEmulatorCrates) {
  TempDir Dir;
  fs::path Args = Dir / "args";
  fs::path FakeCargo = Dir / "cargo";
  writeExecutable(FakeCargo, "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" +
                                 Args.string() + "'\n");
  Environment Env;
  Env.set("CARGO", FakeCargo.string());
  CargoRunner Runner(Env, /*Verbose=*/false);
  ASSERT_TRUE(Runner.run({"build", "--release"}).succeeded());
  EXPECT_EQ(readFile(Args),
            "build\n--config\nprofile.dev.package.ptx-vm.opt-level=3\n"
            "--config\nprofile.dev.package.cuda-emulator.opt-level=2\n"
            "--release\n");
}

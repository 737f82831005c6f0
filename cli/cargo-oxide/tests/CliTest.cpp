//===- CliTest.cpp - cargo-oxide end to end, with a fake cargo ------------===//
//
// Part of oxide. Runs the real cargo-oxide executable in a temporary workspace
// with CARGO pointing at a shell script that records each call (arguments and
// the oxide variables) and plays the part of cargo: it writes what the device
// linker would dump, or exits with a chosen status. This checks the whole
// command flow - which cargo commands run, in which order, with which
// environment, and what the user sees - without a Rust toolchain or a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"
#include "Process.h"
#include "oxide/Targets.h"

#include "TestSupport.h"

#include <csignal>
#include <dlfcn.h>
#include <gtest/gtest.h>

using namespace oxide::cli;
using namespace oxide::cli::test;

namespace {

const char *FakeCargo = R"sh(#!/bin/sh
# A stand-in for cargo: log the call, then act like the real thing would.
{
  printf 'CALL'; for a in "$@"; do printf ' [%s]' "$a"; done; printf '\n'
  printf '  RUSTFLAGS=%s\n' "${RUSTFLAGS-<unset>}"
  printf '  CARGO_BUILD_RUSTFLAGS=%s\n' "${CARGO_BUILD_RUSTFLAGS-<unset>}"
  printf '  CARGO_INCREMENTAL=%s\n' "${CARGO_INCREMENTAL-<unset>}"
  printf '  OXIDE_ARCH=%s\n' "${OXIDE_ARCH-<unset>}"
  printf '  OXIDE_DUMP_DIR=%s\n' "${OXIDE_DUMP_DIR-<unset>}"
  printf '  OXIDE_VERBOSE=%s\n' "${OXIDE_VERBOSE-<unset>}"
  printf '  CARGO_TARGET_DIR=%s\n' "${CARGO_TARGET_DIR-<unset>}"
} >> "$FAKE_CARGO_LOG"

dump_device_stages() {
  [ -n "$OXIDE_DUMP_DIR" ] || return 0
  printf '; device input\n' > "$OXIDE_DUMP_DIR/device-input.ll"
  printf '; device legal\n' > "$OXIDE_DUMP_DIR/device-legal.ll"
  printf '; device opt\n' > "$OXIDE_DUMP_DIR/device-opt.ll"
  printf '//\n.version 8.0\n.target %s\n.address_size 64\n\n.visible .entry fake_kernel()\n{\n\tret;\n}\n' \
    "$OXIDE_ARCH" > "$OXIDE_DUMP_DIR/vecadd.ptx"
}

case "$1" in
  --version) echo "cargo 1.95.0 (fake)";;
  build) if [ -n "$FAKE_LINK_FAILURE" ]; then
           printf 'error: linking with `/o/oxide-link` failed: exit status: 1\n  |\n' >&2
           printf '  = note:  "/o/oxide-link" "-m64" "a-very-long-command-line"\n' >&2
           printf '  = note: error: wgmma needs sm_90a\n            --> src/main.rs:3:5\n\n' >&2
           printf 'error: could not compile `vecadd`\n' >&2
           exit 101
         fi
         [ "${FAKE_BUILD_EXIT:-0}" = 0 ] && dump_device_stages
         exit "${FAKE_BUILD_EXIT:-0}";;
  run) echo "program output"
       # cargo run execs the program: its signal is cargo's.
       [ -z "$FAKE_RUN_SIGNAL" ] || kill -s "$FAKE_RUN_SIGNAL" $$
       exit "${FAKE_RUN_EXIT:-0}";;
  rustc)
    deps="${CARGO_TARGET_DIR:-$FAKE_TARGET}/debug/deps"
    mkdir -p "$deps"
    echo "// MIR" > "$deps/vecadd-0123456789abcdef.mir"
    echo "; rustc IR" > "$deps/vecadd-0123456789abcdef.ll"
    echo "// unrelated" > "$deps/vecadd_helpers-0123456789abcdef.mir"
    dump_device_stages;;
  clean) ;;
esac
exit 0
)sh";

/// A workspace with two examples, a fake cargo and a fake oxide-link.
class CliTest : public ::testing::Test {
protected:
  TempDir Tmp;
  fs::path Root, Bin, Log;
  Environment Env;

  void SetUp() override {
    Root = Tmp / "ws";
    Bin = Tmp / "bin";
    Log = Tmp / "cargo.log";
    writeFile(Root / "Cargo.toml", "[workspace]\nmembers = [\"examples/*\"]\n");
    writeFile(Root / "examples/vecadd/Cargo.toml",
              "[package]\nname = \"vecadd\"\n");
    writeFile(Root / "examples/vecadd/src/main.rs", "fn main() {}\n");
    writeFile(Root / "examples/matmul/Cargo.toml",
              "[package]\nname = \"gemm\"\n");
    writeFile(Root / "examples/matmul/src/main.rs", "fn main() {}\n");
    writeExecutable(Bin / "cargo", withFakeCargoMetadata(FakeCargo));
    writeExecutable(Bin / "oxide-link", "#!/bin/sh\nexit 0\n");

    // Hermetic: nothing from the caller's shell leaks in.
    Env.set("PATH", "/usr/bin:/bin");
    Env.set("HOME", Tmp.path().string());
    Env.set("CARGO", (Bin / "cargo").string());
    Env.set("OXIDE_LINK", (Bin / "oxide-link").string());
    Env.set("FAKE_CARGO_LOG", Log.string());
    Env.set("FAKE_TARGET", (Root / "target").string());
    Env.set("NO_COLOR", "1");
  }

  /// Runs cargo-oxide as cargo would (`cargo-oxide oxide ARGS…`) in \p Cwd;
  /// stdout and stderr together.
  ProcessResult oxide(const std::vector<std::string> &Args,
                      std::optional<fs::path> Cwd = std::nullopt) {
    std::vector<std::string> Argv = {CARGO_OXIDE_EXE, "oxide"};
    Argv.insert(Argv.end(), Args.begin(), Args.end());
    RunOptions Options;
    Options.Env = &Env;
    Options.CaptureStdout = true;
    Options.CaptureStderr = true;
    Options.WorkingDir = Cwd ? *Cwd : Root;
    return runProcess(Argv, Options);
  }

  std::string log() const { return readFile(Log); }
  void clearLog() const { fs::remove(Log); }
};

#define EXPECT_CONTAINS(Haystack, Needle)                                      \
  EXPECT_TRUE(contains(Haystack, Needle))                                      \
      << "expected to find:\n  " << (Needle) << "\nin:\n"                      \
      << (Haystack)
#define EXPECT_NOT_CONTAINS(Haystack, Needle)                                  \
  EXPECT_FALSE(contains(Haystack, Needle))                                     \
      << "expected not to find:\n  " << (Needle) << "\nin:\n"                  \
      << (Haystack)

TEST_F(CliTest, HelpAndVersion) {
  ProcessResult Help = oxide({"--help"});
  EXPECT_EQ(Help.ExitCode, 0);
  EXPECT_CONTAINS(Help.Output, "Commands:");
  EXPECT_CONTAINS(Help.Output, "pipeline [NAME]");
  ProcessResult RunHelp = oxide({"help", "run"});
  EXPECT_EQ(RunHelp.ExitCode, 0);
  EXPECT_CONTAINS(RunHelp.Output, "Usage: cargo oxide run [NAME]");
  EXPECT_EQ(oxide({}).ExitCode, 0);
  EXPECT_CONTAINS(oxide({"--version"}).Output, "cargo-oxide ");
}

TEST_F(CliTest, UnknownSubcommand) {
  ProcessResult R = oxide({"biuld"});
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_CONTAINS(R.Output, "error: no such subcommand: `biuld`");
  EXPECT_CONTAINS(R.Output, "hint: did you mean `cargo oxide build`?");
}

TEST_F(CliTest, BuildNamedExampleWithTheOxideEnvironment) {
  ProcessResult R = oxide({"build", "vecadd", "--arch", "sm_90"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  std::string L = log();
  // First build: the package is cleaned so that it is linked by oxide-link.
  std::string Manifest = (Root / "examples/vecadd/Cargo.toml").string();
  EXPECT_CONTAINS(L, "CALL [clean]" + EmulatorProfile + " [--quiet] [--manifest-path] [" +
                         (Root / "Cargo.toml").string() +
                         "] [--package] [vecadd]\n");
  EXPECT_CONTAINS(L, "CALL [build]" + EmulatorProfile + " [--manifest-path] [" + Manifest + "]\n");
  // The flags join .cargo/config.toml's build.rustflags (RUSTFLAGS would
  // replace them).
  EXPECT_CONTAINS(L, "  CARGO_BUILD_RUSTFLAGS=-C linker=" +
                         (Bin / "oxide-link").string() + " -C save-temps\n");
  EXPECT_CONTAINS(L, "  RUSTFLAGS=<unset>\n");
  EXPECT_CONTAINS(L, "CARGO_INCREMENTAL=0\n");
  EXPECT_CONTAINS(L, "OXIDE_ARCH=sm_90\n");
  EXPECT_CONTAINS(L, "OXIDE_DUMP_DIR=<unset>\n");
  EXPECT_CONTAINS(L, "OXIDE_VERBOSE=<unset>\n");
  EXPECT_TRUE(fs::exists(Root / "target/oxide/.stamps/vecadd-debug"));
}

TEST_F(CliTest, CargoFlagsReachCargo) {
  ProcessResult R = oxide({"run", "-p", "vecadd", "--bin", "vecadd", "-j", "2",
                           "--locked", "--", "x"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  std::string Manifest = (Root / "examples/vecadd/Cargo.toml").string();
  EXPECT_CONTAINS(log(), "CALL [build]" + EmulatorProfile +
                             " [--manifest-path] [" + Manifest +
                             "] [--bin] [vecadd] [--jobs] [2] [--locked]\n");
  EXPECT_CONTAINS(log(), "CALL [run]" + EmulatorProfile +
                             " [--quiet] [--manifest-path] [" + Manifest +
                             "] [--bin] [vecadd] [--jobs] [2] [--locked] [--] "
                             "[x]\n");
  // --manifest-path picks the package as the directory would.
  clearLog();
  R = oxide({"build", "--manifest-path", "examples/matmul/Cargo.toml"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(log(), "[--package] [gemm]");
  // A custom profile builds into its own folder and is passed on.
  clearLog();
  R = oxide({"build", "vecadd", "--profile", "fast"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(log(), "[--profile] [fast]");
  EXPECT_TRUE(fs::exists(Root / "target/oxide/.stamps/vecadd-fast"));
}

TEST_F(CliTest, RunSaysWhichSignalKilledTheProgram) {
  Env.set("OXIDE_EMULATE", "0");
  Env.set("FAKE_RUN_SIGNAL", "SEGV");
  ProcessResult R = oxide({"run", "vecadd"});
  EXPECT_EQ(R.ExitCode, 128 + SIGSEGV);
  EXPECT_CONTAINS(R.Output, "error: `vecadd` crashed: killed by SIGSEGV (signal 11");
  EXPECT_CONTAINS(R.Output, "invalid pointer");
  Env.set("FAKE_RUN_SIGNAL", "ABRT");
  R = oxide({"run", "vecadd"});
  EXPECT_EQ(R.ExitCode, 128 + SIGABRT);
  EXPECT_CONTAINS(R.Output, "killed by SIGABRT");
  EXPECT_CONTAINS(R.Output, "aborted");
  // A plain failure stays the program's own business.
  Env.unset("FAKE_RUN_SIGNAL");
  Env.set("FAKE_RUN_EXIT", "3");
  R = oxide({"run", "vecadd"});
  EXPECT_EQ(R.ExitCode, 3);
  EXPECT_NOT_CONTAINS(R.Output, "crashed");
}

TEST_F(CliTest, MissingPtxasIsWarnedAboutOnce) {
  Env.set("OXIDE_CUDA_PATH", (Tmp / "no-cuda").string());
  Env.set("OXIDE_EMULATE", "0");
  ProcessResult R = oxide({"run", "vecadd"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  size_t First = R.Output.find("warning: ptxas not found");
  ASSERT_NE(First, std::string::npos) << R.Output;
  EXPECT_EQ(R.Output.find("warning: ptxas not found", First + 1),
            std::string::npos)
      << R.Output;
  EXPECT_CONTAINS(R.Output, "the PTX will not be validated");
  // With a toolkit, nothing is said.
  writeExecutable(Tmp / "cuda/bin/ptxas", "#!/bin/sh\nexit 0\n");
  Env.set("OXIDE_CUDA_PATH", (Tmp / "cuda").string());
  EXPECT_NOT_CONTAINS(oxide({"build", "vecadd"}).Output, "ptxas not found");
}

TEST_F(CliTest, TargetDirFlagReachesEveryCargoCommand) {
  ProcessResult R = oxide({"pipeline", "vecadd", "--target-dir", "out"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  std::string L = log();
  EXPECT_CONTAINS(L, "[clean]");
  EXPECT_NOT_CONTAINS(L, "CARGO_TARGET_DIR=<unset>");
  EXPECT_CONTAINS(L, "CARGO_TARGET_DIR=" + (Root / "out").string() + "\n");
  EXPECT_TRUE(fs::exists(Root / "out/oxide/vecadd/pipeline"));
  EXPECT_FALSE(fs::exists(Root / "target/oxide"));
}

TEST_F(CliTest, TargetDirIsCargosOwn) {
  // What cargo metadata reports (e.g. build.target-dir of a
  // .cargo/config.toml) is where inspect looks, not <root>/target.
  fs::path Custom = Root / "elsewhere";
  Env.set("FAKE_TARGET", Custom.string());
  ProcessResult R = oxide({"inspect", "vecadd"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(log(), "OXIDE_DUMP_DIR=" + (Custom / "oxide/vecadd").string());
  EXPECT_TRUE(fs::exists(Custom / "oxide/vecadd/vecadd.ptx"));
}

TEST_F(CliTest, TestNameThatIsNoPackageIsAFilter) {
  Env.set("OXIDE_EMULATE", "0");
  ProcessResult R = oxide({"test", "adds_two", "more", "--", "--nocapture"},
                          Root / "examples/vecadd");
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(log(), "[adds_two] [more] [--nocapture]");
  EXPECT_CONTAINS(log(), "[--manifest-path] [" +
                             (Root / "examples/vecadd/Cargo.toml").string());
}

TEST_F(CliTest, MetadataPrintsTheResolvedSettings) {
  writeFile(Root / "examples/matmul/Cargo.toml",
            "[package]\nname = \"gemm\"\n\n[package.metadata.oxide]\n"
            "arch = \"sm_90a\"\nemulate = \"no: needs wgmma\"\n");
  Env.set("OXIDE_ARCH", "sm_86");
  ProcessResult R = oxide({"metadata", "gemm", "--print", "arch"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_EQ(R.Output, "sm_90a\n");
  EXPECT_EQ(oxide({"metadata", "gemm", "--print", "emulate"}).Output,
            "no: needs wgmma\n");
  // The same order as every command: --arch, the package, OXIDE_ARCH.
  EXPECT_EQ(oxide({"metadata", "gemm", "--print=arch", "--arch", "sm_100"}).Output,
            "sm_100\n");
  EXPECT_EQ(oxide({"metadata", "vecadd", "--print", "arch"}).Output, "sm_86\n");
  EXPECT_EQ(oxide({"metadata", "vecadd", "--print", "emulate"}).Output, "\n");
  EXPECT_EQ(oxide({"metadata", "matmul", "--print", "package"}).Output, "gemm\n");
  R = oxide({"metadata", "gemm"});
  EXPECT_CONTAINS(R.Output, "arch = sm_90a (from [package.metadata.oxide] arch");
  EXPECT_CONTAINS(R.Output, "target-dir = " + (Root / "target").string());
}

TEST_F(CliTest, ExistingRustFlagsAndArchFromEnvironment) {
  Env.set("RUSTFLAGS", "--cfg user_flag");
  Env.set("OXIDE_ARCH", "sm_86");
  ASSERT_EQ(oxide({"build", "vecadd", "--release", "-v"}).ExitCode, 0);
  std::string L = log();
  EXPECT_CONTAINS(L, "[build]" + EmulatorProfile + " [--manifest-path] [" +
                         (Root / "examples/vecadd/Cargo.toml").string() +
                         "] [--release] [--verbose]\n");
  EXPECT_CONTAINS(L, "RUSTFLAGS=--cfg user_flag -C linker=");
  EXPECT_CONTAINS(L, "OXIDE_ARCH=sm_86\n");
  EXPECT_CONTAINS(L, "OXIDE_VERBOSE=1\n");
}

TEST_F(CliTest, RelinksOnlyWhenTheArchChanges) {
  // Named, so that a GPU on the test machine does not choose it.
  Env.set("OXIDE_ARCH", "sm_80");
  ASSERT_EQ(oxide({"build", "vecadd"}).ExitCode, 0);
  clearLog();
  ProcessResult Same = oxide({"build", "vecadd"});
  ASSERT_EQ(Same.ExitCode, 0);
  EXPECT_NOT_CONTAINS(log(), "[clean]");
  EXPECT_NOT_CONTAINS(Same.Output, "Relinking");

  clearLog();
  ProcessResult Other = oxide({"build", "vecadd", "--arch", "sm_90"});
  ASSERT_EQ(Other.ExitCode, 0);
  EXPECT_CONTAINS(log(), "[clean]" + EmulatorProfile + " [--quiet]");
  EXPECT_CONTAINS(Other.Output, "Relinking vecadd (sm_90");

  // The release profile keeps its own stamp.
  clearLog();
  ASSERT_EQ(oxide({"build", "vecadd", "--arch", "sm_90", "-r"}).ExitCode, 0);
  EXPECT_CONTAINS(log(), "[clean]" + EmulatorProfile + " [--quiet] [--manifest-path] [" +
                             (Root / "Cargo.toml").string() +
                             "] [--release] [--package] [vecadd]");
}

TEST_F(CliTest, EachToolchainHasItsOwnStamp) {
  Env.set("RUSTUP_TOOLCHAIN", "stable");
  ASSERT_EQ(oxide({"build", "vecadd", "--arch", "sm_90"}).ExitCode, 0);
  Env.set("RUSTUP_TOOLCHAIN", "nightly");
  ASSERT_EQ(oxide({"build", "vecadd", "--arch", "sm_90"}).ExitCode, 0);
  EXPECT_TRUE(fs::exists(Root / "target/oxide/.stamps/vecadd-debug@stable"));
  EXPECT_TRUE(fs::exists(Root / "target/oxide/.stamps/vecadd-debug@nightly"));
  // Back on stable with the same arch: nothing to relink.
  clearLog();
  Env.set("RUSTUP_TOOLCHAIN", "stable");
  ASSERT_EQ(oxide({"build", "vecadd", "--arch", "sm_90"}).ExitCode, 0);
  EXPECT_NOT_CONTAINS(log(), "[clean]");

  // `clean NAME` forgets the package's stamps of every toolchain.
  ASSERT_EQ(oxide({"clean", "vecadd"}).ExitCode, 0);
  EXPECT_FALSE(fs::exists(Root / "target/oxide/.stamps/vecadd-debug@stable"));
  EXPECT_FALSE(fs::exists(Root / "target/oxide/.stamps/vecadd-debug@nightly"));
}

TEST_F(CliTest, BuildByPackageNameAndFromInsideThePackage) {
  ASSERT_EQ(oxide({"build", "gemm"}).ExitCode, 0);
  EXPECT_CONTAINS(log(), "[build]" + EmulatorProfile + " [--manifest-path] [" +
                             (Root / "examples/matmul/Cargo.toml").string());
  clearLog();
  ASSERT_EQ(oxide({"build"}, Root / "examples/vecadd/src").ExitCode, 0);
  EXPECT_CONTAINS(log(), "[build]" + EmulatorProfile + " [--manifest-path] [" +
                             (Root / "examples/vecadd/Cargo.toml").string());
}

TEST_F(CliTest, BuildsAMemberOutsideExamplesByName) {
  writeFile(Root / "Cargo.toml",
            "[workspace]\nmembers = [\"examples/*\", \"tests/gpu/*\"]\n");
  writeFile(Root / "tests/gpu/panic_oob/Cargo.toml",
            "[package]\nname = \"panic_oob\"\n");
  writeFile(Root / "tests/gpu/panic_oob/src/main.rs", "fn main() {}\n");
  ASSERT_EQ(oxide({"build", "panic_oob", "--arch", "sm_90"}).ExitCode, 0);
  EXPECT_CONTAINS(log(),
                  "[build]" + EmulatorProfile + " [--manifest-path] [" +
                      (Root / "tests/gpu/panic_oob/Cargo.toml").string() + "]");
  // A workspace build relinks (and stamps) it too.
  clearLog();
  ASSERT_EQ(oxide({"build", "--arch", "sm_86"}).ExitCode, 0);
  EXPECT_CONTAINS(log(), "[--package] [panic_oob]");
  EXPECT_TRUE(fs::exists(Root / "target/oxide/.stamps/panic_oob-debug"));
}

TEST_F(CliTest, BuildAtTheWorkspaceRootBuildsEverything) {
  ASSERT_EQ(oxide({"build"}).ExitCode, 0);
  std::string L = log();
  EXPECT_CONTAINS(L, "[build]" + EmulatorProfile + " [--manifest-path] [" +
                         (Root / "Cargo.toml").string() + "] [--workspace]");
  EXPECT_CONTAINS(L, "[--package] [gemm] [--package] [vecadd]");
}

TEST_F(CliTest, UnknownExampleListsTheAvailableOnes) {
  ProcessResult R = oxide({"run", "nosuch"});
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_CONTAINS(R.Output, "error: no example or package named `nosuch`");
  EXPECT_CONTAINS(R.Output,
                  "hint: available examples: matmul (package gemm), vecadd");
  EXPECT_FALSE(fs::exists(Log)); // cargo never ran
}

TEST_F(CliTest, RunNeedsOnePackage) {
  ProcessResult R = oxide({"run"});
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_CONTAINS(R.Output, "error: no example named");
  EXPECT_CONTAINS(R.Output, "hint: name one");
}

/// The OXIDE_ARCH values the fake cargo saw, in call order.
std::vector<std::string> archesIn(const std::string &Log) {
  std::vector<std::string> Out;
  for (size_t At = Log.find("OXIDE_ARCH="); At != std::string::npos;
       At = Log.find("OXIDE_ARCH=", At + 1)) {
    size_t Start = At + std::string_view("OXIDE_ARCH=").size();
    Out.push_back(Log.substr(Start, Log.find('\n', Start) - Start));
  }
  return Out;
}

TEST_F(CliTest, PackageArchIsHonouredByEveryCommand) {
  // examples/matmul is the package `gemm`; its Cargo.toml names its target,
  // as examples/gemm_bf16's does (wgmma needs sm_90a).
  writeFile(Root / "examples/matmul/Cargo.toml",
            "[package]\nname = \"gemm\"\n\n[package.metadata.oxide]\n"
            "arch = \"sm_90a\"\n");
  Env.set("OXIDE_ARCH", "sm_86"); // the package's own wins over the user's default
  Env.set("OXIDE_EMULATE", "0");  // run and test on "the GPU" (the fake cargo)
  for (std::vector<std::string> Command :
       {std::vector<std::string>{"build", "gemm"}, {"run", "gemm"},
        {"test", "gemm"}, {"inspect", "gemm"}, {"pipeline", "gemm"}}) {
    clearLog();
    ProcessResult R = oxide(Command);
    std::vector<std::string> Seen = archesIn(log());
    ASSERT_FALSE(Seen.empty()) << Command[0] << ": cargo never ran\n" << R.Output;
    for (const std::string &Arch : Seen)
      EXPECT_EQ(Arch, "sm_90a") << Command[0] << "\n" << log();
  }
  // --arch still wins, and -v says where the target came from.
  clearLog();
  ProcessResult R = oxide({"build", "gemm", "--arch", "sm_100", "-v"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(log(), "OXIDE_ARCH=sm_100\n");
  EXPECT_CONTAINS(R.Output, "sm_100 (from --arch)");
  R = oxide({"build", "gemm", "-v"});
  EXPECT_CONTAINS(R.Output, "sm_90a (from [package.metadata.oxide] arch in " +
                                (Root / "examples/matmul/Cargo.toml").string());
}

TEST_F(CliTest, ArchDefaultsToTheGpuElseTheDocumentedDefault) {
  ProcessResult R = oxide({"build", "vecadd", "-v"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  // What the same detection finds in this process: the GPU's target on a
  // GPU machine, the table's default elsewhere.
  std::string Expected(oxide::DefaultTargetName);
  if (std::optional<ComputeCapability> CC = detectGpu())
    if (const oxide::GpuTarget *T =
            oxide::targetForComputeCapability(CC->Major, CC->Minor))
      Expected = std::string(T->Name);
  EXPECT_CONTAINS(log(), "OXIDE_ARCH=" + Expected + "\n");
}

TEST_F(CliTest, UnknownArchIsRefusedBeforeCargoRuns) {
  ProcessResult Flag = oxide({"build", "vecadd", "--arch", "sm_999"});
  EXPECT_EQ(Flag.ExitCode, 1);
  EXPECT_CONTAINS(Flag.Output, "error: unknown GPU architecture `sm_999`");
  EXPECT_CONTAINS(Flag.Output, "sm_80, sm_86");
  EXPECT_FALSE(fs::exists(Log));

  Env.set("OXIDE_ARCH", "sm_100f0");
  ProcessResult FromEnv = oxide({"inspect", "vecadd"});
  EXPECT_EQ(FromEnv.ExitCode, 1);
  EXPECT_CONTAINS(FromEnv.Output, "unknown GPU architecture `sm_100f0`");
  EXPECT_CONTAINS(FromEnv.Output, "(OXIDE_ARCH)");
  EXPECT_FALSE(fs::exists(Log));

  writeFile(Root / "examples/matmul/Cargo.toml",
            "[package]\nname = \"gemm\"\n[package.metadata.oxide]\n"
            "arch = \"hopper\"\n");
  ProcessResult FromPackage = oxide({"run", "gemm"});
  EXPECT_EQ(FromPackage.ExitCode, 1);
  EXPECT_CONTAINS(FromPackage.Output, "unknown GPU architecture `hopper`");
  EXPECT_CONTAINS(FromPackage.Output,
                  (Root / "examples/matmul/Cargo.toml").string());
  EXPECT_FALSE(fs::exists(Log));
}

TEST_F(CliTest, PackageThatCannotBeEmulatedIsRefusedWithItsReason) {
  writeFile(Root / "examples/matmul/Cargo.toml",
            "[package]\nname = \"gemm\"\n[package.metadata.oxide]\n"
            "emulate = \"no: TMA and wgmma, which no emulator mode models\"\n");
  for (std::vector<std::string> Command :
       {std::vector<std::string>{"run", "gemm", "--emulate"},
        {"run", "gemm", "--emulate=host"},
        {"test", "gemm", "--emulate=ptx"}}) {
    ProcessResult R = oxide(Command);
    EXPECT_EQ(R.ExitCode, 1) << R.Output;
    EXPECT_CONTAINS(R.Output, "error: `gemm` cannot run on the CPU emulator: "
                              "TMA and wgmma, which no emulator mode models");
    EXPECT_CONTAINS(R.Output, "[package.metadata.oxide] emulate");
    EXPECT_FALSE(fs::exists(Log)) << "refused before anything is built";
  }
  // OXIDE_EMULATE chosen by the user counts too; OXIDE_EMULATE=0 is the GPU.
  Env.set("OXIDE_EMULATE", "1");
  EXPECT_EQ(oxide({"run", "gemm"}).ExitCode, 1);
  Env.set("OXIDE_EMULATE", "0");
  ProcessResult Gpu = oxide({"run", "gemm"});
  EXPECT_EQ(Gpu.ExitCode, 0) << Gpu.Output;
  EXPECT_CONTAINS(Gpu.Output, "program output");
  // A package that says nothing is emulated as asked.
  clearLog();
  EXPECT_EQ(oxide({"run", "vecadd", "--emulate"}).ExitCode, 0);
}

TEST_F(CliTest, DeviceLinkErrorsComeFirstAndAlone) {
  Env.set("FAKE_LINK_FAILURE", "1");
  ProcessResult R = oxide({"build", "vecadd", "--arch", "sm_90"});
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_EQ(R.Output.find("error: wgmma needs sm_90a\n  --> src/main.rs:3:5\n"), 0u)
      << R.Output;
  EXPECT_NOT_CONTAINS(R.Output, "linking with");
  EXPECT_NOT_CONTAINS(R.Output, "a-very-long-command-line");
  EXPECT_CONTAINS(R.Output, "--verbose shows the device linker's command line");
  // With --verbose, all of rustc's report.
  ProcessResult Verbose = oxide({"build", "vecadd", "--arch", "sm_90", "-v"});
  EXPECT_CONTAINS(Verbose.Output, "error: linking with `/o/oxide-link` failed");
  EXPECT_CONTAINS(Verbose.Output, "a-very-long-command-line");
}

TEST_F(CliTest, RunBuildsThenRunsAndReturnsTheProgramStatus) {
  Env.set("FAKE_RUN_EXIT", "7");
  ProcessResult R = oxide({"run", "vecadd", "--", "a b", "--c"});
  EXPECT_EQ(R.ExitCode, 7);
  EXPECT_CONTAINS(R.Output, "program output");
  EXPECT_NOT_CONTAINS(R.Output, "error:");
  std::string L = log();
  size_t Build = L.find("CALL [build]");
  size_t Run = L.find("CALL [run]" + EmulatorProfile + " [--quiet] [--manifest-path] [" +
                      (Root / "examples/vecadd/Cargo.toml").string() +
                      "] [--] [a b] [--c]\n");
  ASSERT_NE(Build, std::string::npos) << L;
  ASSERT_NE(Run, std::string::npos) << L;
  EXPECT_LT(Build, Run);
}

TEST_F(CliTest, BuildFailureIsReportedAndNothingRuns) {
  Env.set("FAKE_BUILD_EXIT", "101");
  ProcessResult R = oxide({"run", "vecadd"});
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_CONTAINS(R.Output, "error: cargo build failed (exit code 101)");
  EXPECT_CONTAINS(R.Output, "hint: ");
  EXPECT_NOT_CONTAINS(log(), "CALL [run]");
  EXPECT_FALSE(fs::exists(Root / "target/oxide/.stamps/vecadd-debug"));
}

TEST_F(CliTest, MissingCargo) {
  Env.set("CARGO", (Tmp / "no-cargo-here").string());
  ProcessResult R = oxide({"build", "vecadd"});
  EXPECT_NE(R.ExitCode, 0);
  EXPECT_CONTAINS(R.Output, "error: cannot run cargo");
  EXPECT_CONTAINS(R.Output, "hint: install Rust with rustup");
}

TEST_F(CliTest, MissingDeviceLinker) {
  Env.set("OXIDE_LINK", (Tmp / "missing-oxide-link").string());
  ProcessResult R = oxide({"build", "vecadd"});
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_CONTAINS(R.Output, "error: device linker not found");
  EXPECT_CONTAINS(R.Output, "hint: point OXIDE_LINK at an executable");
  EXPECT_FALSE(fs::exists(Log));
}

TEST_F(CliTest, InspectPrintsThePtx) {
  ProcessResult R = oxide({"inspect", "vecadd", "--arch", "sm_90"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(R.Output, "// vecadd.ptx (sm_90)");
  EXPECT_CONTAINS(R.Output, ".target sm_90");
  EXPECT_CONTAINS(R.Output, ".visible .entry fake_kernel()");
  fs::path Dump = Root / "target/oxide/vecadd";
  EXPECT_CONTAINS(log(), "OXIDE_DUMP_DIR=" + Dump.string() + "\n");
  // The package is cleaned every time, so the linker always runs.
  EXPECT_CONTAINS(log(), "[clean]" + EmulatorProfile + " [--quiet]");
  EXPECT_TRUE(fs::exists(Dump / "vecadd.ptx"));
}

TEST_F(CliTest, InspectWithoutPtxIsAnError) {
  // A cargo whose link dumps nothing, as when the package has no kernel.
  writeExecutable(Bin / "cargo", withFakeCargoMetadata("#!/bin/sh\nexit 0\n"));
  ProcessResult R = oxide({"inspect", "vecadd"});
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_CONTAINS(R.Output, "error: the device linker wrote no PTX");
  EXPECT_CONTAINS(R.Output, "#[kernel]");
}

TEST_F(CliTest, PipelineWithoutTheCudaToolkit) {
  Env.set("OXIDE_CUDA_PATH", (Tmp / "no-cuda").string());
  ProcessResult R = oxide({"pipeline", "vecadd"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  fs::path Dir = Root / "target/oxide/vecadd/pipeline";
  EXPECT_CONTAINS(log(), "CALL [rustc]" + EmulatorProfile + " [--manifest-path] [" +
                             (Root / "examples/vecadd/Cargo.toml").string() +
                             "] [--bin] [vecadd] [--] "
                             "[--emit=mir,llvm-ir,link]\n");
  EXPECT_CONTAINS(log(), "OXIDE_DUMP_DIR=" + Dir.string() + "\n");
  for (const char *File :
       {"1-rustc.mir", "2-rustc.ll", "3-device-input.ll", "4-device-legal.ll",
        "5-device-opt.ll", "6-vecadd.ptx"}) {
    EXPECT_TRUE(fs::exists(Dir / File)) << File;
    EXPECT_CONTAINS(R.Output, (Dir / File).string());
  }
  EXPECT_EQ(readFile(Dir / "1-rustc.mir"), "// MIR\n");
  EXPECT_CONTAINS(R.Output, "pipeline of `vecadd` (sm_80, debug)");
  EXPECT_CONTAINS(R.Output, "   1  Rust MIR");
  EXPECT_CONTAINS(R.Output, "   6  PTX (sm_80)");
  EXPECT_CONTAINS(R.Output, "   7  cubin (ptxas -arch=sm_80)");
  EXPECT_CONTAINS(R.Output, "skipped: ptxas not found");
  EXPECT_FALSE(fs::exists(Dir / "device-opt.ll")); // renamed, not copied
}

TEST_F(CliTest, PipelineRunsPtxasWhereItExists) {
  fs::path Ptxas = "/usr/local/cuda/bin/ptxas";
  if (!isExecutableFile(Ptxas))
    GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda";
  Env.set("OXIDE_CUDA_PATH", "/usr/local/cuda");
  ProcessResult R = oxide({"pipeline", "vecadd", "--arch", "sm_90"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  fs::path Dir = Root / "target/oxide/vecadd/pipeline";
  EXPECT_TRUE(fs::exists(Dir / "7-vecadd.cubin"));
  EXPECT_CONTAINS(R.Output, "   7  cubin (ptxas -arch=sm_90)");
  EXPECT_CONTAINS(R.Output, (Dir / "7-vecadd.cubin").string());
}

TEST_F(CliTest, PipelineReportsMissingDeviceStages) {
  // A fake cargo whose "linker" writes nothing.
  writeExecutable(Bin / "cargo", withFakeCargoMetadata("#!/bin/sh\nexit 0\n"));
  Env.set("OXIDE_CUDA_PATH", (Tmp / "no-cuda").string());
  ProcessResult R = oxide({"pipeline", "vecadd"});
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_CONTAINS(R.Output,
                  "missing: the device linker wrote no device-opt.ll");
  EXPECT_CONTAINS(R.Output, "error: the device linker wrote no PTX");
}

TEST_F(CliTest, CleanOnePackage) {
  writeFile(Root / "target/oxide/vecadd/vecadd.ptx", "x");
  writeFile(Root / "target/oxide/gemm/gemm.ptx", "x");
  ProcessResult R = oxide({"clean", "vecadd"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(log(), "CALL [clean]" + EmulatorProfile + " [--manifest-path] [" +
                             (Root / "Cargo.toml").string() +
                             "] [--package] [vecadd]\n");
  EXPECT_FALSE(fs::exists(Root / "target/oxide/vecadd"));
  EXPECT_TRUE(fs::exists(Root / "target/oxide/gemm"));
}

TEST_F(CliTest, CleanEverything) {
  writeFile(Root / "target/oxide/vecadd/vecadd.ptx", "x");
  ASSERT_EQ(oxide({"clean"}).ExitCode, 0);
  EXPECT_CONTAINS(log(), "CALL [clean]" + EmulatorProfile + " [--manifest-path] [" +
                             (Root / "Cargo.toml").string() + "]\n");
  EXPECT_FALSE(fs::exists(Root / "target/oxide"));
}

TEST_F(CliTest, NewCreatesARunnableProject) {
  // What setup leaves: the registry in cargo's home, oxide-link on PATH.
  Env.set("CARGO_HOME", (Tmp / "cargo-home").string());
  fs::create_directories(Tmp / "cargo-home/oxide-registry");
  Env.set("PATH", Bin.string() + ":/usr/bin:/bin");
  ProcessResult R = oxide({"new", "my-kernel"}, Tmp.path());
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(R.Output, "Created oxide project `my-kernel`");
  EXPECT_CONTAINS(R.Output, "cd my-kernel && cargo oxide run");
  EXPECT_NOT_CONTAINS(R.Output, "warning");
  std::string Toml = readFile(Tmp / "my-kernel/Cargo.toml");
  EXPECT_CONTAINS(Toml, "name = 'my-kernel'");
  EXPECT_CONTAINS(Toml, "cuda-host = { version = \"0.1\", registry = \"oxide\" }");
  EXPECT_NOT_CONTAINS(Toml, Tmp.path().string());
  EXPECT_CONTAINS(readFile(Tmp / "my-kernel/src/main.rs"),
                  "load_kernel_module(&ctx, \"my_kernel\")");
  EXPECT_EQ(readFile(Tmp / "my-kernel/.gitignore"), "/target\n");

  // The new project is a package cargo oxide can build with no name given.
  ASSERT_EQ(oxide({"build"}, Tmp / "my-kernel").ExitCode, 0);
  EXPECT_CONTAINS(log(), "[build]" + EmulatorProfile + " [--manifest-path] [" +
                             (Tmp / "my-kernel/Cargo.toml").string() + "]");

  ProcessResult Again = oxide({"new", "my-kernel"}, Tmp.path());
  EXPECT_EQ(Again.ExitCode, 1);
  EXPECT_CONTAINS(Again.Output, "already exists");
}

TEST_F(CliTest, NewWithoutSetupSaysWhatIsMissing) {
  Env.set("CARGO_HOME", (Tmp / "empty-cargo-home").string());
  ProcessResult R = oxide({"new", "k"}, Tmp.path()); // PATH: /usr/bin:/bin
  EXPECT_EQ(R.ExitCode, 0) << R.Output; // the files are right; setup is missing
  EXPECT_CONTAINS(R.Output, "warning: the registry `oxide` is not installed");
  EXPECT_CONTAINS(R.Output, "scripts/install-crates.sh");
  EXPECT_CONTAINS(R.Output, "warning: oxide-link is not on PATH");
  EXPECT_TRUE(fs::exists(Tmp / "k/Cargo.toml"));
}

TEST_F(CliTest, NewRejectsBadNames) {
  ProcessResult R = oxide({"new", "9lives"}, Tmp.path());
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_CONTAINS(R.Output, "starts with a digit");
}

TEST_F(CliTest, DoctorReportsEveryCheck) {
  // A rustc whose LLVM is too new, to see the pairing rule fail.
  writeExecutable(Bin / "rustc",
                  "#!/bin/sh\nprintf 'rustc 9.0.0 (x 2030-01-01)\\nrelease: "
                  "9.0.0\\nLLVM version: 99.0.1\\n'\n");
  Env.set("RUSTC", (Bin / "rustc").string());
  ProcessResult R = oxide({"doctor"});
  EXPECT_EQ(R.ExitCode, 1); // the pairing fails whatever the machine has
  EXPECT_CONTAINS(R.Output, "✓ cargo");
  EXPECT_CONTAINS(R.Output, "cargo 1.95.0 (fake)");
  EXPECT_CONTAINS(R.Output, "✓ rustc");
  EXPECT_CONTAINS(R.Output, "LLVM version: 99.0.1");
  EXPECT_CONTAINS(R.Output, "✗ LLVM pairing");
  EXPECT_CONTAINS(R.Output, "rustc's LLVM 99 is newer than oxide's LLVM");
  EXPECT_CONTAINS(R.Output, "✓ oxide-link");
  for (const char *Label :
       {"CUDA toolkit", "ptxas", "libdevice", "NVIDIA driver", "GPU"})
    EXPECT_CONTAINS(R.Output, Label);
  EXPECT_CONTAINS(R.Output, "fix: ");
  EXPECT_CONTAINS(R.Output, "error: ");

  // Without a driver on this machine, both the driver and GPU are named as
  // missing.
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (Lib) {
    dlclose(Lib);
    return;
  }
  EXPECT_CONTAINS(R.Output, "✗ NVIDIA driver");
  EXPECT_CONTAINS(R.Output, "✗ GPU");
  EXPECT_CONTAINS(R.Output, "missing: no NVIDIA driver");
}

TEST_F(CliTest, DoctorWithMissingTools) {
  Env.set("RUSTC", (Tmp / "no-rustc").string());
  Env.set("CARGO", (Tmp / "no-cargo").string());
  Env.set("OXIDE_LINK", (Tmp / "no-link").string());
  Env.set("OXIDE_CUDA_PATH", (Tmp / "no-cuda").string());
  ProcessResult R = oxide({"doctor"});
  EXPECT_EQ(R.ExitCode, 1);
  for (const char *Label :
       {"✗ cargo", "✗ rustc", "✗ LLVM pairing", "✗ oxide-link",
        "✗ CUDA toolkit", "✗ ptxas", "✗ libdevice"})
    EXPECT_CONTAINS(R.Output, Label);
  EXPECT_CONTAINS(R.Output, "fix: install Rust with rustup");
  EXPECT_CONTAINS(R.Output, "fix: install the CUDA toolkit");
}

TEST_F(CliTest, DoctorRuntimeChecksOnlyWhatRunningNeeds) {
  // A GPU machine without Rust or oxide's LLVM: --runtime does not ask for
  // them, and still tries a kernel launch.
  Env.set("RUSTC", (Tmp / "no-rustc").string());
  Env.set("CARGO", (Tmp / "no-cargo").string());
  Env.set("OXIDE_LINK", (Tmp / "no-link").string());
  Env.set("OXIDE_CUDA_PATH", (Tmp / "no-cuda").string());
  ProcessResult R = oxide({"doctor", "--runtime"});
  for (const char *Label : {"cargo", "rustc", "LLVM pairing", "oxide-link",
                            "CUDA toolkit", "ptxas", "libdevice"})
    EXPECT_FALSE(contains(R.Output, std::string("✗ ") + Label)) << Label;
  for (const char *Label : {"NVIDIA driver", "GPU", "kernel launch"})
    EXPECT_CONTAINS(R.Output, Label);
  // The debugging tools are listed, never counted.
  EXPECT_CONTAINS(R.Output, "· compute-sanitizer: not found (optional)");
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (Lib) {
    dlclose(Lib);
    return;
  }
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_CONTAINS(R.Output, "✗ kernel launch  not tried: no GPU");
  EXPECT_CONTAINS(R.Output, "3 of 3 checks failed");
}

} // namespace

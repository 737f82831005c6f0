//===- DebugTest.cpp - test, debug, sanitize, inspect --sass, new --async -===//
//
// Part of oxide. The argument parsing and the command lines of the commands
// that run a tool after the build, then the whole flow end to end with a fake
// cargo (as in CliTest.cpp) and fake CUDA tools that log their arguments.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "New.h"
#include "Options.h"
#include "Process.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace oxide::cli;
using namespace oxide::cli::test;

namespace {

#define EXPECT_CONTAINS(Haystack, Needle)                                      \
  EXPECT_TRUE(contains(Haystack, Needle))                                      \
      << "expected to find:\n  " << (Needle) << "\nin:\n"                      \
      << (Haystack)
#define EXPECT_NOT_CONTAINS(Haystack, Needle)                                  \
  EXPECT_FALSE(contains(Haystack, Needle))                                     \
      << "expected not to find:\n  " << (Needle) << "\nin:\n"                  \
      << (Haystack)

using Args = std::vector<std::string>;

Options parseOk(const Args &A) {
  Expected<Options> O = parseArguments(A);
  EXPECT_TRUE(static_cast<bool>(O)) << (O ? "" : O.error().Message);
  return O ? *O : Options();
}

Error parseFails(const Args &A) {
  Expected<Options> O = parseArguments(A);
  EXPECT_FALSE(static_cast<bool>(O));
  return O ? Error{} : O.error();
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

TEST(DebugOptionsTest, Test) {
  Options O = parseOk({"oxide", "test", "vecadd", "--release", "--arch",
                       "sm_90", "-v", "-F", "f16", "--", "--nocapture", "x"});
  EXPECT_EQ(O.Cmd, Command::Test);
  EXPECT_EQ(O.Name, "vecadd");
  EXPECT_TRUE(O.Release);
  EXPECT_EQ(O.Arch, "sm_90");
  EXPECT_TRUE(O.Verbose);
  EXPECT_EQ(O.CargoArgs, (Args{"--features", "f16"}));
  EXPECT_EQ(O.ProgramArgs, (Args{"--nocapture", "x"}));
  Options Bare = parseOk({"test"});
  EXPECT_FALSE(Bare.Name);
  // As with `cargo test`, names after NAME are test filters; with -p every
  // name is.
  Options Filtered = parseOk({"test", "a", "b", "c"});
  EXPECT_EQ(Filtered.Name, "a");
  EXPECT_EQ(Filtered.TestFilters, (Args{"b", "c"}));
  Options ByPackage = parseOk({"test", "gemm", "-p", "vecadd", "--", "-q"});
  EXPECT_EQ(ByPackage.Name, "vecadd");
  EXPECT_EQ(ByPackage.TestFilters, (Args{"gemm"}));
  EXPECT_EQ(ByPackage.ProgramArgs, (Args{"-q"}));
  // `run` still wants its program's arguments after `--`.
  EXPECT_CONTAINS(parseFails({"run", "a", "b"}).Hint,
                  "after `--`: cargo oxide run a -- b");
}

//===----------------------------------------------------------------------===//
// Where `run` and `test` run the kernels, and how many tests at a time
//===----------------------------------------------------------------------===//

DriverProbe probeWith(bool HasDevice) {
  DriverProbe P;
  P.Loaded = true;
  P.HasDevice = HasDevice;
  P.DeviceError = HasDevice ? "" : "cuInit: CUDA_ERROR_NO_DEVICE";
  return P;
}

TEST(EmulationTest, AFlagWinsAndNeedsNoProbe) {
  Environment Env;
  Env.set("OXIDE_EMULATE", "0");
  auto Unused = []() -> DriverProbe {
    ADD_FAILURE() << "probed although the choice was made";
    return {};
  };
  EXPECT_EQ(chooseEmulation(EmulateMode::HostCode, Env, Unused).Value, "host");
  EXPECT_EQ(chooseEmulation(EmulateMode::DeviceCode, Env, Unused).Value, "ptx");
  EmulationChoice D = chooseEmulation(EmulateMode::Default, Env, Unused);
  EXPECT_EQ(D.Value, "1");
  EXPECT_EQ(D.Note, "");
  // The user's own OXIDE_EMULATE (0 included) is left alone.
  EXPECT_FALSE(chooseEmulation(EmulateMode::Off, Env, Unused).Value);
}

TEST(EmulationTest, PackageMetadataChoosesHostModeOrRefuses) {
  Package Host, No, Silent;
  Host.Info.PackageName = "histo";
  Host.Info.OxideEmulate = "host: warp votes the PTX VM lacks";
  No.Info.PackageName = "gemm";
  No.Info.OxideEmulate = "no: TMA";
  Silent.Info.PackageName = "vecadd";
  Environment Env;
  EmulationChoice Default{"1", ""};
  // `--emulate` (and the no-GPU fallback) becomes host mode, with the reason.
  for (EmulateMode Flag : {EmulateMode::Default, EmulateMode::Off}) {
    EmulationChoice C = packageEmulation(Host, Flag, Default);
    EXPECT_EQ(C.Value, "host");
    EXPECT_CONTAINS(C.Note, "`histo` runs its kernels' Rust code on the CPU "
                            "(--emulate=host), as its Cargo.toml asks: warp "
                            "votes the PTX VM lacks");
  }
  // An explicit mode, the GPU, and a package that says nothing stay.
  EXPECT_EQ(packageEmulation(Host, EmulateMode::DeviceCode, {"ptx", ""}).Value, "ptx");
  EXPECT_FALSE(packageEmulation(Host, EmulateMode::Off, {}).Value);
  EXPECT_EQ(packageEmulation(Silent, EmulateMode::Default, Default).Value, "1");
  // "no" refuses any emulation, and nothing when it runs on the GPU.
  std::optional<Error> E = refuseEmulation(No, Default, Env);
  ASSERT_TRUE(E);
  EXPECT_EQ(E->Message, "`gemm` cannot run on the CPU emulator: TMA");
  EXPECT_FALSE(refuseEmulation(No, {}, Env));
  EXPECT_FALSE(refuseEmulation(Silent, Default, Env));
  EXPECT_FALSE(refuseEmulation(Host, Default, Env));
}

TEST(EmulationTest, NoGpuFallsBackToTheEmulatorWithANote) {
  Environment Env;
  EmulationChoice None = chooseEmulation(EmulateMode::Off, Env, [] { return probeWith(false); });
  EXPECT_EQ(None.Value, "1");
  EXPECT_CONTAINS(None.Note, "note: no GPU here (cuInit: CUDA_ERROR_NO_DEVICE)");
  EXPECT_CONTAINS(None.Note, "OXIDE_EMULATE=0 refuses instead");
  EmulationChoice NoDriver = chooseEmulation(EmulateMode::Off, Env, [] { return DriverProbe{}; });
  EXPECT_EQ(NoDriver.Value, "1");
  EXPECT_CONTAINS(NoDriver.Note, "(no CUDA driver)");
  EmulationChoice Gpu = chooseEmulation(EmulateMode::Off, Env, [] { return probeWith(true); });
  EXPECT_FALSE(Gpu.Value);
  EXPECT_EQ(Gpu.Note, "");
}

TEST(DebugOptionsTest, Debug) {
  Options O = parseOk({"debug", "vecadd", "--", "1", "2"});
  EXPECT_EQ(O.Cmd, Command::Debug);
  EXPECT_EQ(O.DebugLevel, DeviceDebugLevel::Lines);
  EXPECT_EQ(O.ProgramArgs, (Args{"1", "2"}));
  Options Full = parseOk({"debug", "--full", "vecadd", "--release",
                          "--arch=sm_90", "--verbose"});
  EXPECT_EQ(Full.DebugLevel, DeviceDebugLevel::Full);
  EXPECT_TRUE(Full.Release);
  EXPECT_EQ(Full.Arch, "sm_90");
  EXPECT_TRUE(Full.Verbose);
  // --full belongs to debug only.
  EXPECT_CONTAINS(parseFails({"build", "--full"}).Message,
                  "unexpected argument `--full`");
}

TEST(DebugOptionsTest, Sanitize) {
  Options O = parseOk({"sanitize", "vecadd"});
  EXPECT_EQ(O.Cmd, Command::Sanitize);
  EXPECT_EQ(O.SanitizerTool, "memcheck");
  for (const char *Tool : SanitizerTools) {
    EXPECT_EQ(parseOk({"sanitize", "--tool", Tool}).SanitizerTool, Tool);
    EXPECT_EQ(parseOk({"sanitize", std::string("--tool=") + Tool}).SanitizerTool,
              Tool);
  }
  Options All = parseOk({"sanitize", "x", "--tool", "racecheck", "-r",
                         "--arch", "sm_80", "--", "-n", "5"});
  EXPECT_TRUE(All.Release);
  EXPECT_EQ(All.ProgramArgs, (Args{"-n", "5"}));
  Error Bad = parseFails({"sanitize", "--tool", "leakcheck"});
  EXPECT_CONTAINS(Bad.Message, "unknown compute-sanitizer tool `leakcheck`");
  EXPECT_CONTAINS(Bad.Hint, "memcheck, racecheck, initcheck or synccheck");
  EXPECT_CONTAINS(parseFails({"sanitize", "--tool"}).Hint,
                  "cargo oxide sanitize --tool memcheck");
  EXPECT_CONTAINS(parseFails({"run", "--tool", "memcheck"}).Message,
                  "unexpected argument `--tool`");
}

TEST(DebugOptionsTest, InspectSassAndNewAsync) {
  Options I = parseOk({"inspect", "vecadd", "--sass", "--arch", "sm_90"});
  EXPECT_EQ(I.Cmd, Command::Inspect);
  EXPECT_TRUE(I.Sass);
  EXPECT_FALSE(parseOk({"inspect"}).Sass);
  EXPECT_CONTAINS(parseFails({"pipeline", "--sass"}).Message,
                  "unexpected argument `--sass`");
  Options N = parseOk({"new", "k", "--async"});
  EXPECT_EQ(N.Cmd, Command::New);
  EXPECT_TRUE(N.Async);
  EXPECT_CONTAINS(parseFails({"new", "k", "--release"}).Message,
                  "unexpected argument `--release`");
}

TEST(DebugOptionsTest, ProgramArgsOnlyWhereAProgramRuns) {
  for (const char *Cmd : {"run", "test", "debug", "sanitize"})
    EXPECT_EQ(parseOk({Cmd, "--", "a"}).ProgramArgs, (Args{"a"})) << Cmd;
  for (const char *Cmd : {"build", "inspect", "pipeline", "clean"})
    EXPECT_CONTAINS(parseFails({Cmd, "--", "a"}).Message,
                    "does not pass arguments to a program");
}

TEST(DebugOptionsTest, Help) {
  for (Command C : {Command::Test, Command::Debug, Command::Sanitize})
    EXPECT_CONTAINS(commandHelp(C), "[-- ARGS...]");
  EXPECT_CONTAINS(commandHelp(Command::Debug), "--full");
  EXPECT_CONTAINS(commandHelp(Command::Debug), "cuda-gdb --args");
  EXPECT_CONTAINS(commandHelp(Command::Sanitize), "--tool TOOL");
  EXPECT_CONTAINS(commandHelp(Command::Inspect), "--sass");
  EXPECT_CONTAINS(commandHelp(Command::New), "--async");
  EXPECT_CONTAINS(commandHelp(Command::New), ".cargo/config.toml");
  std::string Overview = overviewHelp();
  for (const char *Line : {"test [NAME]", "debug [NAME]", "sanitize [NAME]"})
    EXPECT_CONTAINS(Overview, Line);
  EXPECT_EQ(commandFromName("sanitize"), Command::Sanitize);
  EXPECT_EQ(suggestCommand("tset"), "test");
}

//===----------------------------------------------------------------------===//
// Command lines
//===----------------------------------------------------------------------===//

BuildPlan plan(bool Release, bool WithPackage) {
  BuildPlan P;
  P.WS.ManifestPath = "/ws/Cargo.toml";
  if (WithPackage) {
    Package Pkg;
    Pkg.ManifestPath = "/ws/examples/vecadd/Cargo.toml";
    Pkg.Info.PackageName = "vecadd";
    P.Pkg = Pkg;
  }
  P.Release = Release;
  P.TargetDir = "/ws/target";
  return P;
}

TEST(DebugCommandTest, CargoTestArgs) {
  EXPECT_EQ(cargoTestArgs(plan(false, true), {}),
            (Args{"test", "--manifest-path",
                  "/ws/examples/vecadd/Cargo.toml"}));
  EXPECT_EQ(cargoTestArgs(plan(true, false), {"--nocapture", "name"}),
            (Args{"test", "--manifest-path", "/ws/Cargo.toml", "--workspace",
                  "--release", "--", "--nocapture", "name"}));
}

TEST(DebugCommandTest, BinaryAndToolCommands) {
  EXPECT_EQ(binaryPath(plan(false, true), "vecadd"),
            fs::path("/ws/target/debug/vecadd"));
  EXPECT_EQ(binaryPath(plan(true, true), "vecadd"),
            fs::path("/ws/target/release/vecadd"));
  EXPECT_EQ(deviceDebugValue(DeviceDebugLevel::Lines), "lines");
  EXPECT_EQ(deviceDebugValue(DeviceDebugLevel::Full), "full");
  EXPECT_EQ(debuggerCommand("/cuda/bin/cuda-gdb", "/t/debug/v", {"a", "b c"}),
            (Args{"/cuda/bin/cuda-gdb", "--args", "/t/debug/v", "a", "b c"}));
  EXPECT_EQ(sanitizerCommand("cs", "racecheck", "/t/v", {"-n"}),
            (Args{"cs", "--tool", "racecheck", "/t/v", "-n"}));
  EXPECT_EQ(sassCommand(fs::path("/c/nvdisasm"), fs::path("/c/cuobjdump"),
                        "k.cubin"),
            (Args{"/c/nvdisasm", "k.cubin"}));
  EXPECT_EQ(sassCommand(std::nullopt, fs::path("/c/cuobjdump"), "k.cubin"),
            (Args{"/c/cuobjdump", "-sass", "k.cubin"}));
  EXPECT_TRUE(sassCommand(std::nullopt, std::nullopt, "k.cubin").empty());
}

TEST(DebugCommandTest, ComputeSanitizerLocations) {
  TempDir Tmp;
  Environment Env;
  Env.set("PATH", (Tmp / "path").string());
  Env.set("OXIDE_CUDA_PATH", (Tmp / "cuda").string());
  EXPECT_FALSE(findComputeSanitizer(Env));
  writeExecutable(Tmp / "cuda/compute-sanitizer/compute-sanitizer", "");
  EXPECT_EQ(findComputeSanitizer(Env),
            Tmp / "cuda/compute-sanitizer/compute-sanitizer");
  writeExecutable(Tmp / "cuda/bin/compute-sanitizer", "");
  EXPECT_EQ(findComputeSanitizer(Env), Tmp / "cuda/bin/compute-sanitizer");
}

TEST(DebugCommandTest, CargoConfigOfNewProjects) {
  std::string Text = renderCargoConfig();
  EXPECT_CONTAINS(Text, "[target.x86_64-unknown-linux-gnu]\n");
  EXPECT_CONTAINS(Text, "linker = \"oxide-link\"\n"); // on PATH, no home dir
  EXPECT_CONTAINS(Text, "[build]\n");
  EXPECT_CONTAINS(Text, "rustflags = [\"-C\", \"save-temps\"]\n");
  EXPECT_CONTAINS(Text, "incremental = false\n");
}

TEST(DebugCommandTest, DeviceDebugInTheEnvironmentAndStamp) {
  OxideBuildConfig C;
  C.Linker = "/l/oxide-link";
  C.Arch = "sm_90";
  Environment Env;
  Env.set("OXIDE_DEVICE_DEBUG", "full"); // stale, from the shell
  applyOxideEnvironment(Env, C);
  EXPECT_FALSE(Env.get("OXIDE_DEVICE_DEBUG"));
  std::string Plain = linkStamp(C);
  EXPECT_NOT_CONTAINS(Plain, "device-debug");
  C.DeviceDebug = "lines";
  applyOxideEnvironment(Env, C);
  EXPECT_EQ(Env.get("OXIDE_DEVICE_DEBUG"), "lines");
  EXPECT_NE(linkStamp(C), Plain); // switching relinks
}

//===----------------------------------------------------------------------===//
// End to end
//===----------------------------------------------------------------------===//

const char *FakeCargo = R"sh(#!/bin/sh
{
  printf 'CALL'; for a in "$@"; do printf ' [%s]' "$a"; done; printf '\n'
  printf '  RUSTFLAGS=%s\n' "${RUSTFLAGS-<unset>}"
  printf '  CARGO_BUILD_RUSTFLAGS=%s\n' "${CARGO_BUILD_RUSTFLAGS-<unset>}"
  printf '  OXIDE_ARCH=%s\n' "${OXIDE_ARCH-<unset>}"
  printf '  OXIDE_DEVICE_DEBUG=%s\n' "${OXIDE_DEVICE_DEBUG-<unset>}"
  printf '  CARGO_PROFILE_RELEASE_DEBUG=%s\n' "${CARGO_PROFILE_RELEASE_DEBUG-<unset>}"
  printf '  OXIDE_EMULATE=%s\n' "${OXIDE_EMULATE-<unset>}"
  printf '  RUNNER=%s\n' "${CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER-<unset>}"
} >> "$FAKE_CARGO_LOG"
profile=debug
for a in "$@"; do [ "$a" = --release ] && profile=release; done
case "$1" in
  build)
    [ "${FAKE_BUILD_EXIT:-0}" = 0 ] || exit "$FAKE_BUILD_EXIT"
    mkdir -p "$FAKE_TARGET/$profile"
    printf '#!/bin/sh\n' > "$FAKE_TARGET/$profile/vecadd"
    chmod +x "$FAKE_TARGET/$profile/vecadd"
    if [ -n "$OXIDE_DUMP_DIR" ]; then
      printf '.version 8.0\n.target %s\n' "$OXIDE_ARCH" > "$OXIDE_DUMP_DIR/vecadd.ptx"
    fi;;
  test) echo "test result: ok"; exit "${FAKE_TEST_EXIT:-0}";;
esac
exit 0
)sh";

/// Logs its name and arguments: a fake cuda-gdb, compute-sanitizer, ptxas, …
const char *FakeTool = R"sh(#!/bin/sh
printf 'TOOL %s' "$(basename "$0")" >> "$FAKE_CARGO_LOG"
for a in "$@"; do printf ' [%s]' "$a" >> "$FAKE_CARGO_LOG"; done
printf '\n' >> "$FAKE_CARGO_LOG"
case "$(basename "$0")" in
  ptxas) while [ $# -gt 0 ]; do [ "$1" = -o ] && echo cubin > "$2"; shift; done;;
  nvdisasm|cuobjdump) echo "        /*0000*/  MOV R1, c[0x0][0x28] ;";;
esac
exit "${FAKE_TOOL_EXIT:-0}"
)sh";

class DebugCliTest : public ::testing::Test {
protected:
  TempDir Tmp;
  fs::path Root, Bin, Cuda, Log;
  Environment Env;

  void SetUp() override {
    Root = Tmp / "ws";
    Bin = Tmp / "bin";
    Cuda = Tmp / "cuda";
    Log = Tmp / "cargo.log";
    writeFile(Root / "Cargo.toml", "[workspace]\nmembers = [\"examples/*\"]\n");
    writeFile(Root / "examples/vecadd/Cargo.toml",
              "[package]\nname = \"vecadd\"\n");
    writeFile(Root / "examples/vecadd/src/main.rs", "fn main() {}\n");
    writeExecutable(Bin / "cargo", withFakeCargoMetadata(FakeCargo));
    writeExecutable(Bin / "rustc",
                    "#!/bin/sh\nprintf 'rustc 1.95.0 (59807616e 2026-04-14)\\n"
                    "host: x86_64-unknown-linux-gnu\\nrelease: 1.95.0\\n"
                    "LLVM version: 22.1.2\\n'\n");
    writeExecutable(Bin / "oxide-link", "#!/bin/sh\nexit 0\n");
    fs::create_directories(Cuda / "bin");
    Env.set("PATH", "/usr/bin:/bin");
    Env.set("HOME", Tmp.path().string());
    Env.set("CARGO", (Bin / "cargo").string());
    Env.set("RUSTC", (Bin / "rustc").string());
    Env.set("OXIDE_LINK", (Bin / "oxide-link").string());
    Env.set("OXIDE_CUDA_PATH", Cuda.string());
    Env.set("FAKE_CARGO_LOG", Log.string());
    Env.set("FAKE_TARGET", (Root / "target").string());
    Env.set("NO_COLOR", "1");
  }

  void addTool(const char *Name) { writeExecutable(Cuda / "bin" / Name, FakeTool); }

  ProcessResult oxide(const Args &A) {
    Args Argv = {CARGO_OXIDE_EXE, "oxide"};
    Argv.insert(Argv.end(), A.begin(), A.end());
    RunOptions Options;
    Options.Env = &Env;
    Options.CaptureStdout = true;
    Options.CaptureStderr = true;
    Options.WorkingDir = Root;
    return runProcess(Argv, Options);
  }

  std::string log() const { return readFile(Log); }
};

TEST_F(DebugCliTest, TestRunsCargoTestWithTheOxideEnvironment) {
  ProcessResult R = oxide({"test", "vecadd", "--arch", "sm_90", "--release",
                           "--", "--nocapture"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(R.Output, "test result: ok");
  std::string L = log();
  // Built first on their own (a device-link error then comes first and
  // alone), then run.
  size_t Build = L.find("CALL [test]" + EmulatorProfile + " [--manifest-path] [" +
                        (Root / "examples/vecadd/Cargo.toml").string() +
                        "] [--release] [--no-run]\n");
  size_t Run = L.find("CALL [test]" + EmulatorProfile + " [--manifest-path] [" +
                      (Root / "examples/vecadd/Cargo.toml").string() +
                      "] [--release] [--] [--nocapture]\n");
  ASSERT_NE(Build, std::string::npos) << L;
  ASSERT_NE(Run, std::string::npos) << L;
  EXPECT_LT(Build, Run);
  // Each test binary runs through cargo-oxide, each test in its own process.
  EXPECT_CONTAINS(L, "RUNNER=" + std::string(CARGO_OXIDE_EXE) + " oxide __run-tests");
  EXPECT_CONTAINS(L, "linker=" + (Bin / "oxide-link").string() +
                         " -C save-temps");
  EXPECT_CONTAINS(L, "OXIDE_ARCH=sm_90");
}

TEST_F(DebugCliTest, TestAtTheWorkspaceRootAndFailures) {
  ProcessResult R = oxide({"test"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(log(), "CALL [test]" + EmulatorProfile + " [--manifest-path] [" +
                             (Root / "Cargo.toml").string() + "] [--workspace]\n");
  Env.set("FAKE_TEST_EXIT", "101");
  ProcessResult Failed = oxide({"test", "vecadd"});
  EXPECT_EQ(Failed.ExitCode, 101);
  EXPECT_CONTAINS(Failed.Output, "error: cargo test failed (exit code 101)");
  EXPECT_CONTAINS(Failed.Output, "cargo oxide test vecadd -- --nocapture");
}

TEST_F(DebugCliTest, TestEmulatesAsAskedAndKeepsTheUsersThreads) {
  ProcessResult R = oxide({"test", "vecadd", "--emulate=ptx", "--",
                           "--test-threads=3"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  std::string L = log();
  EXPECT_CONTAINS(L, "[--] [--test-threads=3]\n");
  EXPECT_CONTAINS(L, "RUNNER=<unset>"); // threads chosen: cargo test's own way
  EXPECT_CONTAINS(L, "OXIDE_EMULATE=ptx");
  // Without a runner to give (no rustc to name the host), one at a time.
  Env.set("RUSTC", (Tmp / "no-rustc").string());
  ASSERT_EQ(oxide({"test", "vecadd", "--emulate=host"}).ExitCode, 0);
  EXPECT_CONTAINS(log(), "[--] [--test-threads=1]\n");
  Env.set("RUSTC", (Bin / "rustc").string());
  // The user's own choice of emulation passes through untouched.
  Env.set("OXIDE_EMULATE", "host");
  ASSERT_EQ(oxide({"test", "vecadd"}).ExitCode, 0);
  EXPECT_CONTAINS(log(), "OXIDE_EMULATE=host");
  EXPECT_NOT_CONTAINS(log(), "OXIDE_EMULATE=1");
}

TEST_F(DebugCliTest, DebugRunsCudaGdbOnTheBinary) {
  addTool("cuda-gdb");
  ProcessResult R = oxide({"debug", "vecadd", "--", "a", "b"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  std::string L = log();
  EXPECT_CONTAINS(L, "CALL [build]");
  EXPECT_CONTAINS(L, "OXIDE_DEVICE_DEBUG=lines");
  EXPECT_CONTAINS(L, "CARGO_PROFILE_RELEASE_DEBUG=<unset>");
  EXPECT_CONTAINS(L, "TOOL cuda-gdb [--args] [" +
                         (Root / "target/debug/vecadd").string() +
                         "] [a] [b]");
}

TEST_F(DebugCliTest, DebugFullRelease) {
  addTool("cuda-gdb");
  ProcessResult R = oxide({"debug", "vecadd", "--full", "--release"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  std::string L = log();
  EXPECT_CONTAINS(L, "OXIDE_DEVICE_DEBUG=full");
  EXPECT_CONTAINS(L, "CARGO_PROFILE_RELEASE_DEBUG=true");
  EXPECT_CONTAINS(L, "[" + (Root / "target/release/vecadd").string() + "]");
}

TEST_F(DebugCliTest, DebugWithoutCudaGdbPrintsTheCommand) {
  ProcessResult R = oxide({"debug", "vecadd", "--", "x"});
  EXPECT_EQ(R.ExitCode, 2) << R.Output;
  EXPECT_CONTAINS(R.Output, "error: cuda-gdb not found in " +
                                (Cuda / "bin").string() + " or PATH");
  EXPECT_CONTAINS(R.Output, "cuda-gdb --args " +
                                (Root / "target/debug/vecadd").string() + " x");
  EXPECT_CONTAINS(log(), "CALL [build]"); // it still built
}

TEST_F(DebugCliTest, DebugBuildFailureStops) {
  addTool("cuda-gdb");
  Env.set("FAKE_BUILD_EXIT", "101");
  ProcessResult R = oxide({"debug", "vecadd"});
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_CONTAINS(R.Output, "error: cargo build failed");
  EXPECT_NOT_CONTAINS(log(), "TOOL cuda-gdb");
}

TEST_F(DebugCliTest, SanitizeRunsComputeSanitizer) {
  addTool("compute-sanitizer");
  ProcessResult R = oxide({"sanitize", "vecadd", "--tool", "racecheck", "--",
                           "-n", "3"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  std::string L = log();
  EXPECT_CONTAINS(L, "OXIDE_DEVICE_DEBUG=lines");
  EXPECT_CONTAINS(L, "TOOL compute-sanitizer [--tool] [racecheck] [" +
                         (Root / "target/debug/vecadd").string() +
                         "] [-n] [3]");
  Env.set("FAKE_TOOL_EXIT", "1");
  ProcessResult Found = oxide({"sanitize", "vecadd"});
  EXPECT_EQ(Found.ExitCode, 1);
  EXPECT_CONTAINS(Found.Output, "hint: compute-sanitizer's report");
  EXPECT_CONTAINS(log(), "[--tool] [memcheck]");
}

TEST_F(DebugCliTest, SanitizeWithoutComputeSanitizer) {
  ProcessResult R = oxide({"sanitize", "vecadd"});
  EXPECT_EQ(R.ExitCode, 2) << R.Output;
  EXPECT_CONTAINS(R.Output, "error: compute-sanitizer not found");
  EXPECT_CONTAINS(R.Output, "compute-sanitizer --tool memcheck " +
                                (Root / "target/debug/vecadd").string());
}

TEST_F(DebugCliTest, InspectSass) {
  addTool("ptxas");
  addTool("nvdisasm");
  ProcessResult R = oxide({"inspect", "vecadd", "--sass", "--arch", "sm_90"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  fs::path Ptx = Root / "target/oxide/vecadd/vecadd.ptx";
  fs::path Cubin = Root / "target/oxide/vecadd/vecadd.cubin";
  EXPECT_CONTAINS(R.Output, ".target sm_90");          // the PTX
  EXPECT_CONTAINS(R.Output, "// SASS of vecadd.ptx (sm_90)");
  EXPECT_CONTAINS(R.Output, "MOV R1, c[0x0][0x28]");  // the SASS
  std::string L = log();
  EXPECT_CONTAINS(L, "TOOL ptxas [-arch=sm_90] [-o] [" + Cubin.string() +
                         "] [" + Ptx.string() + "]");
  EXPECT_CONTAINS(L, "TOOL nvdisasm [" + Cubin.string() + "]");
}

TEST_F(DebugCliTest, InspectSassWithCuobjdumpOrNothing) {
  addTool("ptxas");
  ProcessResult Missing = oxide({"inspect", "vecadd", "--sass"});
  EXPECT_EQ(Missing.ExitCode, 1);
  EXPECT_CONTAINS(Missing.Output, ".target sm_80"); // PTX still printed
  EXPECT_CONTAINS(Missing.Output,
                  "error: SASS needs ptxas and nvdisasm or cuobjdump");
  EXPECT_CONTAINS(Missing.Output, "OXIDE_CUDA_PATH");
  addTool("cuobjdump");
  ProcessResult R = oxide({"inspect", "vecadd", "--sass"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  EXPECT_CONTAINS(log(), "TOOL cuobjdump [-sass]");
  ProcessResult Plain = oxide({"inspect", "vecadd"});
  EXPECT_NOT_CONTAINS(Plain.Output, "SASS");
}

TEST_F(DebugCliTest, NewAsyncWritesTheAsyncTemplateAndNewWritesCargoConfig) {
  ProcessResult Async = oxide({"new", "ka", "--async"});
  ASSERT_EQ(Async.ExitCode, 0) << Async.Output;
  EXPECT_CONTAINS(Async.Output, "oxide cuda-async project `ka`");
  EXPECT_CONTAINS(readFile(Root / "ka/Cargo.toml"),
                  "cuda-async = { version = \"0.1\", registry = \"oxide\" }");
  EXPECT_CONTAINS(readFile(Root / "ka/src/main.rs"), "DeviceOperation");
  EXPECT_CONTAINS(readFile(Root / "ka/.cargo/config.toml"), "linker = ");

  ProcessResult R = oxide({"new", "k"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  std::string Config = readFile(Root / "k/.cargo/config.toml");
  // By name: the project does not depend on where oxide-link is installed.
  EXPECT_CONTAINS(Config, "linker = \"oxide-link\"\n");
  EXPECT_NOT_CONTAINS(Config, Bin.string());
  EXPECT_CONTAINS(Config, "incremental = false");
}

} // namespace

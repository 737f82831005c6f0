//===- BenchTest.cpp - cargo oxide bench ----------------------------------===//
//
// Part of oxide. The `bench` subcommand: its options, how it builds the
// benchmark program and what it passes to it, and end to end with a fake
// cargo whose "build" writes a fake benchmark program.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Options.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace oxide::cli;
using namespace oxide::cli::test;

namespace {

using Args = std::vector<std::string>;

Options parseOk(const Args &Argv) {
  Expected<Options> Opts = parseArguments(Argv);
  EXPECT_TRUE(static_cast<bool>(Opts))
      << "unexpected error: " << Opts.error().Message;
  return Opts ? *Opts : Options{};
}

TEST(BenchOptionsTest, Parsing) {
  Options All = parseOk({"oxide", "bench"});
  EXPECT_EQ(All.Cmd, Command::Bench);
  EXPECT_FALSE(All.Name);
  EXPECT_FALSE(All.List);

  Options List = parseOk({"oxide", "bench", "--list"});
  EXPECT_TRUE(List.List);

  Options One = parseOk({"oxide", "bench", "sgemm", "--arch", "sm_90a", "-v",
                         "--", "--extra"});
  EXPECT_EQ(One.Name, "sgemm");
  EXPECT_EQ(One.Arch, "sm_90a");
  EXPECT_TRUE(One.Verbose);
  EXPECT_EQ(One.ProgramArgs, (Args{"--extra"}));

  // --list belongs to bench alone; bench builds release by itself.
  EXPECT_FALSE(parseArguments({"oxide", "build", "--list"}));
  EXPECT_FALSE(parseArguments({"oxide", "bench", "--release"}));
  EXPECT_FALSE(parseArguments({"oxide", "bench", "a", "b"}));
}

TEST(BenchOptionsTest, HelpMentionsList) {
  EXPECT_TRUE(contains(commandHelp(Command::Bench), "--list"));
  EXPECT_TRUE(contains(overviewHelp(), "bench [NAME]"));
  EXPECT_EQ(commandFromName("bench"), Command::Bench);
}

TEST(BenchOptionsTest, BuildOptions) {
  Options Opts = parseOk({"oxide", "bench", "softmax", "--list", "--", "x"});
  Options Build = benchBuildOptions(Opts);
  EXPECT_EQ(Build.Name, "oxide-bench");
  EXPECT_TRUE(Build.Release);
  EXPECT_FALSE(Build.Arch); // resolved with the package: resolveArch()
  EXPECT_TRUE(Build.ProgramArgs.empty());
  EXPECT_FALSE(Build.List);

  Opts.Arch = "sm_100";
  EXPECT_EQ(benchBuildOptions(Opts).Arch, "sm_100");
}

TEST(BenchOptionsTest, ProgramCommand) {
  fs::path Bin = "/ws/target/release/oxide-bench";
  EXPECT_EQ(benchProgramCommand(Bin, parseOk({"bench"})),
            (Args{Bin.string()}));
  EXPECT_EQ(benchProgramCommand(Bin, parseOk({"bench", "--list"})),
            (Args{Bin.string(), "--list"}));
  EXPECT_EQ(benchProgramCommand(Bin, parseOk({"bench", "launch", "--", "-q"})),
            (Args{Bin.string(), "launch", "-q"}));
}

TEST(BenchOptionsTest, ProgramEnvironment) {
  BuildPlan Plan;
  Plan.WS.Root = "/ws";
  Plan.TargetDir = "/ws/target";
  Environment Base;
  Base.set("PATH", "/usr/bin");
  Base.set("OXIDE_BENCH_CARGO_OXIDE", "/stale");
  Environment Env =
      benchEnvironment(Base, Plan, fs::path("/opt/oxide/bin/cargo-oxide"));
  EXPECT_EQ(Env.get("PATH"), "/usr/bin");
  EXPECT_EQ(Env.get("OXIDE_BENCH_ROOT"), "/ws");
  EXPECT_EQ(Env.get("OXIDE_BENCH_SCRATCH"), "/ws/target/oxide/bench-rebuild");
  EXPECT_EQ(Env.get("OXIDE_BENCH_CARGO_OXIDE"), "/opt/oxide/bin/cargo-oxide");
  EXPECT_FALSE(benchEnvironment(Base, Plan, std::nullopt)
                   .contains("OXIDE_BENCH_CARGO_OXIDE"));
}

/// cargo's stand-in: logs its arguments and OXIDE_ARCH; `build` writes a
/// benchmark program that prints its arguments and two variables and exits
/// with $FAKE_BENCH_EXIT (2: "no GPU").
const char *FakeCargo = R"sh(#!/bin/sh
{ printf 'CALL'; for a in "$@"; do printf ' [%s]' "$a"; done
  printf ' OXIDE_ARCH=%s\n' "$OXIDE_ARCH"; } >> "$FAKE_CARGO_LOG"
if [ "$1" = build ]; then
  mkdir -p "$FAKE_TARGET/release"
  cat > "$FAKE_TARGET/release/oxide-bench" <<'EOS'
#!/bin/sh
echo "bench args:$*"
echo "root=$OXIDE_BENCH_ROOT"
echo "rustflags=${RUSTFLAGS-<unset>}"
exit "${FAKE_BENCH_EXIT:-0}"
EOS
  chmod +x "$FAKE_TARGET/release/oxide-bench"
fi
exit 0
)sh";

class BenchCliTest : public ::testing::Test {
protected:
  TempDir Tmp;
  fs::path Root, Bin, Log;
  Environment Env;

  void SetUp() override {
    Root = Tmp / "ws";
    Bin = Tmp / "bin";
    Log = Tmp / "cargo.log";
    writeFile(Root / "Cargo.toml",
              "[workspace]\nmembers = [\"examples/*\", \"benches\"]\n");
    writeFile(Root / "examples/vecadd/Cargo.toml",
              "[package]\nname = \"vecadd\"\n");
    writeFile(Root / "examples/vecadd/src/main.rs", "fn main() {}\n");
    writeFile(Root / "benches/Cargo.toml",
              "[package]\nname = \"oxide-bench\"\n\n[[bin]]\nname = "
              "\"oxide-bench\"\npath = \"src/main.rs\"\n");
    writeFile(Root / "benches/src/main.rs", "fn main() {}\n");
    writeExecutable(Bin / "cargo", withFakeCargoMetadata(FakeCargo));
    writeExecutable(Bin / "oxide-link", "#!/bin/sh\nexit 0\n");
    Env.set("PATH", "/usr/bin:/bin");
    Env.set("HOME", Tmp.path().string());
    Env.set("CARGO", (Bin / "cargo").string());
    Env.set("OXIDE_LINK", (Bin / "oxide-link").string());
    Env.set("FAKE_CARGO_LOG", Log.string());
    Env.set("FAKE_TARGET", (Root / "target").string());
    Env.set("NO_COLOR", "1");
  }

  ProcessResult oxide(const Args &Argv) {
    Args Full = {CARGO_OXIDE_EXE, "oxide"};
    Full.insert(Full.end(), Argv.begin(), Argv.end());
    RunOptions Options;
    Options.Env = &Env;
    Options.CaptureStdout = true;
    Options.CaptureStderr = true;
    Options.WorkingDir = Root / "examples/vecadd";
    return runProcess(Full, Options);
  }
};

TEST_F(BenchCliTest, BuildsReleaseAndRunsTheProgram) {
  // A benchmark package that names no arch is built as any package is:
  // here for OXIDE_ARCH (the real one names sm_90a, which comes first).
  Env.set("OXIDE_ARCH", "sm_90");
  ProcessResult R = oxide({"bench", "vecadd"});
  ASSERT_EQ(R.ExitCode, 0) << R.Output;
  std::string Calls = readFile(Log);
  EXPECT_TRUE(contains(Calls, "CALL [build]" + EmulatorProfile + " [--manifest-path] [" +
                                  (Root / "benches/Cargo.toml").string() +
                                  "] [--release] OXIDE_ARCH=sm_90"))
      << Calls;
  EXPECT_TRUE(contains(R.Output, "bench args:vecadd")) << R.Output;
  EXPECT_TRUE(contains(R.Output, "root=" + Root.string())) << R.Output;
  // The program gets the caller's environment, not the build's.
  EXPECT_TRUE(contains(R.Output, "rustflags=<unset>")) << R.Output;
}

TEST_F(BenchCliTest, ListAndExitStatus) {
  ProcessResult List = oxide({"bench", "--list", "--arch", "sm_100"});
  ASSERT_EQ(List.ExitCode, 0) << List.Output;
  EXPECT_TRUE(contains(List.Output, "bench args:--list")) << List.Output;
  EXPECT_TRUE(contains(readFile(Log), "OXIDE_ARCH=sm_100"));

  // "No GPU" (2) and failures come back unchanged.
  Env.set("FAKE_BENCH_EXIT", "2");
  EXPECT_EQ(oxide({"bench"}).ExitCode, 2);
}

TEST_F(BenchCliTest, BuildsForThePackagesArch) {
  writeFile(Root / "benches/Cargo.toml",
            "[package]\nname = \"oxide-bench\"\n\n[[bin]]\nname = "
            "\"oxide-bench\"\npath = \"src/main.rs\"\n\n"
            "[package.metadata.oxide]\narch = \"sm_90a\"\n");
  Env.set("OXIDE_ARCH", "sm_80"); // the user's default is not the benches'
  ASSERT_EQ(oxide({"bench", "--list"}).ExitCode, 0);
  EXPECT_TRUE(contains(readFile(Log), "OXIDE_ARCH=sm_90a")) << readFile(Log);
  ASSERT_EQ(oxide({"bench", "--list", "--arch", "sm_100"}).ExitCode, 0);
  EXPECT_TRUE(contains(readFile(Log), "OXIDE_ARCH=sm_100")) << readFile(Log);
}

TEST_F(BenchCliTest, NoBenchesHere) {
  fs::remove_all(Root / "benches");
  writeFile(Root / "Cargo.toml", "[workspace]\nmembers = [\"examples/*\"]\n");
  ProcessResult R = oxide({"bench"});
  EXPECT_EQ(R.ExitCode, 1);
  EXPECT_TRUE(contains(R.Output, "cannot find the benchmarks")) << R.Output;
  EXPECT_TRUE(contains(R.Output, "benches/ folder")) << R.Output;
}

} // namespace

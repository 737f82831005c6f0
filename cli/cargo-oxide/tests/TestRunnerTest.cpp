//===- TestRunnerTest.cpp - cargo oxide test's runner ---------------------===//
//
// Part of oxide. How `cargo oxide test` isolates tests (isolateTests), how
// the runner splits the harness's arguments and reads its output, and the
// runner end to end on a fake test binary that answers like libtest's
// harness: every test in a process of its own, one failure fails only itself.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Process.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace oxide::cli;
using namespace oxide::cli::test;

namespace {

using Args = std::vector<std::string>;

TEST(TestRunnerTest, IsolationUsesTheRunnerUnlessTheUserChoseThreads) {
  Environment Env;
  std::optional<fs::path> Self = fs::path("/opt/oxide/bin/cargo-oxide");
  std::optional<std::string> Host = "x86_64-unknown-linux-gnu";
  TestIsolation I = isolateTests({"--nocapture"}, Env, Self, Host);
  EXPECT_EQ(I.HarnessArgs, (Args{"--nocapture"}));
  ASSERT_TRUE(I.Runner);
  EXPECT_EQ(I.Runner->first, "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER");
  EXPECT_EQ(I.Runner->second, "/opt/oxide/bin/cargo-oxide oxide __run-tests");
  for (const Args &Chosen : {Args{"--test-threads=4"}, Args{"--test-threads", "2"}}) {
    TestIsolation Own = isolateTests(Chosen, Env, Self, Host);
    EXPECT_FALSE(Own.Runner);
    EXPECT_EQ(Own.HarnessArgs, Chosen);
  }
  // Without a runner to give, one test at a time in one process.
  EXPECT_EQ(isolateTests({}, Env, Self, std::nullopt).HarnessArgs, (Args{"--test-threads=1"}));
  EXPECT_FALSE(isolateTests({}, Env, fs::path("/my tools/cargo-oxide"), Host).Runner);
  Env.set("RUST_TEST_THREADS", "8");
  TestIsolation FromEnv = isolateTests({}, Env, Self, Host);
  EXPECT_FALSE(FromEnv.Runner);
  EXPECT_TRUE(FromEnv.HarnessArgs.empty());
  EXPECT_EQ(runnerVariable("aarch64-unknown-linux-gnu"), "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER");
}

TEST(TestRunnerTest, SelectionGoesToTheListingTheRestToEachRun) {
  HarnessArgs S = splitHarnessArgs({"fault", "--include-ignored", "--nocapture", "--skip", "slow",
                                    "--test-threads=4", "--format", "json", "-q", "--exact",
                                    "--color=never"});
  EXPECT_EQ(S.List, (Args{"fault", "--include-ignored", "--skip", "slow", "--exact"}));
  EXPECT_EQ(S.PerTest, (Args{"--include-ignored", "--nocapture", "--color=never"}));
}

TEST(TestRunnerTest, ReadsTheListAndTheSummary) {
  EXPECT_EQ(listedTests("tests::a: test\ntests::b: test\nbench_x: benchmark\n\n2 tests, 1 benchmark\n"),
            (Args{"tests::a", "tests::b"}));
  EXPECT_TRUE(listedTests("0 tests, 0 benchmarks\n").empty());
  std::optional<TestCounts> C =
      parseTestResult("running 1 test\ntest x ... ignored\n\ntest result: ok. 0 passed; 0 failed; 1 ignored; "
                      "0 measured; 0 filtered out; finished in 0.00s\n");
  ASSERT_TRUE(C);
  EXPECT_EQ((std::tuple{C->Passed, C->Failed, C->Ignored}), (std::tuple{0, 0, 1}));
  C = parseTestResult("test result: FAILED. 12 passed; 3 failed; 0 ignored; 0 measured");
  ASSERT_TRUE(C);
  EXPECT_EQ((std::tuple{C->Passed, C->Failed, C->Ignored}), (std::tuple{12, 3, 0}));
  EXPECT_FALSE(parseTestResult("Segmentation fault"));
}

/// Answers like a libtest harness with tests a_faults (fails), b_passes,
/// c_ignored (ignored unless --include-ignored) and d_passes; each run
/// appends its arguments to $FAKE_RUNS.
const char *FakeHarness = R"sh(#!/bin/sh
echo "$*" >> "$FAKE_RUNS"
case " $* " in
  *" --list "*)
    for t in tests::a_faults tests::b_passes tests::c_ignored tests::d_passes; do
      case " $* " in *" --exact "*) ;; *) [ -n "$FILTER" ] && case "$t" in *"$FILTER"*) ;; *) continue;; esac;; esac
      echo "$t: test"
    done
    echo; echo "N tests, 0 benchmarks"; exit 0;;
esac
for a in "$@"; do name=$a; done
ignored=0; case " $* " in *" --include-ignored "*) ;; *) [ "$name" = tests::c_ignored ] && ignored=1;; esac
echo; echo "running 1 test"
if [ $ignored = 1 ]; then echo "test $name ... ignored"; echo "test result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; 3 filtered out"; exit 0; fi
if [ "$name" = tests::a_faults ]; then
  echo "test $name ... FAILED"; echo "CUDA_ERROR_LAUNCH_FAILED"
  echo "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 3 filtered out"; exit 101
fi
echo "test $name ... ok"; echo "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 3 filtered out"
)sh";

TEST(TestRunnerTest, EachTestRunsAloneAndOneFailureFailsOnlyItself) {
  TempDir Tmp;
  fs::path Harness = Tmp / "fake-tests";
  fs::path Runs = Tmp / "runs.log";
  writeExecutable(Harness, FakeHarness);
  Environment Env = Environment::current();
  Env.set("FAKE_RUNS", Runs.string());
  RunOptions Options;
  Options.Env = &Env;
  Options.CaptureStdout = true;
  Options.CaptureStderr = true;
  ProcessResult R = runProcess({CARGO_OXIDE_EXE, "oxide", "__run-tests", Harness.string(), "--nocapture"}, Options);
  EXPECT_EQ(R.ExitCode, 101) << R.Output;
  EXPECT_NE(R.Output.find("running 4 tests, each in a process of its own"), std::string::npos) << R.Output;
  EXPECT_NE(R.Output.find("test tests::a_faults ... FAILED\n"), std::string::npos) << R.Output;
  EXPECT_NE(R.Output.find("test tests::c_ignored ... ignored\n"), std::string::npos) << R.Output;
  EXPECT_NE(R.Output.find("failures:\n    tests::a_faults\n"), std::string::npos) << R.Output;
  EXPECT_NE(R.Output.find("test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out"),
            std::string::npos)
      << R.Output;
  std::string Log = readFile(Runs);
  EXPECT_NE(Log.find("--list\n"), std::string::npos) << Log;
  EXPECT_NE(Log.find("--nocapture --test-threads=1 --exact tests::d_passes\n"), std::string::npos) << Log;

  // The selection reaches the listing; every test run passes.
  Env.set("FILTER", "passes");
  ProcessResult Some = runProcess({CARGO_OXIDE_EXE, "oxide", "__run-tests", Harness.string(), "passes"}, Options);
  EXPECT_EQ(Some.ExitCode, 0) << Some.Output;
  EXPECT_NE(Some.Output.find("test result: ok. 2 passed; 0 failed; 0 ignored"), std::string::npos) << Some.Output;
}

} // namespace

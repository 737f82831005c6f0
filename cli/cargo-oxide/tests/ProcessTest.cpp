//===- ProcessTest.cpp - environment and child processes ------------------===//
//
// Part of oxide. Tests runProcess() with /bin/sh: exit codes, signals, a
// missing program, the environment and output capture.
//
//===----------------------------------------------------------------------===//

#include "Process.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace oxide::cli;
using namespace oxide::cli::test;

namespace {

ProcessResult sh(const std::string &Script, RunOptions Options = {}) {
  Options.CaptureStdout = true;
  return runProcess({"/bin/sh", "-c", Script}, Options);
}

TEST(ProcessTest, CapturesStdout) {
  ProcessResult R = sh("echo hello; echo err >&2");
  EXPECT_TRUE(R.succeeded());
  EXPECT_EQ(R.Output, "hello\n");
}

TEST(ProcessTest, CapturesStderrWhenAsked) {
  RunOptions Options;
  Options.CaptureStderr = true;
  ProcessResult R = sh("echo out; echo err >&2", Options);
  EXPECT_EQ(R.Output, "out\nerr\n");
}

TEST(ProcessTest, ExitCode) {
  ProcessResult R = sh("exit 7");
  EXPECT_TRUE(R.Started);
  EXPECT_FALSE(R.succeeded());
  EXPECT_EQ(R.ExitCode, 7);
  EXPECT_EQ(R.shellStatus(), 7);
  EXPECT_EQ(R.describe(), "exit code 7");
}

TEST(ProcessTest, KilledBySignal) {
  ProcessResult R = sh("kill -TERM $$");
  EXPECT_TRUE(R.Started);
  EXPECT_EQ(R.Signal, 15);
  EXPECT_EQ(R.shellStatus(), 143);
  EXPECT_TRUE(contains(R.describe(), "killed by SIGTERM (signal 15"));
}

TEST(ProcessTest, MissingProgram) {
  ProcessResult R = runProcess({"oxide-no-such-program-xyz"});
  EXPECT_FALSE(R.Started);
  EXPECT_EQ(R.StartError, "`oxide-no-such-program-xyz` not found");
  EXPECT_EQ(R.shellStatus(), 127);
}

TEST(ProcessTest, EnvironmentIsPassed) {
  Environment Env;
  Env.set("PATH", "/usr/bin:/bin");
  Env.set("OXIDE_TEST_VAR", "a value");
  RunOptions Options;
  Options.Env = &Env;
  ProcessResult R = sh("echo \"$OXIDE_TEST_VAR|${HOME-unset}\"", Options);
  EXPECT_EQ(R.Output, "a value|unset\n");
}

TEST(ProcessTest, StdoutToFileAndWorkingDirectory) {
  TempDir Tmp;
  RunOptions Options;
  Options.StdoutFile = Tmp / "out.txt";
  Options.WorkingDir = Tmp.path();
  ProcessResult R = runProcess({"/bin/sh", "-c", "pwd"}, Options);
  EXPECT_TRUE(R.succeeded());
  EXPECT_EQ(readFile(Tmp / "out.txt"), Tmp.path().string() + "\n");

  Options.WorkingDir = Tmp / "missing";
  ProcessResult Bad = runProcess({"/bin/sh", "-c", "true"}, Options);
  EXPECT_FALSE(Bad.Started);
  EXPECT_TRUE(contains(Bad.StartError, "cannot enter"));
}

TEST(ProcessTest, EnvironmentEditing) {
  Environment Env;
  EXPECT_FALSE(Env.get("A"));
  Env.set("A", "1");
  Env.set("A", "2");
  Env.set("B", "");
  EXPECT_EQ(Env.get("A"), "2");
  EXPECT_TRUE(Env.contains("B"));
  EXPECT_FALSE(Env.getNonEmpty("B"));
  EXPECT_EQ(Env.toStrings(), (std::vector<std::string>{"A=2", "B="}));
  Env.unset("A");
  EXPECT_FALSE(Env.contains("A"));
  EXPECT_TRUE(Environment::current().contains("PATH"));
}

TEST(ProcessTest, FindProgram) {
  TempDir Tmp;
  writeExecutable(Tmp / "bin/mytool", "#!/bin/sh\n");
  writeFile(Tmp / "other/mytool", "not executable\n");
  Environment Env;
  Env.set("PATH", (Tmp / "other").string() + ":" + (Tmp / "bin").string());
  EXPECT_EQ(findProgram("mytool", Env), Tmp / "bin/mytool");
  EXPECT_FALSE(findProgram("nothere", Env));
  EXPECT_EQ(findProgram((Tmp / "bin/mytool").string(), Env),
            Tmp / "bin/mytool");
  EXPECT_FALSE(findProgram("", Env));
}

TEST(ProcessTest, ShellQuoting) {
  EXPECT_EQ(shellQuote("plain-word_1.0=/x"), "plain-word_1.0=/x");
  EXPECT_EQ(shellQuote(""), "''");
  EXPECT_EQ(shellQuote("two words"), "'two words'");
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(formatCommandLine({"cargo", "build", "--manifest-path", "/a b/C"}),
            "cargo build --manifest-path '/a b/C'");
}

TEST(ProcessTest, CurrentExecutable) {
  std::optional<fs::path> Self = currentExecutable();
  ASSERT_TRUE(Self);
  EXPECT_TRUE(Self->is_absolute());
  EXPECT_TRUE(isExecutableFile(*Self));
}

} // namespace

//===- TestRunner.cpp - each test in a process of its own -----------------===//
//
// Part of oxide. On a GPU a kernel fault ends CUDA for its whole process: the
// context is poisoned, and the driver refuses even a new primary context
// after every handle was released and the context reset (it answers
// CUDA_ERROR_LAUNCH_FAILED). In one test process every later test would fail
// with the faulting test's error. So `cargo oxide test` makes itself the
// runner of the test binaries cargo runs (CARGO_TARGET_<host>_RUNNER): the
// runner lists a binary's tests and runs each in a process of its own, with
// the user's harness options, then reports like the harness does
// ("test result: ...", exit code 101 on failure), so cargo and scripts read
// the outcome as usual. The CPU emulator could recover within a process, but
// the tests run the same way there, so what passes emulated passes on a GPU
// for the same reason.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Diagnostic.h"
#include "Toolchain.h"

#include <algorithm>
#include <cctype>
#include <iostream>

namespace oxide::cli {

namespace {

/// libtest options that take a value (the next argument, or after '=').
bool takesValue(std::string_view Arg) {
  for (std::string_view Option : {"--logfile", "--skip", "--test-threads",
                                  "--format", "--color", "-Z", "--shuffle-seed"})
    if (Arg == Option)
      return true;
  return false;
}

/// The option's name without an attached `=value`.
std::string_view optionName(std::string_view Arg) {
  return Arg.substr(0, Arg.find('='));
}

} // namespace

HarnessArgs splitHarnessArgs(const std::vector<std::string> &Args) {
  HarnessArgs Out;
  for (size_t I = 0; I < Args.size(); ++I) {
    const std::string &Arg = Args[I];
    if (Arg.empty() || Arg[0] != '-') { // a filter
      Out.List.push_back(Arg);
      continue;
    }
    std::string_view Name = optionName(Arg);
    std::vector<std::string> Whole = {Arg};
    if (takesValue(Arg) && I + 1 < Args.size())
      Whole.push_back(Args[++I]);
    // What selects the tests goes to the listing; each single run selects
    // its test by exact name and runs alone, in the default format (its
    // summary line is read back).
    bool Selects = Name == "--ignored" || Name == "--include-ignored" ||
                   Name == "--exact" || Name == "--skip" ||
                   Name == "--exclude-should-panic" || Name == "-Z";
    bool ForListOnly = Name == "--exact" || Name == "--skip";
    bool Dropped = Name == "--test-threads" || Name == "--format" ||
                   Name == "-q" || Name == "--quiet" || Name == "--list" ||
                   Name == "--shuffle" || Name == "--shuffle-seed";
    if (Selects)
      Out.List.insert(Out.List.end(), Whole.begin(), Whole.end());
    if (!Dropped && !ForListOnly)
      Out.PerTest.insert(Out.PerTest.end(), Whole.begin(), Whole.end());
  }
  return Out;
}

std::vector<std::string> listedTests(std::string_view Output) {
  std::vector<std::string> Tests;
  constexpr std::string_view Suffix = ": test";
  size_t Pos = 0;
  while (Pos < Output.size()) {
    size_t End = Output.find('\n', Pos);
    std::string_view Line =
        Output.substr(Pos, End == std::string_view::npos ? End : End - Pos);
    Pos = End == std::string_view::npos ? Output.size() : End + 1;
    if (Line.size() > Suffix.size() && Line.ends_with(Suffix))
      Tests.emplace_back(Line.substr(0, Line.size() - Suffix.size()));
  }
  return Tests;
}

std::optional<TestCounts> parseTestResult(std::string_view Output) {
  size_t At = Output.rfind("test result: ");
  if (At == std::string_view::npos)
    return std::nullopt;
  std::string_view Rest = Output.substr(At);
  auto Count = [&](std::string_view Word) -> std::optional<int> {
    size_t W = Rest.find(" " + std::string(Word));
    if (W == std::string_view::npos)
      return std::nullopt;
    size_t Start = W;
    while (Start > 0 && std::isdigit(static_cast<unsigned char>(Rest[Start - 1])))
      --Start;
    if (Start == W)
      return std::nullopt;
    return std::stoi(std::string(Rest.substr(Start, W - Start)));
  };
  auto Passed = Count("passed;"), Failed = Count("failed;"),
       Ignored = Count("ignored;");
  if (!Passed || !Failed || !Ignored)
    return std::nullopt;
  return TestCounts{*Passed, *Failed, *Ignored};
}

std::string runnerVariable(std::string_view HostTriple) {
  std::string Name = "CARGO_TARGET_";
  for (char C : HostTriple)
    Name += C == '-' || C == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(C)));
  return Name + "_RUNNER";
}

TestIsolation isolateTests(const std::vector<std::string> &Args,
                           const Environment &Env,
                           const std::optional<fs::path> &SelfExe,
                           const std::optional<std::string> &HostTriple) {
  TestIsolation Out;
  Out.HarnessArgs = Args;
  bool Chosen = Env.getNonEmpty("RUST_TEST_THREADS").has_value();
  for (const std::string &A : Args)
    Chosen |= optionName(A) == "--test-threads";
  if (Chosen)
    return Out; // the user runs them in one process, as cargo test does
  // cargo splits a runner's command line at spaces.
  bool Usable = SelfExe && HostTriple &&
                SelfExe->string().find(' ') == std::string::npos;
  if (Usable) {
    Out.Runner = {runnerVariable(*HostTriple),
                  SelfExe->string() + " oxide " + std::string(TestRunnerCommand)};
  } else {
    Out.HarnessArgs.push_back("--test-threads=1");
  }
  return Out;
}

int runEachTestAlone(const std::vector<std::string> &Argv) {
  if (Argv.empty()) {
    printError({"the test runner needs a test binary",
                "it is run by cargo during `cargo oxide test`, not by hand"});
    return 1;
  }
  const std::string &Binary = Argv[0];
  std::vector<std::string> UserArgs(Argv.begin() + 1, Argv.end());
  HarnessArgs Split = splitHarnessArgs(UserArgs);

  // The default format ends the list with "N tests, M benchmarks", which
  // tells a libtest harness from a program of its own.
  std::vector<std::string> List = {Binary, "--list"};
  List.insert(List.end(), Split.List.begin(), Split.List.end());
  RunOptions Capture;
  Capture.CaptureStdout = true;
  ProcessResult Listed = runProcess(List, Capture);
  if (!Listed.Started) {
    printError({"cannot run the test binary " + Binary + ": " + Listed.StartError,
                "run `cargo oxide test` again; `--verbose` shows the commands"});
    return 127;
  }
  if (!Listed.succeeded() || Listed.Output.find(" tests, ") == std::string::npos) {
    // Not a libtest harness (`harness = false`): it runs its own way.
    std::vector<std::string> Direct = {Binary};
    Direct.insert(Direct.end(), UserArgs.begin(), UserArgs.end());
    return runProcess(Direct).shellStatus();
  }
  std::vector<std::string> Tests = listedTests(Listed.Output);
  bool ShowAll = std::any_of(UserArgs.begin(), UserArgs.end(), [](const std::string &A) {
    return A == "--nocapture" || A == "--show-output";
  });

  std::cout << "\nrunning " << Tests.size() << " test" << (Tests.size() == 1 ? "" : "s")
            << ", each in a process of its own\n";
  std::cout.flush();
  TestCounts Total;
  std::vector<std::string> Failures;
  RunOptions Both = Capture;
  Both.CaptureStderr = true;
  for (const std::string &Test : Tests) {
    std::vector<std::string> One = {Binary};
    One.insert(One.end(), Split.PerTest.begin(), Split.PerTest.end());
    One.insert(One.end(), {"--test-threads=1", "--exact", Test});
    ProcessResult R = runProcess(One, Both);
    std::optional<TestCounts> Counts = parseTestResult(R.Output);
    bool Failed = !R.succeeded() || !Counts || Counts->Failed > 0;
    std::string Outcome = Failed ? "FAILED"
                          : Counts->Ignored > 0 ? "ignored"
                                                : "ok";
    std::cout << "test " << Test << " ... " << Outcome << "\n";
    if (Failed || ShowAll)
      std::cout << "---- " << Test << ": its process's output ----\n"
                << R.Output << (R.Output.ends_with('\n') ? "" : "\n");
    if (Failed && !Counts)
      std::cout << "(the test's process " << R.describe() << ")\n";
    std::cout.flush();
    if (Failed) {
      ++Total.Failed;
      Failures.push_back(Test);
    } else if (Counts->Ignored > 0) {
      ++Total.Ignored;
    } else {
      ++Total.Passed;
    }
  }
  if (!Failures.empty()) {
    std::cout << "\nfailures:\n";
    for (const std::string &F : Failures)
      std::cout << "    " << F << "\n";
  }
  std::cout << "\ntest result: " << (Failures.empty() ? "ok" : "FAILED") << ". "
            << Total.Passed << " passed; " << Total.Failed << " failed; "
            << Total.Ignored << " ignored; 0 measured; 0 filtered out\n\n";
  std::cout.flush();
  return Failures.empty() ? 0 : 101;
}

} // namespace oxide::cli

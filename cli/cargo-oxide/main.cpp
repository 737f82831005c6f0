//===- main.cpp - cargo-oxide entry point ---------------------------------===//
//
// Part of oxide. `cargo oxide <command>`: cargo finds this executable on PATH
// as `cargo-oxide` and runs it as `cargo-oxide oxide <command> …`. main()
// parses the arguments, gathers the process context once, and hands over to
// the command (Commands.h).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Diagnostic.h"
#include "Options.h"

#include <exception>
#include <iostream>

using namespace oxide::cli;

namespace {

int dispatch(const Options &Opts, const Context &Ctx) {
  switch (Opts.Cmd) {
  case Command::None:
    std::cout << overviewHelp();
    return 0;
  case Command::Help:
    std::cout << (Opts.HelpTopic ? commandHelp(*Opts.HelpTopic)
                                 : overviewHelp());
    return 0;
  case Command::Version:
    std::cout << versionString() << "\n";
    return 0;
  case Command::Build:
    return runBuildCommand(Opts, Ctx);
  case Command::Run:
    return runRunCommand(Opts, Ctx);
  case Command::Launch:
    return runLaunchCommand(Opts, Ctx);
  case Command::Inspect:
    return runInspectCommand(Opts, Ctx);
  case Command::Pipeline:
    return runPipelineCommand(Opts, Ctx);
  case Command::Doctor:
    return runDoctorCommand(Opts, Ctx);
  case Command::Clean:
    return runCleanCommand(Opts, Ctx);
  case Command::New:
    return runNewCommand(Opts, Ctx);
  case Command::Test:
    return runTestCommand(Opts, Ctx);
  case Command::Debug:
    return runDebugCommand(Opts, Ctx);
  case Command::Sanitize:
    return runSanitizeCommand(Opts, Ctx);
  case Command::Bench:
    return runBenchCommand(Opts, Ctx);
  case Command::Check:
    return runCheckCommand(Opts, Ctx);
  case Command::Metadata:
    return runMetadataCommand(Opts, Ctx);
  case Command::TestRunner:
    return runTestRunnerCommand(Opts, Ctx);
  }
  return 1;
}

} // namespace

int main(int Argc, char **Argv) {
  std::vector<std::string> Args(Argv + (Argc > 0 ? 1 : 0), Argv + Argc);
  Expected<Options> Opts = parseArguments(Args);
  if (!Opts) {
    printError(Opts.error());
    return 1;
  }

  try {
    Context Ctx;
    Ctx.Env = Environment::current();
    std::error_code EC;
    Ctx.Cwd = std::filesystem::current_path(EC);
    if (EC) {
      printError({"cannot determine the current directory: " + EC.message(),
                  "cd into an existing directory and try again"});
      return 1;
    }
    Ctx.SelfExe = currentExecutable();
    Ctx.DetectGpu = detectGpu;
    return dispatch(*Opts, Ctx);
  } catch (const std::exception &E) {
    // std::filesystem throws on the odd I/O failure we did not foresee; say
    // what it was rather than abort with a core dump.
    printError({std::string("internal error: ") + E.what(),
                "please report this to the oxide developers with the command "
                "you ran"});
    return 1;
  }
}

//===- Debug.cpp - test, debug and sanitize -------------------------------===//
//
// Part of oxide. Three commands that build like `cargo oxide build` and then
// run something:
//
//  * test      `cargo test` with the oxide environment (test binaries go
//              through the device linker like any other link);
//  * debug     a build whose device code keeps debug info
//              (OXIDE_DEVICE_DEBUG=lines|full), then cuda-gdb;
//  * sanitize  a build with device line tables, then compute-sanitizer.
//
// Without cuda-gdb / compute-sanitizer (a build machine without the CUDA
// debugger tools) debug and sanitize still build, then print the command to
// run on a GPU machine and exit with 2, the status oxide uses for "built, but
// could not run here".
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Diagnostic.h"
#include "Toolchain.h"

#include <iostream>

namespace oxide::cli {

//===----------------------------------------------------------------------===//
// Command lines (pure; unit tested)
//===----------------------------------------------------------------------===//

std::vector<std::string> cargoTestArgs(const BuildPlan &Plan,
                                       const std::vector<std::string> &Args) {
  std::vector<std::string> Cmd = {"test"};
  std::vector<std::string> Selection = Plan.cargoSelection();
  Cmd.insert(Cmd.end(), Selection.begin(), Selection.end());
  if (!Args.empty()) {
    Cmd.push_back("--");
    Cmd.insert(Cmd.end(), Args.begin(), Args.end());
  }
  return Cmd;
}

fs::path binaryPath(const BuildPlan &Plan, const std::string &Bin) {
  return Plan.TargetDir / Plan.profileDir() / Bin;
}

std::string deviceDebugValue(DeviceDebugLevel Level) {
  return Level == DeviceDebugLevel::Full ? "full" : "lines";
}

std::vector<std::string> debuggerCommand(const fs::path &CudaGdb,
                                         const fs::path &Binary,
                                         const std::vector<std::string> &Args) {
  std::vector<std::string> Cmd = {CudaGdb.string(), "--args", Binary.string()};
  Cmd.insert(Cmd.end(), Args.begin(), Args.end());
  return Cmd;
}

std::vector<std::string> sanitizerCommand(const fs::path &Sanitizer,
                                          std::string_view Tool,
                                          const fs::path &Binary,
                                          const std::vector<std::string> &Args) {
  std::vector<std::string> Cmd = {Sanitizer.string(), "--tool",
                                  std::string(Tool), Binary.string()};
  Cmd.insert(Cmd.end(), Args.begin(), Args.end());
  return Cmd;
}

std::optional<fs::path> findComputeSanitizer(const Environment &Env) {
  if (auto Found = findCudaTool("compute-sanitizer", Env))
    return Found;
  // Older toolkits keep it in a folder of its own.
  fs::path Legacy =
      cudaToolkitRoot(Env) / "compute-sanitizer" / "compute-sanitizer";
  if (isExecutableFile(Legacy))
    return Legacy;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// test
//===----------------------------------------------------------------------===//


int runTestRunnerCommand(const Options &Opts, const Context &) {
  return runEachTestAlone(Opts.ProgramArgs);
}

int runTestCommand(const Options &Opts, const Context &Ctx) {
  Expected<BuildPlan> Plan = planBuild(Opts, Ctx, /*AllowWorkspace=*/true);
  std::vector<std::string> Filters = Opts.TestFilters;
  if (!Plan && Opts.Name && !Opts.Package) {
    // `cargo oxide test FILTER`, as `cargo test FILTER`: a NAME that is no
    // package is the first test filter, for the package here.
    Options AsFilter = Opts;
    AsFilter.Name.reset();
    if (Expected<BuildPlan> Here = planBuild(AsFilter, Ctx, true)) {
      Plan = std::move(Here);
      Filters.insert(Filters.begin(), *Opts.Name);
    }
  }
  if (!Plan) {
    printError(Plan.error());
    return 1;
  }
  // Filters go to the harness first, then what came after `--`.
  std::vector<std::string> HarnessArgs = Filters;
  HarnessArgs.insert(HarnessArgs.end(), Opts.ProgramArgs.begin(),
                     Opts.ProgramArgs.end());
  // Every package has test binaries (libraries too), not only those with a
  // binary: relink all of them when the arch or oxide-link changed.
  if (!Plan->Pkg)
    Plan->Linked = listMembers(Plan->WS);
  // Where the kernels run is chosen as for `run`: a machine without a GPU
  // tests them on the CPU emulator instead of failing every kernel test.
  Environment Env = Plan->environment(Ctx.Env);
  EmulationChoice Emulation = chooseEmulation(Opts.Emulate, Env, [] { return probeCudaDriver(); });
  if (Plan->Pkg) {
    Emulation = packageEmulation(*Plan->Pkg, Opts.Emulate, Emulation);
    if (auto Refusal = refuseEmulation(*Plan->Pkg, Emulation, Env)) {
      printError(*Refusal);
      return 1;
    }
  }
  if (!Emulation.Note.empty())
    std::cerr << Emulation.Note << "\n";
  if (Emulation.Value)
    Env.set("OXIDE_EMULATE", *Emulation.Value);
  // A kernel fault on a GPU ends CUDA for its whole process: each test runs
  // in a process of its own (TestRunner.cpp).
  TestIsolation Isolation =
      isolateTests(HarnessArgs, Env, Ctx.SelfExe, hostTriple(Env));
  if (Isolation.Runner) {
    Env.set(Isolation.Runner->first, Isolation.Runner->second);
    if (Opts.Verbose)
      printStatus("Isolating", "each test in a process of its own (" +
                                   Isolation.Runner->first + "=" +
                                   Isolation.Runner->second + ")");
  }
  CargoRunner Cargo(Env, Opts.Verbose);
  // The tests are built first, on their own, so that a device-link error
  // comes first and alone (CargoRunner filters a build's output; it leaves
  // the tests' own output as it is).
  std::vector<std::string> BuildOnly = cargoTestArgs(*Plan, {});
  BuildOnly.push_back("--no-run");
  int Status = runCargoWithOxide(*Plan, Cargo, /*ForceRelink=*/false,
                                 "cargo test", BuildOnly);
  if (Status == 0)
    Status = runCargoWithOxide(*Plan, Cargo, /*ForceRelink=*/false, "cargo test",
                               cargoTestArgs(*Plan, Isolation.HarnessArgs));
  if (Status != 0 && Status != 127)
    std::cerr << "hint: the failing tests or build errors are listed above; "
                 "`cargo oxide test "
              << (Opts.Name ? *Opts.Name + " " : std::string())
              << "-- --nocapture` shows the tests' output\n";
  return Status;
}

//===----------------------------------------------------------------------===//
// debug / sanitize
//===----------------------------------------------------------------------===//

namespace {

/// Builds the package of \p Opts with device debug info at \p Level and
/// returns its default binary; reports failures itself (status in \p Status).
std::optional<fs::path> buildForTool(const Options &Opts, const Context &Ctx,
                                     DeviceDebugLevel Level, int &Status) {
  Status = 1;
  Expected<BuildPlan> Plan = planBuild(Opts, Ctx, /*AllowWorkspace=*/false);
  if (!Plan) {
    printError(Plan.error());
    return std::nullopt;
  }
  // --bin / --example, else the package's default binary.
  Expected<std::string> Bin =
      Opts.Example ? Expected<std::string>(*Opts.Example)
      : Opts.Bin   ? Expected<std::string>(*Opts.Bin)
                   : Plan->Pkg->defaultBinary();
  if (!Bin) {
    printError(Bin.error());
    return std::nullopt;
  }
  Plan->Config.DeviceDebug = deviceDebugValue(Level);
  Environment Env = Plan->environment(Ctx.Env);
  // The dev profile has debug info already; the release one gets it here so
  // the host side is debuggable too and rustc's bitcode carries the lines
  // the device linker keeps.
  if (Plan->Release)
    Env.set("CARGO_PROFILE_RELEASE_DEBUG",
            Level == DeviceDebugLevel::Full ? "true" : "line-tables-only");
  CargoRunner Cargo(std::move(Env), Opts.Verbose);
  if ((Status = buildWithOxide(*Plan, Cargo, /*ForceRelink=*/false)))
    return std::nullopt;
  fs::path Binary = Opts.Example
                        ? Plan->TargetDir / Plan->profileDir() / "examples" / *Bin
                        : binaryPath(*Plan, *Bin);
  if (!isExecutableFile(Binary)) {
    Status = 1;
    printError({"cargo built no executable at " + Binary.string(),
                "check that `" + *Bin + "` is a " +
                    (Opts.Example ? "cargo example" : "binary") +
                    " of the package"});
    return std::nullopt;
  }
  return Binary;
}

/// Runs \p Cmd with this process's stdio; returns its shell status.
int runTool(const std::vector<std::string> &Cmd, bool Verbose) {
  if (Verbose)
    printStatus("Running", formatCommandLine(Cmd));
  ProcessResult R = runProcess(Cmd);
  if (!R.Started) {
    printError({"cannot run " + Cmd[0] + ": " + R.StartError,
                "check the CUDA toolkit installation (`cargo oxide doctor`)"});
    return 127;
  }
  return R.shellStatus();
}

/// The note for a missing tool: build done, here is the command for a GPU
/// machine. Exit status 2.
int toolMissing(std::string_view Tool, const Environment &Env,
                const std::vector<std::string> &Cmd) {
  printError({std::string(Tool) + " not found in " +
                  (cudaToolkitRoot(Env) / "bin").string() + " or PATH",
              "the program was built; on a GPU machine with the CUDA toolkit "
              "run:\n    " +
                  formatCommandLine(Cmd) +
                  "\n  or set OXIDE_CUDA_PATH to a toolkit that has " +
                  std::string(Tool)});
  return 2;
}

} // namespace

int runDebugCommand(const Options &Opts, const Context &Ctx) {
  int Status = 0;
  std::optional<fs::path> Binary =
      buildForTool(Opts, Ctx, Opts.DebugLevel, Status);
  if (!Binary)
    return Status;
  std::optional<fs::path> Gdb = findCudaTool("cuda-gdb", Ctx.Env);
  if (!Gdb)
    return toolMissing("cuda-gdb", Ctx.Env,
                       debuggerCommand("cuda-gdb", *Binary, Opts.ProgramArgs));
  return runTool(debuggerCommand(*Gdb, *Binary, Opts.ProgramArgs),
                 Opts.Verbose);
}

int runSanitizeCommand(const Options &Opts, const Context &Ctx) {
  int Status = 0;
  std::optional<fs::path> Binary =
      buildForTool(Opts, Ctx, DeviceDebugLevel::Lines, Status);
  if (!Binary)
    return Status;
  std::optional<fs::path> Sanitizer = findComputeSanitizer(Ctx.Env);
  if (!Sanitizer)
    return toolMissing("compute-sanitizer", Ctx.Env,
                       sanitizerCommand("compute-sanitizer", Opts.SanitizerTool,
                                        *Binary, Opts.ProgramArgs));
  int Result =
      runTool(sanitizerCommand(*Sanitizer, Opts.SanitizerTool, *Binary,
                               Opts.ProgramArgs),
              Opts.Verbose);
  if (Result != 0 && Result != 127)
    std::cerr << "hint: compute-sanitizer's report above names each error; "
                 "the device code has line tables, so it gives file:line\n";
  return Result;
}

} // namespace oxide::cli

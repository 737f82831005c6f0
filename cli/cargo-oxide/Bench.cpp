//===- Bench.cpp - cargo oxide bench --------------------------------------===//
//
// Part of oxide. `bench` builds the benchmark program (the package
// oxide-bench in <workspace>/benches) in release mode through the device
// linker and runs it, for the arch the package's Cargo.toml names
// (`[package.metadata.oxide] arch`) unless --arch is given. The program does
// the measuring; this command only decides how it is built and what it is
// told: the benchmark to run, and where the oxide tree and cargo-oxide are,
// for the rebuild benchmark.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Diagnostic.h"

namespace oxide::cli {

Options benchBuildOptions(const Options &Opts) {
  Options Build = Opts;
  Build.Name = std::string(BenchPackage);
  Build.Release = true;
  Build.ProgramArgs.clear();
  Build.List = false;
  return Build;
}

std::vector<std::string> benchProgramCommand(const fs::path &Binary,
                                             const Options &Opts) {
  std::vector<std::string> Argv = {Binary.string()};
  if (Opts.List)
    Argv.push_back("--list");
  if (Opts.Name)
    Argv.push_back(*Opts.Name);
  Argv.insert(Argv.end(), Opts.ProgramArgs.begin(), Opts.ProgramArgs.end());
  return Argv;
}

Environment benchEnvironment(const Environment &Base, const BuildPlan &Plan,
                             const std::optional<fs::path> &SelfExe) {
  Environment Env = Base;
  Env.set("OXIDE_BENCH_ROOT", Plan.WS.Root.string());
  Env.set("OXIDE_BENCH_SCRATCH",
          (Plan.TargetDir / "oxide" / "bench-rebuild").string());
  if (SelfExe)
    Env.set("OXIDE_BENCH_CARGO_OXIDE", SelfExe->string());
  else
    Env.unset("OXIDE_BENCH_CARGO_OXIDE");
  return Env;
}

int runBenchCommand(const Options &Opts, const Context &Ctx) {
  Expected<BuildPlan> Plan =
      planBuild(benchBuildOptions(Opts), Ctx, /*AllowWorkspace=*/false);
  if (!Plan) {
    Error E = Plan.error();
    if (E.Message.find("oxide-link") == std::string::npos &&
        E.Message.find("GPU architecture") == std::string::npos)
      E = {"cannot find the benchmarks (package `" + std::string(BenchPackage) +
               "`): " + E.Message,
           "run `cargo oxide bench` inside the oxide source tree, whose "
           "benches/ folder holds them"};
    printError(E);
    return 1;
  }
  CargoRunner Cargo(Plan->environment(Ctx.Env), Opts.Verbose);
  if (int Status = buildWithOxide(*Plan, Cargo, /*ForceRelink=*/false))
    return Status;

  // The program runs with the caller's environment, not the build's: the
  // rebuild benchmark starts builds of its own.
  Environment Env = benchEnvironment(Ctx.Env, *Plan, Ctx.SelfExe);
  std::vector<std::string> Argv =
      benchProgramCommand(binaryPath(*Plan, std::string(BenchPackage)), Opts);
  if (Opts.Verbose)
    printStatus("Running", formatCommandLine(Argv));
  RunOptions Run;
  Run.Env = &Env;
  ProcessResult Result = runProcess(Argv, Run);
  if (!Result.Started) {
    printError({"cannot run the benchmarks: " + Result.StartError,
                "the build above should have produced " + Argv.front()});
    return 127;
  }
  // 0, 1 (a benchmark failed its check) or 2 (no GPU), as the program said.
  return Result.shellStatus();
}

} // namespace oxide::cli

//===- Commands.h - the cargo oxide subcommands -----------------*- C++ -*-===//
//
// Part of oxide. One function per subcommand; each returns the process exit
// status and reports its own failures (error + hint). The implementations are
// grouped by what they share:
//
//   Build.cpp     build, run, clean, and the build plan inspect/pipeline reuse
//   Pipeline.cpp  inspect, pipeline
//   Doctor.cpp    doctor
//   Debug.cpp     test, debug, sanitize
//   New.cpp       new
//   Bench.cpp     bench
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_COMMANDS_H
#define OXIDE_CLI_COMMANDS_H

#include "Cargo.h"
#include "CudaDriver.h"
#include "Metadata.h"
#include "Options.h"
#include "Process.h"
#include "Project.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace oxide::cli {

namespace fs = std::filesystem;

/// What the commands need from the outside world, gathered once by main() so
/// that nothing below reads global state behind the caller's back.
struct Context {
  Environment Env;
  fs::path Cwd;
  std::optional<fs::path> SelfExe;
  /// The GPU present, for resolveArch() (main() passes detectGpu(); unset:
  /// no detection).
  std::function<std::optional<ComputeCapability>()> DetectGpu;
};

int runBuildCommand(const Options &Opts, const Context &Ctx);
int runRunCommand(const Options &Opts, const Context &Ctx);
int runLaunchCommand(const Options &Opts, const Context &Ctx);
int runCleanCommand(const Options &Opts, const Context &Ctx);
int runInspectCommand(const Options &Opts, const Context &Ctx);
int runPipelineCommand(const Options &Opts, const Context &Ctx);
int runDoctorCommand(const Options &Opts, const Context &Ctx);
int runNewCommand(const Options &Opts, const Context &Ctx);
int runTestCommand(const Options &Opts, const Context &Ctx);
int runDebugCommand(const Options &Opts, const Context &Ctx);
int runSanitizeCommand(const Options &Opts, const Context &Ctx);
int runTestRunnerCommand(const Options &Opts, const Context &Ctx);
int runBenchCommand(const Options &Opts, const Context &Ctx);
int runCheckCommand(const Options &Opts, const Context &Ctx);
int runMetadataCommand(const Options &Opts, const Context &Ctx);

/// A line of cargo's `--message-format=json` output, with rustc's message
/// for a failed device link ("linking with `…oxide-link` failed", the
/// diagnostics buried in a note) replaced by one compiler-message line per
/// diagnostic of \p DeviceDiagnostics (oxide-link's OXIDE_DIAGNOSTICS_JSON
/// lines), each keeping the package and target of the line it replaces.
/// Any other line, or no diagnostics, leaves \p Line as it is.
std::string replaceDeviceLinkMessage(std::string_view Line,
                                     std::string_view DeviceDiagnostics);

/// The error for a program that `cargo oxide run` ran and a signal killed:
/// "`vecadd` crashed: killed by SIGSEGV (signal 11, …)", with a hint for
/// the signal.
Error crashError(std::string_view Program, const ProcessResult &Result);

/// The absolute path of --manifest-path, checked to be a Cargo.toml;
/// nullopt without the flag.
Expected<std::optional<fs::path>> manifestPathOption(const Options &Opts,
                                                     const Context &Ctx);

/// Everything decided before cargo runs: which package, where the output
/// goes, and the oxide settings.
struct BuildPlan {
  Workspace WS;
  /// The package acted on; nullopt means every member of the workspace
  /// (`cargo oxide build` at a virtual workspace root).
  std::optional<Package> Pkg;
  /// The packages whose executables oxide links (and keeps stamps for).
  std::vector<Package> Linked;
  /// cargo's target directory, as `cargo metadata` reports it (so
  /// .cargo/config.toml's build.target-dir counts), or --target-dir.
  fs::path TargetDir;
  /// --target-dir: every cargo command gets it as CARGO_TARGET_DIR.
  bool TargetDirFromFlag = false;
  OxideBuildConfig Config;
  bool Release = false;
  /// `--profile NAME` other than dev and release.
  std::optional<std::string> Profile;
  /// cargo's own flags from the command line (features, -j, --locked, …).
  std::vector<std::string> CargoArgs;

  /// `--manifest-path … [--release | --profile P] [cargo flags]` for a
  /// cargo command.
  std::vector<std::string> cargoSelection() const;
  /// The folder under the target directory the profile's output goes to
  /// (debug, release, or a custom profile's name).
  std::string profileDir() const;
  /// The caller's environment with the oxide variables applied.
  Environment environment(const Environment &Base) const;
};

/// Builds the plan; fails when the package cannot be found or oxide-link is
/// missing. \p AllowWorkspace permits "no package" (build only).
Expected<BuildPlan> planBuild(const Options &Opts, const Context &Ctx,
                              bool AllowWorkspace);

/// Makes sure the next cargo build links the packages of \p Plan again: all
/// of them when \p Force, else those whose link stamp is out of date. cargo
/// cannot see a change of OXIDE_ARCH or of oxide-link by itself.
std::optional<Error> ensureRelink(const BuildPlan &Plan,
                                  const CargoRunner &Cargo, bool Force);

/// Records the link stamps after a successful build.
void recordLinkStamps(const BuildPlan &Plan);

/// Forgets the link stamps (the next build relinks).
void dropLinkStamps(const BuildPlan &Plan);

/// Runs the `cargo build` of \p Plan (relinking stale packages first) and
/// records the stamps; reports failures itself. Returns 0 on success.
int buildWithOxide(const BuildPlan &Plan, const CargoRunner &Cargo,
                   bool ForceRelink);

/// The same with another cargo command line (\p Step names it in errors):
/// relink stale packages, run `cargo <Args>`, record the stamps on success.
/// Returns 0, or cargo's shell status (127 when cargo did not start).
int runCargoWithOxide(const BuildPlan &Plan, const CargoRunner &Cargo,
                      bool ForceRelink, std::string_view Step,
                      const std::vector<std::string> &Args);

/// What a command that runs kernels (run, test) sets OXIDE_EMULATE to, and
/// the note it prints about it.
struct EmulationChoice {
  /// The value to set; nullopt leaves the environment as it is.
  std::optional<std::string> Value;
  /// Said on stderr when the emulator stands in for a missing GPU.
  std::string Note;
};

/// The choice for `--emulate[=MODE]` (\p Flag): that mode; else, when the
/// user did not set OXIDE_EMULATE in \p Env and \p Probe finds no GPU, the
/// emulator's default mode, with a note; else nothing (the GPU, or the
/// user's own choice). \p Probe is only called in that last case.
EmulationChoice chooseEmulation(EmulateMode Flag, const Environment &Env,
                                const std::function<DriverProbe()> &Probe);

/// \p Choice adjusted for what the package's Cargo.toml says: with
/// `[package.metadata.oxide] emulate = "host: WHY"`, the emulator's default
/// mode (`--emulate`, or no GPU) becomes host-code mode, with a note giving
/// WHY; an explicit `--emulate=ptx` or `=host` (\p Flag) stays as asked.
EmulationChoice packageEmulation(const Package &Pkg, EmulateMode Flag,
                                 EmulationChoice Choice);

/// The refusal to emulate a package whose Cargo.toml says
/// `[package.metadata.oxide] emulate = "no: WHY"` (\p Pkg) when the program
/// would run on the emulator: \p Choice sets an emulating OXIDE_EMULATE, or
/// leaves one in \p Env. The error names the package and gives WHY.
std::optional<Error> refuseEmulation(const Package &Pkg,
                                     const EmulationChoice &Choice,
                                     const Environment &Env);

//===----------------------------------------------------------------------===//
// `cargo oxide test`: each test in a process of its own (TestRunner.cpp)
//===----------------------------------------------------------------------===//

/// How `cargo oxide test` keeps one test's kernel fault from failing the
/// others.
struct TestIsolation {
  /// The arguments after `--` for the test harness.
  std::vector<std::string> HarnessArgs;
  /// The variable (CARGO_TARGET_<host>_RUNNER) and value that make this
  /// cargo-oxide the runner of every test binary; nullopt when the tests
  /// run as cargo runs them.
  std::optional<std::pair<std::string, std::string>> Runner;
};

/// Each test in a process of its own through the runner (\p SelfExe, for
/// the host \p HostTriple), unless the user chose threads (`--test-threads`
/// in \p Args, RUST_TEST_THREADS in \p Env): then nothing changes. Without
/// a usable runner, one test at a time in one process (`--test-threads=1`).
TestIsolation isolateTests(const std::vector<std::string> &Args,
                           const Environment &Env,
                           const std::optional<fs::path> &SelfExe,
                           const std::optional<std::string> &HostTriple);

/// cargo's runner variable for a target: CARGO_TARGET_<TRIPLE>_RUNNER.
std::string runnerVariable(std::string_view HostTriple);

/// Test-harness arguments split for the runner: what selects the tests
/// (filters, --ignored, --include-ignored, --exact, --skip) goes to the
/// listing; the rest, but what cannot apply to one test run alone
/// (--test-threads, --format, --quiet, --shuffle), to each test's run.
struct HarnessArgs {
  std::vector<std::string> List;
  std::vector<std::string> PerTest;
};
HarnessArgs splitHarnessArgs(const std::vector<std::string> &Args);

/// The test names in a harness's `--list` output ("NAME: test" lines).
std::vector<std::string> listedTests(std::string_view Output);

/// The counts of a harness's summary line ("test result: ok. 1 passed; 0
/// failed; 2 ignored; ...").
struct TestCounts {
  int Passed = 0;
  int Failed = 0;
  int Ignored = 0;
};
std::optional<TestCounts> parseTestResult(std::string_view Output);

/// The runner: \p Argv is a test binary and its harness arguments. Lists its
/// tests, runs each alone, reports like the harness; 0 when all passed, 101
/// when some failed. A binary without libtest's harness runs as it is.
int runEachTestAlone(const std::vector<std::string> &Argv);

/// `cargo test <selection> [-- ARGS]` for \p Plan.
std::vector<std::string> cargoTestArgs(const BuildPlan &Plan,
                                       const std::vector<std::string> &Args);

/// <target>/<profile>/<Bin>: where cargo puts the binary \p Bin.
fs::path binaryPath(const BuildPlan &Plan, const std::string &Bin);

/// The OXIDE_DEVICE_DEBUG value for a level: "lines" or "full".
std::string deviceDebugValue(DeviceDebugLevel Level);

/// `cuda-gdb --args BINARY ARGS`.
std::vector<std::string> debuggerCommand(const fs::path &CudaGdb,
                                         const fs::path &Binary,
                                         const std::vector<std::string> &Args);

/// `compute-sanitizer --tool TOOL BINARY ARGS`.
std::vector<std::string> sanitizerCommand(const fs::path &Sanitizer,
                                          std::string_view Tool,
                                          const fs::path &Binary,
                                          const std::vector<std::string> &Args);

/// compute-sanitizer: <toolkit>/bin, <toolkit>/compute-sanitizer, else PATH.
std::optional<fs::path> findComputeSanitizer(const Environment &Env);

/// The SASS disassembler command for \p Cubin: nvdisasm, else cuobjdump
/// -sass; empty when neither is given.
std::vector<std::string> sassCommand(const std::optional<fs::path> &Nvdisasm,
                                     const std::optional<fs::path> &Cuobjdump,
                                     const fs::path &Cubin);

/// The package that holds the benchmarks (<workspace>/benches).
inline constexpr std::string_view BenchPackage = "oxide-bench";

/// The options `bench` builds with: the package BenchPackage, release; the
/// arch resolved as for every command (its Cargo.toml names sm_90a, which
/// the wgmma GEMM needs, so OXIDE_ARCH does not skew a comparison).
Options benchBuildOptions(const Options &Opts);

/// `<Binary> [--list] [NAME] [ARGS…]`: the benchmark program's command line.
std::vector<std::string> benchProgramCommand(const fs::path &Binary,
                                             const Options &Opts);

/// The benchmark program's environment: \p Base plus OXIDE_BENCH_ROOT (the
/// workspace), OXIDE_BENCH_SCRATCH (<target>/oxide/bench-rebuild) and
/// OXIDE_BENCH_CARGO_OXIDE (\p SelfExe), which the rebuild benchmark needs.
Environment benchEnvironment(const Environment &Base, const BuildPlan &Plan,
                             const std::optional<fs::path> &SelfExe);

/// A human-readable size: "812 B", "48.2 KiB", "3.1 MiB".
std::string formatSize(uintmax_t Bytes);

} // namespace oxide::cli

#endif // OXIDE_CLI_COMMANDS_H

//===- Options.h - the cargo oxide command line -----------------*- C++ -*-===//
//
// Part of oxide. Turns the argument vector into an Options value; nothing here
// touches the file system or the environment, so every rule is unit tested.
//
// cargo runs an external subcommand `cargo oxide …` as `cargo-oxide oxide …`
// (the subcommand name is repeated as the first argument). We also accept being
// run directly as `cargo-oxide build …`, which is handy from scripts and CMake.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_OPTIONS_H
#define OXIDE_CLI_OPTIONS_H

#include "Diagnostic.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxide::cli {

enum class Command {
  None, ///< no subcommand: print the overview
  Help, ///< `help [SUBCOMMAND]`, `--help`, `SUBCOMMAND --help`
  Version,
  Build,
  Run,
  Inspect,
  Pipeline,
  Doctor,
  Clean,
  New,
  Test,
  Debug,
  Sanitize,
  Bench,
  Check,
  Metadata,
  Launch,
  /// The hidden runner `cargo oxide test` gives cargo (TestRunner.cpp).
  TestRunner,
};

/// `debug`: how much device debug info the build keeps (OXIDE_DEVICE_DEBUG).
enum class DeviceDebugLevel { Lines, Full };

/// The compute-sanitizer tools `sanitize --tool` accepts.
inline constexpr const char *SanitizerTools[] = {"memcheck", "racecheck",
                                                 "initcheck", "synccheck"};

/// What `--emulate[=MODE]` asks for: the GPU (no flag), the emulator's
/// default mode (`--emulate`), the kernels' Rust code on the CPU
/// (`--emulate=host`), or the device linker's PTX on the CPU (`--emulate=ptx`).
enum class EmulateMode { Off, Default, HostCode, DeviceCode };

struct Options {
  Command Cmd = Command::None;
  /// For Command::Help: the subcommand asked about, if any.
  std::optional<Command> HelpTopic;
  /// The example / package to act on, or for `new` the project to create.
  std::optional<std::string> Name;
  bool Release = false;
  /// `--arch TARGET`, a target of Targets.def; unset lets resolveArch()
  /// (Cargo.h) look further: the package, OXIDE_ARCH, the GPU, the default.
  std::optional<std::string> Arch;
  bool Verbose = false;
  /// `--profile NAME` for a profile other than dev and release (those two
  /// set Release); cargo's output folder is then named after it.
  std::optional<std::string> Profile;
  /// cargo's own flags of the table in Options.cpp (`--features`, `-j`,
  /// `--locked`, `--bin`, …), passed to cargo unchanged.
  std::vector<std::string> CargoArgs;
  /// `-p/--package NAME`: the package, as NAME is; for `test` NAME is then a
  /// test filter.
  std::optional<std::string> Package;
  /// `--manifest-path PATH`: the package (or workspace) whose Cargo.toml
  /// that is, instead of the one the current directory is in.
  std::optional<std::string> ManifestPath;
  /// `--target-dir DIR`: cargo's target directory (every cargo command
  /// cargo-oxide runs gets it, through CARGO_TARGET_DIR).
  std::optional<std::string> TargetDir;
  /// `--bin NAME` / `--example NAME`: the executable `run`, `debug` and
  /// `sanitize` act on (also passed to cargo).
  std::optional<std::string> Bin;
  std::optional<std::string> Example;
  /// `test`: the names after NAME, before `--`: test-name filters for the
  /// harness.
  std::vector<std::string> TestFilters;
  /// `check --message-format=json`: rustc's JSON diagnostics on stdout.
  bool JsonMessages = false;
  /// `metadata --print WHAT`: only that value (arch, emulate).
  std::optional<std::string> Print;
  /// `run`, `test`, `debug`, `sanitize`: everything after `--`, passed to
  /// the program (for `test`, to the test harness).
  std::vector<std::string> ProgramArgs;
  /// `inspect --sass`: also print the SASS of each PTX module.
  bool Sass = false;
  /// `debug`: line tables (default) or `--full` device debug info.
  DeviceDebugLevel DebugLevel = DeviceDebugLevel::Lines;
  /// `sanitize --tool T` (memcheck when not given).
  std::string SanitizerTool = "memcheck";
  /// `doctor --runtime`: only the checks running built programs needs.
  bool RuntimeOnly = false;
  /// `new --async`: the cuda-async template.
  bool Async = false;
  /// `bench --list`: list the benchmarks instead of running them.
  bool List = false;
  /// `run --emulate[=host|ptx]`, `test --emulate[=host|ptx]`: run the
  /// kernels on the CPU emulator (OXIDE_EMULATE for the program).
  EmulateMode Emulate = EmulateMode::Off;
  /// `run --gpus N`: N processes, the ranks of one job.
  std::optional<unsigned> Gpus;
};

/// The hidden subcommand cargo runs each test binary through during
/// `cargo oxide test` (`cargo-oxide oxide __run-tests BINARY ARGS...`;
/// Command::TestRunner, everything after it the binary's).
inline constexpr std::string_view TestRunnerCommand = "__run-tests";

/// The OXIDE_EMULATE value that selects \p Mode: "1" (the emulator's
/// default mode), "host" or "ptx"; empty for Off.
std::string_view emulateValue(EmulateMode Mode);

/// Parses the arguments after argv[0]. A leading "oxide" (how cargo invokes
/// an external subcommand) is skipped.
Expected<Options> parseArguments(const std::vector<std::string> &Args);

/// The spelling of a subcommand ("build", …); empty for None/Help/Version.
std::string_view commandName(Command Cmd);

/// The subcommand called \p Name, if there is one.
std::optional<Command> commandFromName(std::string_view Name);

/// Whether \p Arch is a GPU target of compiler/include/oxide/Targets.def
/// (sm_80, sm_90a, sm_100f, …), spelled as ptxas and LLVM spell it.
bool isValidArch(std::string_view Arch);

/// The error for an --arch, package `arch` or OXIDE_ARCH that is not a
/// target: the known ones listed, \p Origin ("--arch", "OXIDE_ARCH", …)
/// appended when not empty.
Error unknownArchError(std::string_view Arch, std::string_view Origin);

/// The flags `cargo oxide CMD` accepts, as `--release, --arch TARGET, …`
/// (every spelling from the one table that parsing reads), for errors.
std::string acceptedFlags(Command Cmd);

/// The overview (`cargo oxide --help`).
std::string overviewHelp();

/// The help of one subcommand (`cargo oxide help build`).
std::string commandHelp(Command Cmd);

/// The subcommand name closest to \p Typo, for "did you mean"; empty if none
/// is close.
std::string suggestCommand(std::string_view Typo);

/// The version line (`cargo oxide --version`).
std::string versionString();

} // namespace oxide::cli

#endif // OXIDE_CLI_OPTIONS_H

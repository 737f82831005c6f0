//===- Cargo.h - running cargo with the oxide environment -------*- C++ -*-===//
//
// Part of oxide. A build with oxide is an ordinary cargo build with a few
// environment variables set (see docs/ABI.md §4 for the device linker's side):
//
//   rustflags          += -C linker=<oxide-link> -C save-temps
//                         rustc then calls oxide-link for every link, and keeps
//                         the unoptimised bitcode (*.no-opt.bc) it reads.
//                         They must join the user's rustflags, not replace
//                         them. cargo takes rustflags from the first of
//                         CARGO_ENCODED_RUSTFLAGS, RUSTFLAGS, the config's
//                         target.*.rustflags, its build.rustflags; setting
//                         RUSTFLAGS would drop the config's. So when the user
//                         set one of the first two we extend it; otherwise
//                         we set the environment form of the config key in
//                         use, CARGO_BUILD_RUSTFLAGS or
//                         CARGO_TARGET_<HOST>_RUSTFLAGS, which cargo appends
//                         to the files' array (stable and nightly alike;
//                         `cargo config get`, which would tell the key
//                         exactly, is nightly-only, so the files are
//                         scanned for a target.*.rustflags key).
//   CARGO_INCREMENTAL  =  0: with incremental builds, save-temps can leave the
//                         bitcode of a reused codegen unit stale or missing
//   OXIDE_ARCH         =  the sm_XX to generate PTX for
//   OXIDE_DUMP_DIR     =  where oxide-link writes each stage (inspect/pipeline)
//   OXIDE_VERBOSE      =  1 with --verbose
//   OXIDE_DEVICE_DEBUG =  lines | full for `debug` and `sanitize` (the
//                         device linker keeps line tables / all debug info)
//
// The cargo we run is the one that ran us (env CARGO) or `cargo` from PATH,
// with the rest of the environment untouched: `cargo +nightly oxide build`
// works because rustup's RUSTUP_TOOLCHAIN is inherited.
//
// cargo does not know that OXIDE_ARCH or the device linker itself affect the
// output, so a build it considers fresh could keep PTX for another arch or
// from an older oxide-link. A link stamp per package (arch, linker path and
// linker mtime) lets us force a relink - by cleaning just that package - when
// one of those changed.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_CARGO_H
#define OXIDE_CLI_CARGO_H

#include "CudaDriver.h"
#include "Diagnostic.h"
#include "Process.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxide::cli {

namespace fs = std::filesystem;

/// Where the GPU target of a build came from, in the order resolveArch()
/// consults them.
enum class ArchSource { Flag, Package, Environment, Gpu, Default };

/// What resolveArch() reads besides the environment.
struct ArchInputs {
  /// `--arch`.
  std::optional<std::string> Flag;
  /// The package's `[package.metadata.oxide] arch`, and its Cargo.toml (for
  /// messages).
  std::optional<std::string> PackageArch;
  fs::path ManifestPath;
  /// Asks the driver for the GPU present (dlopen'ed libcuda; never a link
  /// dependency); nullopt when there is none. Only called when nothing
  /// before it named a target. Unset means no detection.
  std::function<std::optional<ComputeCapability>()> DetectGpu;
};

/// The target a build is for, and where that came from.
struct ArchChoice {
  std::string Arch;
  ArchSource Source = ArchSource::Default;
  /// "--arch", "[package.metadata.oxide] arch in /p/Cargo.toml",
  /// "OXIDE_ARCH", "the GPU found (compute capability 9.0)", "the default".
  std::string Origin;
};

/// The one resolution order of every command: --arch, else the package's
/// `[package.metadata.oxide] arch`, else a non-empty OXIDE_ARCH, else the
/// GPU present (its compute capability's target in Targets.def), else
/// oxide::DefaultTargetName. A name that is not a target of Targets.def is
/// an error listing the known ones and saying where the name came from.
Expected<ArchChoice> resolveArch(const ArchInputs &In, const Environment &Env);

/// Where oxide-link is expected: $OXIDE_LINK (made absolute), else next to
/// \p SelfExe. Empty when neither is known.
fs::path expectedDeviceLinker(const Environment &Env,
                              const std::optional<fs::path> &SelfExe);

/// expectedDeviceLinker(), checked to be an executable file.
Expected<fs::path> locateDeviceLinker(const Environment &Env,
                                      const std::optional<fs::path> &SelfExe);

/// CARGO_TARGET_<TRIPLE>_RUSTFLAGS, the environment form of
/// `target.<triple>.rustflags`.
std::string targetRustFlagsVariable(std::string_view Triple);

/// Whether the text of a .cargo/config.toml sets rustflags in a
/// `[target.…]` table (or as a dotted `target.….rustflags` key).
bool configSetsTargetRustFlags(std::string_view Text);

/// The config files cargo reads from \p Cwd, nearest first: every
/// .cargo/config.toml (or .cargo/config) of Cwd and its parents, then
/// $CARGO_HOME's (default ~/.cargo).
std::vector<fs::path> cargoConfigFiles(const fs::path &Cwd,
                                       const Environment &Env);

/// The variable oxide's rustflags go into when the user set neither
/// RUSTFLAGS nor CARGO_ENCODED_RUSTFLAGS (see the file comment):
/// CARGO_TARGET_<host>_RUSTFLAGS when the user's configuration or
/// environment has target rustflags (cargo would ignore build.rustflags
/// then; \p HostTriple is only asked then), else CARGO_BUILD_RUSTFLAGS.
std::string chooseRustFlagsVariable(
    const Environment &Env, const fs::path &Cwd,
    const std::function<std::optional<std::string>()> &HostTriple);

/// The rustc flags oxide adds, as separate arguments.
std::vector<std::string> oxideRustFlags(const fs::path &Linker);

/// Appends \p Flags to a RUSTFLAGS value (space separated), skipping any that
/// are already there so a nested invocation does not pile them up.
std::string appendRustFlags(std::string_view Existing,
                            const std::vector<std::string> &Flags);

/// The same for CARGO_ENCODED_RUSTFLAGS (separated by 0x1f).
std::string appendEncodedRustFlags(std::string_view Existing,
                                   const std::vector<std::string> &Flags);

/// What a build needs to know besides the cargo command line.
struct OxideBuildConfig {
  fs::path Linker; ///< absolute path of oxide-link
  std::string Arch;
  bool Verbose = false;
  std::optional<fs::path> DumpDir;
  /// Which rustc builds: rustup's RUSTUP_TOOLCHAIN, else $RUSTC, else empty.
  /// cargo keeps each toolchain's artifacts apart, so stamps are too.
  std::string Toolchain;
  /// Where the rustflags go when the user set no RUSTFLAGS
  /// (chooseRustFlagsVariable()); empty: CARGO_BUILD_RUSTFLAGS.
  std::string RustFlagsVariable;
  /// OXIDE_DEVICE_DEBUG for the device linker: "" (strip debug info),
  /// "lines" (line tables only) or "full". Part of the link stamp.
  std::string DeviceDebug;
};

/// The Toolchain of an OxideBuildConfig, from the environment.
std::string toolchainOf(const Environment &Env);

/// Sets the variables in the file comment on \p Env. The rustflags extend
/// CARGO_ENCODED_RUSTFLAGS or RUSTFLAGS when the user set one, else
/// Config.RustFlagsVariable; a linker path with whitespace forces the
/// encoded form, since cargo splits the others at spaces.
void applyOxideEnvironment(Environment &Env, const OxideBuildConfig &Config);

/// The names of the variables applyOxideEnvironment() may set, for --verbose.
const std::vector<std::string> &oxideEnvironmentNames();

/// The cargo program to run: $CARGO (set by cargo for its subcommands), else
/// `cargo` from PATH.
std::string cargoProgram(const Environment &Env);

/// Puts a failed device link's diagnostics in front. rustc reports a
/// failing linker as "error: linking with `…/oxide-link` failed", then the
/// whole linker command line (a thousand characters and more) and only then,
/// indented under "= note:", what oxide-link said. This drops rustc's
/// framing and the command line and prints oxide's diagnostics as they
/// are; everything else passes unchanged. Fed cargo's stderr in pieces as
/// they come; each call returns what to print now.
class LinkFailureFilter {
public:
  std::string feed(std::string_view Chunk);
  /// What is left at the end (an unfinished last line).
  std::string finish();
  /// Whether a device-link failure was rewritten.
  bool rewrote() const { return Rewrote; }

private:
  enum class State { PassThrough, Header, Body };
  State Now = State::PassThrough;
  std::string Pending;
  bool Rewrote = false;
  std::string line(std::string_view Line);
};

/// Text without its ANSI escape sequences (cargo's colours).
std::string stripAnsi(std::string_view Text);

/// Runs cargo subcommands with one prepared environment.
/// The `--config` arguments every cargo subcommand cargo-oxide runs gets:
/// the emulator's crates (ptx-vm, cuda-emulator) optimised in debug builds
/// too, as `cargo oxide new` writes into a new project's manifest.
const std::vector<std::string> &emulatorProfileArgs();

class CargoRunner {
public:
  CargoRunner(Environment Env, bool Verbose)
      : Env(std::move(Env)), Verbose(Verbose) {}

  /// Runs `cargo <Args>`; with --verbose, first prints the command line
  /// preceded by the oxide variables, so it can be pasted into a shell.
  /// Without --verbose, a build's (`build`, `rustc`, `test --no-run`)
  /// stderr goes through a
  /// LinkFailureFilter, cargo's colours and progress bar kept when stderr
  /// is a terminal.
  ProcessResult run(const std::vector<std::string> &Args) const;

  const Environment &environment() const { return Env; }

private:
  Environment Env;
  bool Verbose;
};

/// The error for a failed cargo step: "cargo build failed (exit code 101)"
/// with a hint; or, when cargo did not start, how to install it.
Error cargoFailure(std::string_view Step, const ProcessResult &Result);

/// The content of a link stamp for \p Config: everything that changes the
/// device code without cargo noticing.
std::string linkStamp(const OxideBuildConfig &Config);

/// <target>/oxide/.stamps/<package>-<profile>[@<toolchain>]: the stamp of
/// the last successful oxide build of that package with that toolchain;
/// \p ProfileDir is the profile's folder (debug, release, a custom name).
fs::path linkStampPath(const fs::path &TargetDir, const std::string &Package,
                       std::string_view ProfileDir,
                       std::string_view Toolchain = {});

/// Whether the stamp at \p Path exists and equals \p Stamp.
bool linkStampMatches(const fs::path &Path, const std::string &Stamp);

/// Records \p Stamp at \p Path; failures are ignored (the next build just
/// relinks again).
void writeLinkStamp(const fs::path &Path, const std::string &Stamp);

} // namespace oxide::cli

#endif // OXIDE_CLI_CARGO_H

//===- Options.cpp - the cargo oxide command line -------------------------===//
//
// Part of oxide. See Options.h. The table below is the single description of
// every subcommand: what it is called, what it accepts and its help text.
// Parsing and help are both driven by it so they cannot drift apart.
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include "oxide/Targets.h"

#include <algorithm>
#include <array>
#include <span>
#include <cctype>

// OXIDE_VERSION comes from CMake, which reads it from the root Cargo.toml.
#ifndef OXIDE_VERSION
#error "OXIDE_VERSION is set by cli/cargo-oxide/CMakeLists.txt"
#endif
#ifndef OXIDE_LLVM_MAJOR
#define OXIDE_LLVM_MAJOR 22
#endif

namespace oxide::cli {

namespace {

/// What a subcommand accepts besides its positional name.
enum AcceptFlags : unsigned {
  AcceptRelease = 1u << 0,
  AcceptArch = 1u << 1,
  AcceptVerbose = 1u << 2,
  /// cargo's package selection of CargoFlags: -p, --manifest-path,
  /// features, --profile.
  AcceptCargoSelect = 1u << 3,
  AcceptProgramArgs = 1u << 4,
  AcceptSass = 1u << 5,     ///< inspect --sass
  AcceptFull = 1u << 6,     ///< debug --full
  AcceptTool = 1u << 7,     ///< sanitize --tool T
  AcceptAsync = 1u << 8,    ///< new --async
  AcceptRuntime = 1u << 9,  ///< doctor --runtime
  AcceptList = 1u << 10,    ///< bench --list
  AcceptEmulate = 1u << 11, ///< run/test --emulate
  /// cargo's build settings of CargoFlags: -j, --target-dir, --locked,
  /// --offline, --frozen.
  AcceptCargoBuild = 1u << 12,
  /// cargo's target selection of CargoFlags: --bin, --example.
  AcceptCargoTargets = 1u << 13,
  AcceptTestFilters = 1u << 14,  ///< test NAME FILTER...
  AcceptMessageFormat = 1u << 15, ///< check --message-format=json
  AcceptPrint = 1u << 16,         ///< metadata --print WHAT
  AcceptGpus = 1u << 17,          ///< run --gpus N
};

/// What cargo-oxide does with one of cargo's flags besides passing it on.
enum class CargoFlagUse {
  Forward,      ///< only passed on to cargo
  Package,      ///< Options::Package (cargo gets --manifest-path instead)
  ManifestPath, ///< Options::ManifestPath (likewise)
  TargetDir,    ///< Options::TargetDir (cargo gets CARGO_TARGET_DIR)
  Profile,      ///< Options::Release / Options::Profile
  Bin,          ///< Options::Bin, and passed on
  Example,      ///< Options::Example, and passed on
};

/// One of cargo's flags that cargo oxide accepts. This table is the only
/// list: parsing, help and the "accepted flags" of errors all read it.
struct CargoFlagSpec {
  std::string_view Long;
  std::string_view Short; ///< "-p", or empty
  std::string_view Value; ///< the value's name in help; empty: no value
  unsigned Group;         ///< the AcceptFlags bit a command needs for it
  CargoFlagUse Use;
  std::string_view Help;
};

constexpr CargoFlagSpec CargoFlags[] = {
    {"--package", "-p", "NAME", AcceptCargoSelect, CargoFlagUse::Package,
     "the package to act on (like NAME)"},
    {"--manifest-path", "", "PATH", AcceptCargoSelect,
     CargoFlagUse::ManifestPath, "the Cargo.toml of the package or workspace"},
    {"--features", "-F", "LIST", AcceptCargoSelect, CargoFlagUse::Forward,
     "cargo features to enable"},
    {"--all-features", "", "", AcceptCargoSelect, CargoFlagUse::Forward,
     "enable every feature"},
    {"--no-default-features", "", "", AcceptCargoSelect,
     CargoFlagUse::Forward, "do not enable the default feature"},
    {"--profile", "", "NAME", AcceptCargoSelect, CargoFlagUse::Profile,
     "build with that cargo profile (release: like --release)"},
    {"--bin", "", "NAME", AcceptCargoTargets, CargoFlagUse::Bin,
     "only that binary (run, debug, sanitize: the one to run)"},
    {"--example", "", "NAME", AcceptCargoTargets, CargoFlagUse::Example,
     "only that cargo example (run, debug, sanitize: the one to run)"},
    {"--jobs", "-j", "N", AcceptCargoBuild, CargoFlagUse::Forward,
     "cargo's parallel jobs"},
    {"--target-dir", "", "DIR", AcceptCargoBuild, CargoFlagUse::TargetDir,
     "cargo's target directory"},
    {"--locked", "", "", AcceptCargoBuild, CargoFlagUse::Forward,
     "require Cargo.lock to be up to date"},
    {"--offline", "", "", AcceptCargoBuild, CargoFlagUse::Forward,
     "never use the network"},
    {"--frozen", "", "", AcceptCargoBuild, CargoFlagUse::Forward,
     "--locked and --offline"},
};

/// What one of cargo oxide's own flags sets in Options.
enum class OxideFlagUse {
  Release,       ///< Options::Release
  Arch,          ///< Options::Arch (a known GPU target)
  Verbose,       ///< Options::Verbose
  Emulate,       ///< Options::Emulate (`--emulate` or `--emulate=MODE`)
  Sass,          ///< Options::Sass
  Full,          ///< Options::DebugLevel = Full
  Tool,          ///< Options::SanitizerTool
  Async,         ///< Options::Async
  Runtime,       ///< Options::RuntimeOnly
  List,          ///< Options::List
  MessageFormat, ///< Options::JsonMessages
  Print,         ///< Options::Print
  Gpus,          ///< Options::Gpus (a positive count)
};

constexpr std::string_view EmulateModes[] = {"ptx", "host"};
constexpr std::string_view MessageFormats[] = {"human", "json"};
constexpr std::string_view PrintValues[] = {"arch", "emulate", "package"};

/// One of cargo oxide's own flags. With CargoFlags this is the only list:
/// parsing, the overview, each command's help and the "accepted flags" of
/// errors all read it. The release, arch and verbose flags come before
/// cargo's flags in every list, the rest after them.
struct OxideFlagSpec {
  std::string_view Long;
  std::string_view Short; ///< "-r", or empty
  /// The value's name in help ("TOOL"); empty: no value; "[=MODE]": a value
  /// that can only be attached (`--emulate=ptx`) and may be left out.
  std::string_view Value;
  unsigned Group; ///< the AcceptFlags bit a command needs for it
  OxideFlagUse Use;
  /// The help after the flag; "\n" continues in the help column.
  std::string_view Help;
  /// The values it takes; empty: any (--arch checks its own).
  std::span<const std::string_view> Choices = {};
  /// What a value is called in the error for one not in Choices
  /// ("unknown emulation mode `gpu`").
  std::string_view ValueNoun = {};
  /// What that error suggests.
  std::string_view ChoicesHint = {};
  /// A value for the "needs a value" error's example.
  std::string_view Example = {};
};

constexpr OxideFlagSpec OxideFlags[] = {
    {"--release", "-r", "", AcceptRelease, OxideFlagUse::Release,
     "build with the release profile"},
    {"--arch", "", "TARGET", AcceptArch, OxideFlagUse::Arch,
     "GPU target to compile for (archHelp)", {}, {}, {}, "sm_90"},
    {"--verbose", "-v", "", AcceptVerbose, OxideFlagUse::Verbose,
     "show the commands run and what the device linker does"},
    {"--emulate", "", "[=MODE]", AcceptEmulate, OxideFlagUse::Emulate,
     "run the kernels on the CPU: MODE ptx (the device\n"
     "linker's PTX, the default without MODE) or\n"
     "host (the kernels' Rust code)",
     EmulateModes, "emulation mode",
     "use --emulate or --emulate=ptx (the device linker's PTX) or "
     "--emulate=host (the kernels' Rust code)"},
    {"--gpus", "", "N", AcceptGpus, OxideFlagUse::Gpus,
     "run N processes, one per GPU, as the ranks of\n"
     "one job (OXIDE_RANK, OXIDE_WORLD_SIZE,\n"
     "OXIDE_LOCAL_RANK, OXIDE_NCCL_ADDR set)",
     {}, {}, {}, "2"},
    {"--sass", "", "", AcceptSass, OxideFlagUse::Sass,
     "also print the SASS of each module (needs ptxas\nand nvdisasm or "
     "cuobjdump)"},
    {"--full", "", "", AcceptFull, OxideFlagUse::Full,
     "keep all device debug info (default: line tables)"},
    {"--tool", "", "TOOL", AcceptTool, OxideFlagUse::Tool,
     "memcheck (default), racecheck, initcheck, synccheck", {},
     "compute-sanitizer tool", "use --tool memcheck, racecheck, initcheck or synccheck", "memcheck"},
    {"--async", "", "", AcceptAsync, OxideFlagUse::Async,
     "a cuda-async template (awaited DeviceOperations)"},
    {"--runtime", "", "", AcceptRuntime, OxideFlagUse::Runtime,
     "only what running built programs needs (driver,\nGPU, a kernel launch)"},
    {"--list", "", "", AcceptList, OxideFlagUse::List,
     "list the benchmarks and what each measures"},
    {"--message-format", "", "FMT", AcceptMessageFormat,
     OxideFlagUse::MessageFormat,
     "human (default) or json (rustc's JSON diagnostics)", MessageFormats,
     "message format", "use --message-format=json (rustc's JSON diagnostics, for editors) or "
     "human (the default)",
     "json"},
    {"--print", "", "WHAT", AcceptPrint, OxideFlagUse::Print,
     "only that value: arch, emulate or package", PrintValues,
     "value for --print:", "use --print arch, --print emulate or --print package", "arch"},
};

/// The OxideFlags entry \p Arg spells (`-r`, `--arch`, `--arch=sm_90`,
/// `--emulate=ptx`).
const OxideFlagSpec *matchOxideFlag(std::string_view Arg) {
  for (const OxideFlagSpec &Flag : OxideFlags) {
    if (Arg == Flag.Long || (!Flag.Short.empty() && Arg == Flag.Short))
      return &Flag;
    if (!Flag.Value.empty() && Arg.size() > Flag.Long.size() &&
        Arg.starts_with(Flag.Long) && Arg[Flag.Long.size()] == '=')
      return &Flag;
  }
  return nullptr;
}

/// Whether \p Flag comes before cargo's flags in lists and help.
constexpr bool listedBeforeCargoFlags(const OxideFlagSpec &Flag) {
  return Flag.Group == AcceptRelease || Flag.Group == AcceptArch ||
         Flag.Group == AcceptVerbose;
}

/// The values \p Flag takes (for --tool: SanitizerTools).
std::vector<std::string_view> choicesOf(const OxideFlagSpec &Flag) {
  if (Flag.Use == OxideFlagUse::Tool)
    return {std::begin(SanitizerTools), std::end(SanitizerTools)};
  return {Flag.Choices.begin(), Flag.Choices.end()};
}

struct CommandSpec {
  Command Cmd;
  std::string_view Name;
  /// The positional argument, as shown in usage ("NAME", "[NAME]"); empty if
  /// the command takes none.
  std::string_view Positional;
  bool PositionalRequired;
  unsigned Accepts;
  /// One line for the overview.
  std::string_view Summary;
  /// The rest of `cargo oxide help <cmd>`.
  std::string_view Details;
};

constexpr unsigned BuildFlags = AcceptRelease | AcceptArch | AcceptVerbose |
                                AcceptCargoSelect | AcceptCargoBuild;

constexpr std::array<CommandSpec, 14> Commands = {{
    {Command::New, "new", "NAME", true, AcceptAsync,
     "create a project with a vecadd kernel, ready for `cargo oxide run`",
     "Creates the directory NAME with a Cargo.toml that depends on the oxide\n"
     "crates and a src/main.rs holding a kernel and the host code that\n"
     "launches it, and .cargo/config.toml naming oxide's device linker, so\n"
     "plain `cargo build` / `cargo run` work too. Then: cd NAME && cargo oxide "
     "run\n"
     "With --async the project uses cuda-async: the GPU work is a lazy\n"
     "DeviceOperation, awaited (cuda-async's own executor, no outside "
     "crates).\n"},
    {Command::Build, "build", "[NAME]", false, BuildFlags | AcceptCargoTargets,
     "build an example (or the package here) together with its kernels",
     "Runs `cargo build` with oxide's device linker, so the kernels are\n"
     "compiled to PTX and embedded in the executable. NAME is an example in\n"
     "<workspace>/examples/NAME or a package name; without NAME, the package\n"
     "in the current directory, or at a workspace root every member.\n"},
    {Command::Run, "run", "[NAME]", false,
     BuildFlags | AcceptCargoTargets | AcceptProgramArgs | AcceptEmulate |
         AcceptGpus,
     "build an example and run it; arguments after `--` go to the program",
     "Builds like `cargo oxide build`, then runs the package's default binary\n"
     "and exits with its exit code. Arguments after `--` are passed to it.\n"
     "With --emulate, or when no GPU is found (and OXIDE_EMULATE is not set),\n"
     "its kernels run on the CPU emulator (OXIDE_EMULATE=1): the device\n"
     "linker's PTX, on a PTX virtual machine (also --emulate=ptx);\n"
     "--emulate=host runs the kernels' Rust code instead (debuggable with\n"
     "gdb). OXIDE_EMULATE=0 never emulates.\n"
     "With --gpus N it starts N copies of the program at once, rank r on\n"
     "GPU r, each told its place in the job through OXIDE_RANK,\n"
     "OXIDE_LOCAL_RANK, OXIDE_WORLD_SIZE and OXIDE_NCCL_ADDR (a free local\n"
     "port for the rendezvous; cuda-nccl's World::from_env reads them).\n"
     "Every line of output is prefixed by its rank; when one rank fails the\n"
     "others are stopped and its exit code is the job's.\n"},
    {Command::Launch, "launch", "PROGRAM", true,
     AcceptGpus | AcceptProgramArgs | AcceptVerbose,
     "start N ranks of a built program, one per GPU (no build, no cargo)",
     "Starts N copies of PROGRAM (a path; --gpus N is required), exactly as\n"
     "`cargo oxide run NAME --gpus N` does after its build: rank r on GPU r,\n"
     "told its place through OXIDE_RANK, OXIDE_LOCAL_RANK, OXIDE_WORLD_SIZE\n"
     "and OXIDE_NCCL_ADDR, every line prefixed by its rank, the others\n"
     "stopped when one fails, whose exit code is the job's. Arguments after\n"
     "`--` go to every rank. For a program built elsewhere (a machine with\n"
     "GPUs and no Rust), or by a build of one's own.\n"},
    {Command::Test, "test", "[NAME] [FILTER...]", false,
     BuildFlags | AcceptCargoTargets | AcceptTestFilters | AcceptProgramArgs |
         AcceptEmulate,
     "run `cargo test` through the device linker; `--` ARGS go to the tests",
     "Runs `cargo test` for the package (or, at a workspace root without NAME,\n"
     "every member) with the same environment as `cargo oxide build`, so test\n"
     "binaries carry their kernels. FILTERs select tests by name, as with\n"
     "`cargo test FILTER`; a NAME that is no package is a filter too (with\n"
     "-p, every name is). Arguments after `--` go to the test\n"
     "harness, e.g. `cargo oxide test -- --nocapture`. Like `run`, the tests'\n"
     "kernels run on the CPU emulator with --emulate[=host|ptx], or when no\n"
     "GPU is found (and OXIDE_EMULATE is not set). Tests run one at a time\n"
     "(--test-threads=1): a kernel fault poisons the device's context for\n"
     "every test running beside it. `-- --test-threads=N` (or\n"
     "RUST_TEST_THREADS) runs them in parallel.\n"},
    {Command::Inspect, "inspect", "[NAME]", false, BuildFlags | AcceptSass,
     "build a package and print the PTX (and with --sass the SASS)",
     "Rebuilds the package with the device linker writing its output to\n"
     "<target>/oxide/<package>/, then prints every PTX module to stdout.\n"
     "With --sass also assembles each module with ptxas to <module>.cubin and\n"
     "prints its SASS (nvdisasm, else cuobjdump -sass; from $OXIDE_CUDA_PATH/bin\n"
     "or PATH).\n"},
    {Command::Pipeline, "pipeline", "[NAME]", false, BuildFlags,
     "keep every stage: MIR, LLVM IR, device IR, PTX, cubin, SASS",
     "Rebuilds the package and keeps each compilation stage in\n"
     "<target>/oxide/<package>/pipeline/: rustc's MIR and LLVM IR, the device\n"
     "linker's input, legalised and optimised IR, the PTX, and where the CUDA\n"
     "toolkit has them, the cubin (ptxas) and SASS (nvdisasm or cuobjdump).\n"
     "OXIDE_LLVM_ARGS passes LLVM options to the device pipeline; what they\n"
     "print is kept too:\n"
     "  OXIDE_LLVM_ARGS='-print-after=lower-panics -time-passes' cargo oxide pipeline vecadd\n"
     "writes the IR after that pass to passes/ and the timings to\n"
     "time-passes.txt (pass names: compiler/include/oxide/Passes.def).\n"},
    {Command::Doctor, "doctor", "", false, AcceptRuntime,
     "check rustc and its LLVM, oxide, the CUDA toolkit, the driver and the "
     "GPU",
     "Checks everything oxide needs, one line each, with a fix for every\n"
     "failure, and launches a small kernel when a GPU is there. Exits 0 only\n"
     "when all checks pass. A machine without a GPU can still build kernels;\n"
     "only the driver, GPU and launch checks fail there. --runtime checks only\n"
     "what running oxide-built programs needs (a GPU machine without Rust).\n"
     "The debugging tools (cuda-gdb, compute-sanitizer, nvdisasm) are listed\n"
     "for information; they do not fail the check.\n"},
    {Command::Debug, "debug", "[NAME]", false,
     BuildFlags | AcceptCargoTargets | AcceptProgramArgs | AcceptFull,
     "build with device debug info and run the program under cuda-gdb",
     "Builds with device line tables (OXIDE_DEVICE_DEBUG=lines), or with\n"
     "--full with all device debug info (OXIDE_DEVICE_DEBUG=full), then runs\n"
     "`cuda-gdb --args <binary> ARGS`. Without cuda-gdb (from\n"
     "$OXIDE_CUDA_PATH/bin or PATH) it prints the command to run on a GPU\n"
     "machine and exits with 2. --release keeps the release profile and adds\n"
     "debug info to it.\n"},
    {Command::Sanitize, "sanitize", "[NAME]", false,
     BuildFlags | AcceptCargoTargets | AcceptProgramArgs | AcceptTool,
     "build and run the program under compute-sanitizer",
     "Builds with device line tables (so reports name file:line), then runs\n"
     "`compute-sanitizer --tool TOOL <binary> ARGS` and exits with its status.\n"
     "Without compute-sanitizer it prints the command to run on a GPU machine\n"
     "and exits with 2.\n"},
    {Command::Bench, "bench", "[NAME]", false,
     AcceptArch | AcceptVerbose | AcceptCargoBuild | AcceptProgramArgs |
         AcceptList,
     "run the benchmarks: oxide's kernels vs nvcc, cuBLAS, copy bandwidth",
     "Builds <workspace>/benches (the package oxide-bench) with --release\n"
     "through the device linker for the arch its Cargo.toml names\n"
     "([package.metadata.oxide] arch: sm_90a, for wgmma) unless --arch says\n"
     "otherwise. Its build script compiles the CUDA C++ references with\n"
     "nvcc -O3 for the same arch.\n"
     "Then runs the benchmark NAME, or all of them: oxide's kernel and its\n"
     "reference in one process on one GPU (CUDA events, warm-up, median of\n"
     "repeats), one line each with both times, the ratio and the target.\n"
     "--list lists the benchmarks. Without a GPU everything is built, the\n"
     "rebuild benchmark runs, and it exits with 2 saying there is no GPU.\n"
     "Arguments after `--` go to the benchmark program.\n"},
    {Command::Check, "check", "[NAME]", false,
     BuildFlags | AcceptMessageFormat,
     "run oxide's device checks without building the GPU binary",
     "Runs `cargo build` with the device linker in check mode: it gathers\n"
     "the kernels' bitcode and runs every legality check and diagnostic of a\n"
     "real build, then stops before optimisation, PTX, ptxas and embedding,\n"
     "so it is quick enough to run on save. The host executable it leaves\n"
     "is not runnable (`cargo oxide build` replaces it).\n"
     "--message-format=json prints cargo's JSON messages on stdout, oxide's\n"
     "device diagnostics among them as rustc-style\n"
     "{\"reason\":\"compiler-message\",...} lines (with file/line spans where\n"
     "the diagnostic has a source location), for editors.\n"},
    {Command::Metadata, "metadata", "[NAME]", false,
     AcceptArch | AcceptCargoSelect | AcceptPrint,
     "print the GPU target and emulation setting a package resolves to",
     "Prints what every command would use for the package: `arch` (the GPU\n"
     "target, with where it came from: --arch, [package.metadata.oxide] arch,\n"
     "OXIDE_ARCH, the GPU present or the default) and `emulate` (its\n"
     "[package.metadata.oxide] emulate setting, empty when unset), one\n"
     "`key = value` line each, with the package's name, Cargo.toml and\n"
     "target directory. --print arch (or emulate, or package) prints that\n"
     "value alone, for scripts.\n"},
    {Command::Clean, "clean", "[NAME]", false, AcceptRelease | AcceptVerbose,
     "remove build output (cargo clean, plus <target>/oxide)",
     "Without NAME runs `cargo clean` for the workspace and removes\n"
     "<target>/oxide. With NAME removes only that package's output.\n"},
}};

const CommandSpec *findSpec(Command Cmd) {
  for (const CommandSpec &Spec : Commands)
    if (Spec.Cmd == Cmd)
      return &Spec;
  return nullptr;
}

const CommandSpec *findSpec(std::string_view Name) {
  for (const CommandSpec &Spec : Commands)
    if (Spec.Name == Name)
      return &Spec;
  return nullptr;
}

std::string quoted(std::string_view Text) {
  return "`" + std::string(Text) + "`";
}

std::string helpHintFor(const CommandSpec &Spec) {
  return "run `cargo oxide help " + std::string(Spec.Name) +
         "` to see what it accepts";
}

/// A value for \p Option in "needs a value" errors.
std::string exampleValue(std::string_view Option) {
  for (const OxideFlagSpec &Flag : OxideFlags)
    if (Option == Flag.Long && !Flag.Example.empty())
      return std::string(Flag.Example);
  for (const CargoFlagSpec &Flag : CargoFlags)
    if (Option == Flag.Long || Option == Flag.Short)
      return std::string(Flag.Value);
  return "VALUE";
}

/// The CargoFlags entry \p Arg spells (`--jobs`, `--jobs=4`, `-j`, `-j4`).
const CargoFlagSpec *matchCargoFlag(std::string_view Arg) {
  for (const CargoFlagSpec &Flag : CargoFlags) {
    if (Arg == Flag.Long || Arg == Flag.Short)
      return &Flag;
    if (Flag.Value.empty())
      continue;
    if (Arg.size() > Flag.Long.size() && Arg.starts_with(Flag.Long) &&
        Arg[Flag.Long.size()] == '=')
      return &Flag;
    if (!Flag.Short.empty() && Arg.size() > 2 && Arg.starts_with(Flag.Short))
      return &Flag;
  }
  return nullptr;
}

/// How \p Flag is spelled in a list of accepted flags: `-r/--release`,
/// `--arch TARGET`, `--emulate[=MODE]`.
std::string flagSpelling(std::string_view Short, std::string_view Long,
                         std::string_view Value) {
  std::string Text = Short.empty() ? "" : std::string(Short) + "/";
  Text += std::string(Long);
  if (!Value.empty())
    Text += (Value.starts_with("[") ? "" : " ") + std::string(Value);
  return Text;
}

std::string acceptedFlagsOf(const CommandSpec &Spec) {
  std::vector<std::string> Flags;
  auto AddOxide = [&](bool BeforeCargo) {
    for (const OxideFlagSpec &Flag : OxideFlags)
      if ((Spec.Accepts & Flag.Group) && listedBeforeCargoFlags(Flag) == BeforeCargo)
        Flags.push_back(flagSpelling(Flag.Short, Flag.Long, Flag.Value));
  };
  AddOxide(true);
  for (const CargoFlagSpec &Flag : CargoFlags)
    if (Spec.Accepts & Flag.Group)
      Flags.push_back(flagSpelling(Flag.Short, Flag.Long, Flag.Value));
  AddOxide(false);
  Flags.emplace_back("-h/--help");
  std::string Text;
  for (const std::string &Flag : Flags)
    Text += (Text.empty() ? "" : ", ") + Flag;
  return Text;
}

Error unexpectedArgument(const CommandSpec &Spec, std::string_view Arg) {
  return {"unexpected argument " + quoted(Arg) + " for `cargo oxide " +
              std::string(Spec.Name) + "`",
          "it accepts " + acceptedFlagsOf(Spec) +
              (Spec.Accepts & AcceptProgramArgs
                   ? "; arguments after `--` go to the program"
                   : "") +
              "; `cargo oxide help " + std::string(Spec.Name) +
              "` explains them"};
}

size_t editDistance(std::string_view A, std::string_view B) {
  std::vector<size_t> Row(B.size() + 1);
  for (size_t J = 0; J <= B.size(); ++J)
    Row[J] = J;
  for (size_t I = 1; I <= A.size(); ++I) {
    size_t Diagonal = Row[0];
    Row[0] = I;
    for (size_t J = 1; J <= B.size(); ++J) {
      size_t Above = Row[J];
      size_t Cost = A[I - 1] == B[J - 1] ? 0 : 1;
      Row[J] = std::min({Row[J] + 1, Row[J - 1] + 1, Diagonal + Cost});
      Diagonal = Above;
    }
  }
  return Row[B.size()];
}

/// The --arch line of every help text: where the arch comes from without it
/// (resolveArch in Cargo.cpp; docs/DESIGN.md).
std::string archHelp() {
  std::string Text = "      --arch TARGET    GPU target to compile for, one of";
  size_t Column = Text.size();
  for (const oxide::GpuTarget &T : oxide::gpuTargets()) {
    if (Column + T.Name.size() + 1 > 78) {
      Text += "\n                      ";
      Column = 22;
    }
    Text += " " + std::string(T.Name);
    Column += T.Name.size() + 1;
  }
  return Text +
         "\n"
         "                       Without it: the package's [package.metadata.oxide]\n"
         "                       arch, else $OXIDE_ARCH, else the GPU present, else " +
         std::string(oxide::DefaultTargetName) + "\n";
}

/// The lines of `help` for cargo's flags in the groups of \p Accepts.
std::string cargoFlagsHelp(unsigned Accepts) {
  std::string Text;
  for (const CargoFlagSpec &Flag : CargoFlags) {
    if (!(Accepts & Flag.Group))
      continue;
    std::string Left = Flag.Short.empty() ? "    " : std::string(Flag.Short) + ", ";
    Left += std::string(Flag.Long);
    if (!Flag.Value.empty())
      Left += " " + std::string(Flag.Value);
    // The help in the column of the others, on a line of its own when the
    // flag does not leave room.
    if (Left.size() >= 21)
      Left += "\n" + std::string(23, ' ');
    else
      Left.resize(21, ' ');
    Text += "  " + Left + std::string(Flag.Help) + "\n";
  }
  return Text;
}

/// One help line (or more) for \p Flag, its text after \p Prefix
/// ("inspect: " in the overview).
std::string oxideFlagHelp(const OxideFlagSpec &Flag, std::string_view Prefix) {
  if (Flag.Use == OxideFlagUse::Arch)
    return archHelp();
  std::string Left = Flag.Short.empty() ? "    " : std::string(Flag.Short) + ", ";
  Left += std::string(Flag.Long);
  if (!Flag.Value.empty())
    Left += (Flag.Value.starts_with("[") ? "" : " ") + std::string(Flag.Value);
  if (Left.size() >= 21)
    Left += "\n" + std::string(23, ' ');
  else
    Left.resize(21, ' ');
  std::string Help = std::string(Prefix) + std::string(Flag.Help);
  std::string Indented;
  for (char C : Help)
    Indented += C == '\n' ? "\n" + std::string(23, ' ') : std::string(1, C);
  return "  " + Left + Indented + "\n";
}

/// The commands that accept \p Flag, as "inspect: " or "run, test: ".
std::string commandsAccepting(const OxideFlagSpec &Flag) {
  std::string Names;
  for (const CommandSpec &Spec : Commands)
    if (Spec.Accepts & Flag.Group)
      Names += (Names.empty() ? "" : ", ") + std::string(Spec.Name);
  return Names + ": ";
}

} // namespace

std::string acceptedFlags(Command Cmd) {
  const CommandSpec *Spec = findSpec(Cmd);
  return Spec ? acceptedFlagsOf(*Spec) : std::string();
}

std::string_view commandName(Command Cmd) {
  const CommandSpec *Spec = findSpec(Cmd);
  return Spec ? Spec->Name : std::string_view();
}

std::optional<Command> commandFromName(std::string_view Name) {
  if (const CommandSpec *Spec = findSpec(Name))
    return Spec->Cmd;
  return std::nullopt;
}

bool isValidArch(std::string_view Arch) {
  return oxide::findGpuTarget(Arch) != nullptr;
}

Error unknownArchError(std::string_view Arch, std::string_view Origin) {
  return {oxide::unknownTargetMessage(Arch) +
              (Origin.empty() ? "" : " (" + std::string(Origin) + ")"),
          "name one of them; `a` targets (sm_90a) add the instructions of "
          "one GPU, `f` targets (sm_100f) those of its family "
          "(compiler/include/oxide/Targets.def)"};
}

std::string suggestCommand(std::string_view Typo) {
  std::string Best;
  size_t BestDistance = 3; // suggest only close matches
  for (const CommandSpec &Spec : Commands) {
    size_t D = editDistance(Typo, Spec.Name);
    if (D < BestDistance) {
      BestDistance = D;
      Best = std::string(Spec.Name);
    }
  }
  return Best;
}

std::string versionString() {
  return std::string("cargo-oxide ") + OXIDE_VERSION + " (LLVM " +
         std::to_string(OXIDE_LLVM_MAJOR) + ")";
}

std::string overviewHelp() {
  std::string Text =
      "cargo oxide: build, run and inspect CUDA kernels written in Rust\n"
      "\n"
      "Usage: cargo [+TOOLCHAIN] oxide <COMMAND> [NAME] [OPTIONS] [-- ARGS]\n"
      "\n"
      "Commands:\n";
  for (const CommandSpec &Spec : Commands) {
    std::string Left = std::string(Spec.Name);
    if (!Spec.Positional.empty())
      Left += " " + std::string(Spec.Positional);
    Left.resize(std::max<size_t>(Left.size() + 2, 18), ' ');
    Text += "  " + Left + std::string(Spec.Summary) + "\n";
  }
  Text += "  help [COMMAND]    show help for a command\n"
          "\n";
  Text += "Options:\n";
  for (const OxideFlagSpec &Flag : OxideFlags)
    if (listedBeforeCargoFlags(Flag))
      Text += oxideFlagHelp(Flag, "");
  Text += "cargo's options (passed on to cargo where the command builds):\n" +
          cargoFlagsHelp(AcceptCargoSelect | AcceptCargoBuild | AcceptCargoTargets) +
          "  -h, --help           show help\n"
          "Command options:\n";
  for (const OxideFlagSpec &Flag : OxideFlags)
    if (!listedBeforeCargoFlags(Flag))
      Text += oxideFlagHelp(Flag, commandsAccepting(Flag));
  Text +=
      "  -V, --version        show the version\n"
      "\n"
      "NAME is an example in <workspace>/examples/NAME, or a package name;\n"
      "without NAME the package in the current directory is used.\n"
      "\n"
      "Environment:\n"
      "  OXIDE_ARCH       GPU target when neither --arch nor the package names\n"
      "                   one (then the GPU present, else " + std::string(oxide::DefaultTargetName) + ")\n"
      "  OXIDE_CUDA_PATH  CUDA toolkit root (default /usr/local/cuda)\n"
      "  OXIDE_LINK       device linker to use (default: oxide-link next "
      "to cargo-oxide)\n"
      "  OXIDE_DEVICE_DEBUG  lines | full: keep device debug info (set by "
      "debug, sanitize)\n"
      "\n"
      "Examples:\n"
      "  cargo oxide new my_kernel && cd my_kernel && cargo oxide run\n"
      "  cargo oxide run vecadd\n"
      "  cargo +nightly oxide pipeline vecadd --arch sm_90\n"
      "  cargo oxide test vecadd -- --nocapture\n"
      "  cargo oxide sanitize vecadd --tool racecheck\n"
      "  cargo oxide bench sgemm\n"
      "  cargo oxide doctor\n";
  return Text;
}

std::string commandHelp(Command Cmd) {
  const CommandSpec *Spec = findSpec(Cmd);
  if (!Spec)
    return overviewHelp();
  std::string Text = "cargo oxide " + std::string(Spec->Name) + ": " +
                     std::string(Spec->Summary) + "\n\nUsage: cargo oxide " +
                     std::string(Spec->Name);
  if (!Spec->Positional.empty())
    Text += " " + std::string(Spec->Positional);
  if (Spec->Accepts & ~AcceptProgramArgs)
    Text += " [OPTIONS]";
  if (Spec->Accepts & AcceptProgramArgs)
    Text += " [-- ARGS...]";
  Text += "\n\n" + std::string(Spec->Details) + "\nOptions:\n";
  for (const OxideFlagSpec &Flag : OxideFlags)
    if ((Spec->Accepts & Flag.Group) && listedBeforeCargoFlags(Flag))
      Text += oxideFlagHelp(Flag, "");
  Text += cargoFlagsHelp(Spec->Accepts);
  for (const OxideFlagSpec &Flag : OxideFlags)
    if ((Spec->Accepts & Flag.Group) && !listedBeforeCargoFlags(Flag))
      Text += oxideFlagHelp(Flag, "");
  Text += "  -h, --help           show this help\n";
  return Text;
}

Expected<Options> parseArguments(const std::vector<std::string> &Args) {
  Options Opts;
  size_t I = 0;
  if (I < Args.size() && Args[I] == "oxide")
    ++I;

  // Options before the subcommand: only --help and --version make sense.
  if (I < Args.size()) {
    const std::string &First = Args[I];
    if (First == "-h" || First == "--help") {
      Opts.Cmd = Command::Help;
      if (I + 1 < Args.size())
        Opts.HelpTopic = commandFromName(Args[I + 1]);
      return Opts;
    }
    if (First == "-V" || First == "--version") {
      Opts.Cmd = Command::Version;
      return Opts;
    }
    if (!First.empty() && First[0] == '-')
      return Error{"unexpected option " + quoted(First) +
                       " before the subcommand",
                   "options go after the subcommand, e.g. `cargo oxide build "
                   "vecadd " +
                       First + "`; run `cargo oxide --help` to list them"};
  }
  if (I >= Args.size())
    return Opts; // Command::None: the caller prints the overview.

  const std::string &Sub = Args[I++];
  if (Sub == "help") {
    Opts.Cmd = Command::Help;
    if (I < Args.size()) {
      Opts.HelpTopic = commandFromName(Args[I]);
      if (!Opts.HelpTopic) {
        std::string Suggestion = suggestCommand(Args[I]);
        return Error{"no such subcommand: " + quoted(Args[I]),
                     Suggestion.empty()
                         ? "run `cargo oxide --help` to list the subcommands"
                         : "did you mean `" + Suggestion + "`?"};
      }
      if (I + 1 < Args.size())
        return Error{"unexpected argument " + quoted(Args[I + 1]) +
                         " for `cargo oxide help`",
                     "ask about one subcommand: `cargo oxide help build`"};
    }
    return Opts;
  }

  if (Sub == TestRunnerCommand) {
    Opts.Cmd = Command::TestRunner;
    Opts.ProgramArgs.assign(Args.begin() + static_cast<ptrdiff_t>(I), Args.end());
    return Opts;
  }
  const CommandSpec *Spec = findSpec(Sub);
  if (!Spec) {
    std::string Suggestion = suggestCommand(Sub);
    return Error{"no such subcommand: " + quoted(Sub),
                 Suggestion.empty()
                     ? "run `cargo oxide --help` to list the subcommands"
                     : "did you mean `cargo oxide " + Suggestion + "`?"};
  }
  Opts.Cmd = Spec->Cmd;

  auto Accepts = [&](unsigned Flag) { return (Spec->Accepts & Flag) != 0; };

  // Splits "--opt=value"; returns the value of an option that takes one, from
  // the same argument or the next one.
  auto TakeValue = [&](std::string_view Arg, std::string_view Option,
                       std::string &Value) -> std::optional<Error> {
    if (Arg.size() > Option.size() && Arg[Option.size()] == '=') {
      Value = std::string(Arg.substr(Option.size() + 1));
    } else if (I < Args.size()) {
      Value = Args[I++];
    } else {
      return Error{quoted(Option) + " needs a value",
                   "for example `cargo oxide " + std::string(Spec->Name) + " " +
                       std::string(Option) +
                       " " + exampleValue(Option) + "`"};
    }
    if (Value.empty())
      return Error{quoted(Option) + " needs a non-empty value",
                   helpHintFor(*Spec)};
    return std::nullopt;
  };

  while (I < Args.size()) {
    const std::string Arg = Args[I++];

    if (Arg == "--") {
      if (!Accepts(AcceptProgramArgs))
        return Error{"`cargo oxide " + std::string(Spec->Name) +
                         "` does not pass arguments to a program",
                     "to run the program with arguments use `cargo oxide run "
                     "[NAME] -- ARGS` (or test, debug, sanitize)"};
      Opts.ProgramArgs.assign(Args.begin() + static_cast<ptrdiff_t>(I),
                              Args.end());
      break;
    }
    if (Arg == "-h" || Arg == "--help") {
      Opts.Cmd = Command::Help;
      Opts.HelpTopic = Spec->Cmd;
      return Opts;
    }
    if (const OxideFlagSpec *Flag = matchOxideFlag(Arg);
        Flag && Accepts(Flag->Group)) {
      std::string Value;
      bool HasValue = false;
      if (Flag->Value.starts_with("[")) { // only attached, may be left out
        HasValue = Arg.size() > Flag->Long.size();
        if (HasValue)
          Value = Arg.substr(Flag->Long.size() + 1);
      } else if (!Flag->Value.empty()) {
        if (auto E = TakeValue(Arg, Flag->Long, Value))
          return *E;
        HasValue = true;
      }
      std::vector<std::string_view> Choices = choicesOf(*Flag);
      if (HasValue && !Choices.empty() &&
          std::find(Choices.begin(), Choices.end(), Value) == Choices.end())
        return Error{"unknown " + std::string(Flag->ValueNoun) + " " +
                         quoted(Value),
                     std::string(Flag->ChoicesHint)};
      switch (Flag->Use) {
      case OxideFlagUse::Release:
        Opts.Release = true;
        break;
      case OxideFlagUse::Arch:
        if (!isValidArch(Value))
          return unknownArchError(Value, "--arch");
        Opts.Arch = Value;
        break;
      case OxideFlagUse::Verbose:
        Opts.Verbose = true;
        break;
      case OxideFlagUse::Emulate:
        Opts.Emulate = !HasValue        ? EmulateMode::Default
                       : Value == "host" ? EmulateMode::HostCode
                                         : EmulateMode::DeviceCode;
        break;
      case OxideFlagUse::Sass:
        Opts.Sass = true;
        break;
      case OxideFlagUse::Full:
        Opts.DebugLevel = DeviceDebugLevel::Full;
        break;
      case OxideFlagUse::Tool:
        Opts.SanitizerTool = Value;
        break;
      case OxideFlagUse::Async:
        Opts.Async = true;
        break;
      case OxideFlagUse::Runtime:
        Opts.RuntimeOnly = true;
        break;
      case OxideFlagUse::List:
        Opts.List = true;
        break;
      case OxideFlagUse::MessageFormat:
        Opts.JsonMessages = Value == "json";
        break;
      case OxideFlagUse::Print:
        Opts.Print = Value;
        break;
      case OxideFlagUse::Gpus: {
        unsigned N = 0;
        bool Ok = !Value.empty() && Value.size() <= 4 &&
                  std::all_of(Value.begin(), Value.end(),
                              [](char C) { return C >= '0' && C <= '9'; });
        if (Ok)
          N = static_cast<unsigned>(std::stoul(Value));
        if (!Ok || N == 0)
          return Error{"--gpus takes a number of processes, 1 or more, not " +
                           quoted(Value),
                       "e.g. `cargo oxide run NAME --gpus 2`"};
        Opts.Gpus = N;
        break;
      }
      }
      continue;
    }
    if (const CargoFlagSpec *Flag = matchCargoFlag(Arg)) {
      if (!Accepts(Flag->Group))
        return unexpectedArgument(*Spec, Arg);
      std::string Value;
      if (!Flag->Value.empty()) {
        // `-p NAME`, `-pNAME`, `--package NAME`, `--package=NAME`.
        bool Attached = !Flag->Short.empty() && Arg.size() > 2 &&
                        Arg.substr(0, 2) == Flag->Short;
        if (Attached)
          Value = Arg.substr(2);
        else if (auto E = TakeValue(Arg, Arg.starts_with("--") ? Flag->Long
                                                               : Flag->Short,
                                    Value))
          return *E;
        if (Value.empty())
          return Error{quoted(Flag->Long) + " needs a non-empty value",
                       helpHintFor(*Spec)};
      }
      auto Once = [&](std::optional<std::string> &Slot) -> std::optional<Error> {
        if (Slot && *Slot != Value)
          return Error{quoted(Flag->Long) + " given twice (" +
                           quoted(*Slot) + " and " + quoted(Value) + ")",
                       "cargo oxide acts on one at a time"};
        Slot = Value;
        return std::nullopt;
      };
      std::optional<Error> Problem;
      switch (Flag->Use) {
      case CargoFlagUse::Forward:
        Opts.CargoArgs.emplace_back(Flag->Long);
        if (!Flag->Value.empty())
          Opts.CargoArgs.push_back(Value);
        break;
      case CargoFlagUse::Package:
        Problem = Once(Opts.Package);
        break;
      case CargoFlagUse::ManifestPath:
        Problem = Once(Opts.ManifestPath);
        break;
      case CargoFlagUse::TargetDir:
        Problem = Once(Opts.TargetDir);
        break;
      case CargoFlagUse::Profile:
        if (Value == "release")
          Opts.Release = true;
        else if (Value != "dev")
          Problem = Once(Opts.Profile);
        break;
      case CargoFlagUse::Bin:
        Problem = Once(Opts.Bin);
        Opts.CargoArgs.insert(Opts.CargoArgs.end(), {"--bin", Value});
        break;
      case CargoFlagUse::Example:
        Problem = Once(Opts.Example);
        Opts.CargoArgs.insert(Opts.CargoArgs.end(), {"--example", Value});
        break;
      }
      if (Problem)
        return *Problem;
      continue;
    }
    if (!Arg.empty() && Arg[0] == '-' && Arg != "-")
      return unexpectedArgument(*Spec, Arg);

    // A positional argument.
    if (!Spec->Positional.empty() && !Opts.Name) {
      Opts.Name = Arg;
      continue;
    }
    if (Accepts(AcceptTestFilters)) {
      Opts.TestFilters.push_back(Arg);
      continue;
    }
    if (Accepts(AcceptProgramArgs))
      return Error{"unexpected argument " + quoted(Arg) + " for `cargo oxide " +
                       std::string(Spec->Name) + "`",
                   "arguments for the program go after `--`: cargo oxide " +
                       std::string(Spec->Name) + " " +
                       (Opts.Name ? *Opts.Name + " " : std::string()) + "-- " +
                       Arg};
    if (Spec->Positional.empty())
      return Error{"`cargo oxide " + std::string(Spec->Name) +
                       "` takes no arguments, got " + quoted(Arg),
                   helpHintFor(*Spec)};
    return Error{"unexpected argument " + quoted(Arg) + " for `cargo oxide " +
                     std::string(Spec->Name) + "`",
                 "it takes one name; " + helpHintFor(*Spec)};
  }

  if (Opts.Package) {
    // `-p NAME` names the package; `test`'s positional names are filters.
    if (Opts.Name && Accepts(AcceptTestFilters))
      Opts.TestFilters.insert(Opts.TestFilters.begin(), *Opts.Name);
    else if (Opts.Name && *Opts.Name != *Opts.Package)
      return Error{"both NAME " + quoted(*Opts.Name) + " and `--package " +
                       *Opts.Package + "` given",
                   "name the package once"};
    Opts.Name = Opts.Package;
  }
  if (Opts.Bin && Opts.Example)
    return Error{"both `--bin` and `--example` given",
                 "cargo oxide " + std::string(Spec->Name) +
                     " acts on one executable"};
  if (Spec->PositionalRequired && !Opts.Name)
    return Error{"`cargo oxide " + std::string(Spec->Name) + "` needs " +
                     std::string(Spec->Positional),
                 Spec->Cmd == Command::New
                     ? "for example: cargo oxide new my_kernel"
                     : helpHintFor(*Spec)};
  return Opts;
}

std::string_view emulateValue(EmulateMode Mode) {
  switch (Mode) {
  case EmulateMode::Off:
    return "";
  case EmulateMode::Default:
    return "1";
  case EmulateMode::HostCode:
    return "host";
  case EmulateMode::DeviceCode:
    return "ptx";
  }
  return "";
}

} // namespace oxide::cli

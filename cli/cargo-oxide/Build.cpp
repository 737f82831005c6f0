//===- Build.cpp - build, run and clean -----------------------------------===//
//
// Part of oxide. `build` and `run` are cargo's commands with the oxide
// environment (Cargo.h); `clean` is cargo's plus oxide's own output folder.
// The plan built here is shared with inspect and pipeline.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "CudaDriver.h"
#include "Diagnostic.h"
#include "Launch.h"
#include "Metadata.h"
#include "Toolchain.h"

#include <csignal>
#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <iostream>

namespace oxide::cli {

//===----------------------------------------------------------------------===//
// The build plan
//===----------------------------------------------------------------------===//

std::vector<std::string> BuildPlan::cargoSelection() const {
  std::vector<std::string> Args = {
      "--manifest-path", (Pkg ? Pkg->ManifestPath : WS.ManifestPath).string()};
  if (!Pkg)
    Args.push_back("--workspace");
  if (Profile) {
    Args.push_back("--profile");
    Args.push_back(*Profile);
  } else if (Release) {
    Args.push_back("--release");
  }
  Args.insert(Args.end(), CargoArgs.begin(), CargoArgs.end());
  // -v is cargo's too: its rustc command lines beside oxide's.
  if (Config.Verbose)
    Args.push_back("--verbose");
  return Args;
}

std::string BuildPlan::profileDir() const {
  if (!Profile)
    return profileDirName(Release);
  // cargo's built-in profiles keep the folders of the ones they inherit.
  if (*Profile == "test")
    return profileDirName(false);
  if (*Profile == "bench")
    return profileDirName(true);
  return *Profile;
}

Environment BuildPlan::environment(const Environment &Base) const {
  Environment Env = Base;
  applyOxideEnvironment(Env, Config);
  if (TargetDirFromFlag)
    Env.set("CARGO_TARGET_DIR", TargetDir.string());
  return Env;
}

namespace {

/// Copies what `cargo metadata` says of \p Pkg over what was read from its
/// Cargo.toml: cargo's word is final (workspace inheritance, targets it
/// finds by itself, the metadata table as TOML means it).
void applyMetadata(Package &Pkg, const ProjectMetadata &Project) {
  const PackageMetadata *Meta = Project.package(Pkg.ManifestPath);
  if (!Meta)
    return;
  Pkg.Info.PackageName = Meta->Name;
  Pkg.Info.OxideArch = Meta->OxideArch;
  Pkg.Info.OxideEmulate = Meta->OxideEmulate;
  Pkg.Info.DefaultRun = Meta->DefaultRun;
  Pkg.Info.BinNames = Meta->Binaries;
  Pkg.Info.AutoBins = false; // cargo's list is complete
}

} // namespace

Expected<std::optional<fs::path>> manifestPathOption(const Options &Opts,
                                                     const Context &Ctx) {
  if (!Opts.ManifestPath)
    return std::optional<fs::path>();
  fs::path Path = fs::absolute(Ctx.Cwd / *Opts.ManifestPath).lexically_normal();
  std::error_code EC;
  if (Path.filename() != "Cargo.toml" || !fs::is_regular_file(Path, EC))
    return Error{"--manifest-path " + *Opts.ManifestPath +
                     " is not a Cargo.toml",
                 "give the path of a package's or workspace's Cargo.toml"};
  return std::optional<fs::path>(Path);
}

Expected<BuildPlan> planBuild(const Options &Opts, const Context &Ctx,
                              bool AllowWorkspace) {
  // --manifest-path: act as if run in that Cargo.toml's directory.
  Expected<std::optional<fs::path>> Manifest = manifestPathOption(Opts, Ctx);
  if (!Manifest)
    return Manifest.error();
  fs::path Start = *Manifest ? (*Manifest)->parent_path() : Ctx.Cwd;
  Expected<Workspace> WS = findWorkspace(Start);
  if (!WS)
    return WS.error();

  BuildPlan Plan;
  Plan.WS = *WS;
  Plan.Release = Opts.Release;
  Plan.Profile = Opts.Profile;
  Plan.CargoArgs = Opts.CargoArgs;

  Expected<Package> Pkg = resolvePackage(Plan.WS, Start, Opts.Name);
  if (Pkg) {
    // A package that is a workspace of its own (an example excluded from
    // the enclosing workspace, e.g. to keep its dependencies out of that
    // lock file) is built, cleaned and stamped as that workspace.
    if (Pkg->Info.HasWorkspace && Pkg->ManifestPath != Plan.WS.ManifestPath)
      Plan.WS = Workspace{Pkg->Dir, Pkg->ManifestPath, Pkg->Info};
    Plan.Pkg = *Pkg;
  } else if (!(!Opts.Name && AllowWorkspace && Plan.WS.isVirtual())) {
    return Pkg.error();
  }

  // cargo's own view: the target directory with .cargo/config.toml and
  // CARGO_TARGET_DIR applied, and each package's names and metadata.
  Environment Query = Ctx.Env;
  if (Opts.TargetDir)
    Query.set("CARGO_TARGET_DIR", (Ctx.Cwd / *Opts.TargetDir).lexically_normal().string());
  Expected<ProjectMetadata> Project =
      readCargoMetadata(Query, Ctx.Cwd, Plan.Pkg ? Plan.Pkg->ManifestPath
                                                 : Plan.WS.ManifestPath);
  if (!Project)
    return Project.error();
  Plan.TargetDir = Project->TargetDirectory;
  Plan.TargetDirFromFlag = Opts.TargetDir.has_value();
  if (Plan.Pkg) {
    applyMetadata(*Plan.Pkg, *Project);
    Plan.Linked = {*Plan.Pkg};
  } else {
    // At a virtual workspace root: build every member; the ones with a
    // binary are the ones the device linker links.
    for (Package &Member : listMembers(Plan.WS)) {
      applyMetadata(Member, *Project);
      if (!Member.binaries().empty())
        Plan.Linked.push_back(std::move(Member));
    }
  }

  Expected<fs::path> Linker = locateDeviceLinker(Ctx.Env, Ctx.SelfExe);
  if (!Linker)
    return Linker.error();
  Plan.Config.Linker = *Linker;
  // The one place the target is decided, for every command (Cargo.h).
  ArchInputs Arch{Opts.Arch, std::nullopt, {}, Ctx.DetectGpu};
  if (Plan.Pkg) {
    Arch.PackageArch = Plan.Pkg->Info.OxideArch;
    Arch.ManifestPath = Plan.Pkg->ManifestPath;
  }
  Expected<ArchChoice> Chosen = resolveArch(Arch, Ctx.Env);
  if (!Chosen)
    return Chosen.error();
  Plan.Config.Arch = Chosen->Arch;
  if (Opts.Verbose)
    printStatus("Target", Chosen->Arch + " (from " + Chosen->Origin + ")");
  Plan.Config.Verbose = Opts.Verbose;
  Plan.Config.RustFlagsVariable = chooseRustFlagsVariable(
      Ctx.Env, Ctx.Cwd, [&] { return hostTriple(Ctx.Env); });
  Plan.Config.Toolchain = toolchainOf(Ctx.Env);
  // Set by hand for a plain build; `debug` and `sanitize` override it.
  Plan.Config.DeviceDebug = Ctx.Env.getNonEmpty("OXIDE_DEVICE_DEBUG").value_or("");
  // oxide-link validates the PTX with ptxas where it finds one (the same
  // search), and says nothing where it does not: rustc shows a linker's
  // output only when the link fails. A check makes no PTX.
  if (Opts.Cmd != Command::Check && !findCudaTool("ptxas", Ctx.Env))
    printWarning("ptxas not found (in " +
                 (cudaToolkitRoot(Ctx.Env) / "bin").string() +
                 " or PATH): the PTX will not be validated at build time, "
                 "only by the driver when a GPU loads it; install the CUDA "
                 "toolkit or set OXIDE_CUDA_PATH to it");
  return Plan;
}

//===----------------------------------------------------------------------===//
// Link stamps
//===----------------------------------------------------------------------===//

std::optional<Error> ensureRelink(const BuildPlan &Plan,
                                  const CargoRunner &Cargo, bool Force) {
  std::string Stamp = linkStamp(Plan.Config);
  std::vector<std::string> Args = {"clean", "--quiet", "--manifest-path",
                                   Plan.WS.ManifestPath.string()};
  if (Plan.Profile) {
    Args.push_back("--profile");
    Args.push_back(*Plan.Profile);
  } else if (Plan.Release) {
    Args.push_back("--release");
  }
  size_t Stale = 0;
  for (const Package &Pkg : Plan.Linked) {
    fs::path StampPath = linkStampPath(Plan.TargetDir, Pkg.name(), Plan.profileDir(),
                                       Plan.Config.Toolchain);
    if (!Force && linkStampMatches(StampPath, Stamp))
      continue;
    std::error_code EC;
    if (!Force && fs::exists(StampPath, EC))
      printStatus("Relinking", Pkg.name() + " (" + Plan.Config.Arch +
                                   "; the device arch or oxide-link changed "
                                   "since its last build)");
    Args.push_back("--package");
    Args.push_back(Pkg.name());
    ++Stale;
  }
  if (Stale == 0)
    return std::nullopt;
  // Cleaning only these packages costs one crate's compile each; their
  // dependencies, where the time goes, stay built.
  ProcessResult Result = Cargo.run(Args);
  if (!Result.succeeded())
    return cargoFailure("cargo clean", Result);
  return std::nullopt;
}

void recordLinkStamps(const BuildPlan &Plan) {
  std::string Stamp = linkStamp(Plan.Config);
  for (const Package &Pkg : Plan.Linked)
    writeLinkStamp(linkStampPath(Plan.TargetDir, Pkg.name(), Plan.profileDir(),
                                 Plan.Config.Toolchain),
                   Stamp);
}

void dropLinkStamps(const BuildPlan &Plan) {
  for (const Package &Pkg : Plan.Linked) {
    std::error_code EC;
    fs::remove(linkStampPath(Plan.TargetDir, Pkg.name(), Plan.profileDir(),
                             Plan.Config.Toolchain),
               EC);
  }
}

int buildWithOxide(const BuildPlan &Plan, const CargoRunner &Cargo,
                   bool ForceRelink) {
  if (auto E = ensureRelink(Plan, Cargo, ForceRelink)) {
    printError(*E);
    return 1;
  }
  std::vector<std::string> Args = {"build"};
  std::vector<std::string> Selection = Plan.cargoSelection();
  Args.insert(Args.end(), Selection.begin(), Selection.end());
  ProcessResult Result = Cargo.run(Args);
  if (!Result.succeeded()) {
    printError(cargoFailure("cargo build", Result));
    return Result.Started ? 1 : 127;
  }
  recordLinkStamps(Plan);
  return 0;
}

int runCargoWithOxide(const BuildPlan &Plan, const CargoRunner &Cargo,
                      bool ForceRelink, std::string_view Step,
                      const std::vector<std::string> &Args) {
  if (auto E = ensureRelink(Plan, Cargo, ForceRelink)) {
    printError(*E);
    return 1;
  }
  ProcessResult Result = Cargo.run(Args);
  if (!Result.succeeded()) {
    printError(cargoFailure(Step, Result));
    return Result.Started ? Result.shellStatus() : 127;
  }
  // Everything this run linked was linked with the current settings (stale
  // packages were cleaned above), so the stamps are accurate.
  recordLinkStamps(Plan);
  return 0;
}

std::string formatSize(uintmax_t Bytes) {
  char Buffer[32];
  if (Bytes < 1024)
    std::snprintf(Buffer, sizeof(Buffer), "%ju B", Bytes);
  else if (Bytes < 1024 * 1024)
    std::snprintf(Buffer, sizeof(Buffer), "%.1f KiB", Bytes / 1024.0);
  else
    std::snprintf(Buffer, sizeof(Buffer), "%.1f MiB", Bytes / (1024.0 * 1024));
  return Buffer;
}

//===----------------------------------------------------------------------===//
// build / run / clean
//===----------------------------------------------------------------------===//

int runBuildCommand(const Options &Opts, const Context &Ctx) {
  Expected<BuildPlan> Plan = planBuild(Opts, Ctx, /*AllowWorkspace=*/true);
  if (!Plan) {
    printError(Plan.error());
    return 1;
  }
  CargoRunner Cargo(Plan->environment(Ctx.Env), Opts.Verbose);
  return buildWithOxide(*Plan, Cargo, /*ForceRelink=*/false);
}

EmulationChoice chooseEmulation(EmulateMode Flag, const Environment &Env,
                                const std::function<DriverProbe()> &Probe) {
  if (Flag != EmulateMode::Off)
    return {std::string(emulateValue(Flag)), ""};
  if (Env.getNonEmpty("OXIDE_EMULATE"))
    return {}; // the user chose (OXIDE_EMULATE=0 refuses to emulate)
  DriverProbe Found = Probe();
  if (Found.HasDevice)
    return {};
  return {std::string(emulateValue(EmulateMode::Default)),
          "note: no GPU here (" +
              (Found.Loaded ? Found.DeviceError : std::string("no CUDA driver")) +
              "): running the kernels on the CPU emulator (OXIDE_EMULATE=1; "
              "OXIDE_EMULATE=0 refuses instead)"};
}

namespace {

/// WHY of `emulate = "KIND: WHY"` (or of a bare `emulate = "KIND"`, empty);
/// nullopt when the package says something else.
std::optional<std::string> emulateReason(const Package &Pkg,
                                         std::string_view Kind) {
  if (!Pkg.Info.OxideEmulate)
    return std::nullopt;
  std::string_view Said = *Pkg.Info.OxideEmulate;
  if (Said.substr(0, Kind.size()) != Kind)
    return std::nullopt;
  std::string_view Rest = Said.substr(Kind.size());
  if (Rest.empty())
    return std::string();
  if (Rest.front() != ':')
    return std::nullopt;
  Rest.remove_prefix(1);
  while (!Rest.empty() && Rest.front() == ' ')
    Rest.remove_prefix(1);
  return std::string(Rest);
}

} // namespace

EmulationChoice packageEmulation(const Package &Pkg, EmulateMode Flag,
                                 EmulationChoice Choice) {
  std::optional<std::string> Why = emulateReason(Pkg, "host");
  bool DefaultMode = Choice.Value && *Choice.Value == emulateValue(EmulateMode::Default);
  if (!Why || !DefaultMode ||
      (Flag != EmulateMode::Default && Flag != EmulateMode::Off))
    return Choice;
  Choice.Value = std::string(emulateValue(EmulateMode::HostCode));
  Choice.Note = (Choice.Note.empty() ? "" : Choice.Note + "\n") + "note: `" +
                Pkg.name() +
                "` runs its kernels' Rust code on the CPU (--emulate=host), as "
                "its Cargo.toml asks" +
                (Why->empty() ? std::string() : ": " + *Why);
  return Choice;
}

std::optional<Error> refuseEmulation(const Package &Pkg,
                                     const EmulationChoice &Choice,
                                     const Environment &Env) {
  std::optional<std::string> Why = emulateReason(Pkg, "no");
  if (!Why)
    return std::nullopt;
  std::optional<std::string> Value =
      Choice.Value ? Choice.Value : Env.getNonEmpty("OXIDE_EMULATE");
  if (!Value || *Value == "0")
    return std::nullopt; // the GPU
  return Error{"`" + Pkg.name() + "` cannot run on the CPU emulator" +
                   (Why->empty() ? std::string() : ": " + *Why),
               "its Cargo.toml says so (" + Pkg.ManifestPath.string() +
                   ", [package.metadata.oxide] emulate); run it on a GPU"};
}

Error crashError(std::string_view Program, const ProcessResult &Result) {
  std::string Hint;
  switch (Result.Signal) {
  case SIGSEGV:
  case SIGBUS:
    Hint = "the host code touched memory it may not (an invalid pointer in "
           "unsafe code or a C library it calls); run it under gdb, or "
           "`cargo oxide debug` for cuda-gdb";
    break;
  case SIGABRT:
    Hint = "the program aborted: a panic with panic = \"abort\", a panic "
           "while panicking, or a failed assertion in C code; its last "
           "output above says which";
    break;
  case SIGKILL:
    Hint = "killed from outside, often by the kernel's out-of-memory killer "
           "(`dmesg` says)";
    break;
  default:
    Hint = "its last output above may say why; run it under gdb to see where";
  }
  return Error{"`" + std::string(Program) + "` crashed: " + Result.describe(),
               Hint};
}

namespace {

/// Why N ranks cannot start here: more than one under the emulator (its
/// communicator lives in one process), or more than the GPUs present.
std::optional<Error> refuseRanks(unsigned Gpus, bool Emulated) {
  if (Emulated && Gpus > 1)
    return Error{
        "--gpus " + std::to_string(Gpus) +
            ": the ranks would run on the CPU emulator, whose communicator "
            "lives in one process, so a job of several processes needs GPUs",
        "under the emulator run the ranks as threads of one process "
        "(e.g. `cargo oxide run allreduce -- --ranks 4`)"};
  if (!Emulated) {
    int Count = probeCudaDriver(/*RunKernel=*/false).DeviceCount;
    if (Count < static_cast<int>(Gpus))
      return Error{"--gpus " + std::to_string(Gpus) + ": this machine has " +
                       std::to_string(Count) + " GPU(s)",
                   "one process runs per GPU; ask for at most " +
                       std::to_string(Count)};
  }
  return std::nullopt;
}

/// Starts the ranks of `Program` (the launch shared by `run --gpus` and
/// `launch`).
int startRanks(const fs::path &Program, const Options &Opts,
               const Environment &Env) {
  std::string Rendezvous = freeLocalAddress();
  if (Rendezvous.empty()) {
    printError(Error{"--gpus: no local TCP port for the rendezvous",
                     "check that this machine allows listening on 127.0.0.1"});
    return 1;
  }
  std::cerr << "cargo oxide: " << *Opts.Gpus << " rank(s) of "
            << Program.filename().string() << ", rendezvous on " << Rendezvous
            << "\n";
  std::vector<std::string> Command = {Program.string()};
  Command.insert(Command.end(), Opts.ProgramArgs.begin(),
                 Opts.ProgramArgs.end());
  return launchRanks(Command, Env, *Opts.Gpus, Rendezvous, std::cout,
                     std::cerr);
}

} // namespace

int runRunCommand(const Options &Opts, const Context &Ctx) {
  Expected<BuildPlan> Plan = planBuild(Opts, Ctx, /*AllowWorkspace=*/false);
  if (!Plan) {
    printError(Plan.error());
    return 1;
  }
  CargoRunner Cargo(Plan->environment(Ctx.Env), Opts.Verbose);

  // The program runs its kernels on the CPU with --emulate, or when there is
  // no GPU and the user did not choose (OXIDE_EMULATE unset). The variable
  // only matters at run time, so the build below is shared with GPU runs;
  // it is decided first so that a package that cannot be emulated is
  // refused before anything is built.
  Environment RunEnv = Plan->environment(Ctx.Env);
  EmulationChoice Emulation = packageEmulation(
      *Plan->Pkg, Opts.Emulate,
      chooseEmulation(Opts.Emulate, RunEnv, [] { return probeCudaDriver(); }));
  if (auto Refusal = refuseEmulation(*Plan->Pkg, Emulation, RunEnv)) {
    printError(*Refusal);
    return 1;
  }
  // --gpus N: checked before building, like the emulation.
  if (Opts.Gpus) {
    std::optional<std::string> Emulate =
        Emulation.Value ? Emulation.Value : RunEnv.getNonEmpty("OXIDE_EMULATE");
    if (auto Refusal = refuseRanks(*Opts.Gpus, Emulate && *Emulate != "0")) {
      printError(*Refusal);
      return 1;
    }
  }

  // Build first, on its own: a build failure then gets our error and hint,
  // and the exit status of the run below is the program's alone.
  if (int Status = buildWithOxide(*Plan, Cargo, /*ForceRelink=*/false))
    return Status;

  if (!Emulation.Note.empty())
    std::cerr << Emulation.Note << "\n";
  if (Emulation.Value)
    RunEnv.set("OXIDE_EMULATE", *Emulation.Value);
  if (Opts.Gpus) {
    fs::path Program = Plan->TargetDir / Plan->profileDir() / Plan->Pkg->name();
    if (!fs::exists(Program)) {
      printError(Error{"--gpus: the program is not at " + Program.string(),
                       "run it without --gpus to see what cargo builds"});
      return 1;
    }
    return startRanks(Program, Opts, RunEnv);
  }
  CargoRunner RunCargo(RunEnv, Opts.Verbose);

  // Everything is fresh now, so this only runs the program (`--quiet` keeps
  // cargo from printing a second "Finished" line).
  std::vector<std::string> Args = {"run", "--quiet"};
  std::vector<std::string> Selection = Plan->cargoSelection();
  Args.insert(Args.end(), Selection.begin(), Selection.end());
  if (!Opts.ProgramArgs.empty()) {
    Args.push_back("--");
    Args.insert(Args.end(), Opts.ProgramArgs.begin(), Opts.ProgramArgs.end());
  }
  ProcessResult Result = RunCargo.run(Args);
  if (!Result.Started) {
    printError(cargoFailure("cargo run", Result));
    return 127;
  }
  // The program's own status (cargo passes it through); cargo has already
  // said "process didn't exit successfully" when it is not 0. A crash it
  // cannot report: `cargo run` execs the program, so the signal reaches us.
  if (Result.Signal != 0 && Result.Signal != SIGINT && Result.Signal != SIGPIPE)
    printError(crashError(Plan->Pkg->name(), Result));
  return Result.shellStatus();
}

std::string replaceDeviceLinkMessage(std::string_view Line,
                                     std::string_view DeviceDiagnostics) {
  Expected<JsonValue> Message = parseJson(Line);
  if (!Message || Message->Type != JsonValue::Kind::Object)
    return std::string(Line);
  const JsonValue *Reason = Message->get("reason");
  const JsonValue *Inner = Message->get("message");
  const JsonValue *Text = Inner ? Inner->get("message") : nullptr;
  if (!Reason || Reason->string() != "compiler-message" || !Text ||
      !Text->string() || !Text->string()->starts_with("linking with `") ||
      Text->string()->find("oxide-link") == std::string::npos)
    return std::string(Line);
  std::string Out;
  size_t Pos = 0;
  while (Pos < DeviceDiagnostics.size()) {
    size_t End = DeviceDiagnostics.find('\n', Pos);
    if (End == std::string_view::npos)
      End = DeviceDiagnostics.size();
    Expected<JsonValue> Diagnostic =
        parseJson(DeviceDiagnostics.substr(Pos, End - Pos));
    Pos = End + 1;
    if (!Diagnostic)
      continue;
    // rustc's framing kept (reason, package, target); oxide's diagnostic as
    // the message.
    JsonValue Replaced = *Message;
    for (JsonValue &Member : Replaced.Members)
      if (Member.Key == "message") {
        Member = *Diagnostic;
        Member.Key = "message";
      }
    Out += toJson(Replaced) + "\n";
  }
  return Out.empty() ? std::string(Line) : Out;
}

int runCheckCommand(const Options &Opts, const Context &Ctx) {
  Expected<BuildPlan> Plan = planBuild(Opts, Ctx, /*AllowWorkspace=*/true);
  if (!Plan) {
    printError(Plan.error());
    return 1;
  }
  // Checked programs carry no kernels: they get a target directory of their
  // own, so that neither `cargo oxide build` nor plain cargo ever takes one
  // for a built program, and the two keep each other's work.
  Plan->TargetDir = Plan->TargetDir / "oxide" / "check";
  Plan->TargetDirFromFlag = true;
  Environment Env = Plan->environment(Ctx.Env);
  Env.set("OXIDE_CHECK", "1");
  fs::path Diagnostics = Plan->TargetDir / "oxide-diagnostics.json";
  std::error_code EC;
  fs::create_directories(Plan->TargetDir, EC);
  fs::remove(Diagnostics, EC);
  if (Opts.JsonMessages)
    Env.set("OXIDE_DIAGNOSTICS_JSON", Diagnostics.string());
  CargoRunner Cargo(Env, Opts.Verbose);
  if (auto E = ensureRelink(*Plan, Cargo, /*Force=*/false)) {
    printError(*E);
    return 1;
  }
  std::vector<std::string> Args = {"build"};
  std::vector<std::string> Selection = Plan->cargoSelection();
  Args.insert(Args.end(), Selection.begin(), Selection.end());
  if (!Opts.JsonMessages) {
    ProcessResult Result = Cargo.run(Args);
    if (!Result.succeeded()) {
      printError(cargoFailure("cargo oxide check", Result));
      return Result.Started ? 1 : 127;
    }
    recordLinkStamps(*Plan);
    return 0;
  }
  // cargo's JSON on stdout, with each failed device link's message replaced
  // by oxide's diagnostics (which oxide-link appended to the file).
  Args.push_back("--message-format=json");
  Args.insert(Args.begin() + 1, emulatorProfileArgs().begin(),
              emulatorProfileArgs().end());
  std::vector<std::string> Argv = {cargoProgram(Env)};
  Argv.insert(Argv.end(), Args.begin(), Args.end());
  if (Opts.Verbose)
    printStatus("Running", formatCommandLine(Argv));
  RunOptions Run;
  Run.Env = &Env;
  Run.CaptureStdout = true;
  ProcessResult Result = runProcess(Argv, Run);
  if (!Result.Started) {
    printError(cargoFailure("cargo oxide check", Result));
    return 127;
  }
  std::string Device;
  {
    std::ifstream In(Diagnostics, std::ios::binary);
    std::ostringstream Text;
    Text << In.rdbuf();
    Device = Text.str();
  }
  size_t Pos = 0;
  while (Pos < Result.Output.size()) {
    size_t End = Result.Output.find('\n', Pos);
    if (End == std::string::npos)
      End = Result.Output.size();
    std::string Line = Result.Output.substr(Pos, End - Pos);
    Pos = End + 1;
    std::string Out = replaceDeviceLinkMessage(Line, Device);
    std::cout << Out << (Out.ends_with("\n") ? "" : "\n");
  }
  std::cout.flush();
  if (Result.succeeded())
    recordLinkStamps(*Plan);
  return Result.succeeded() ? 0 : 1;
}

int runMetadataCommand(const Options &Opts, const Context &Ctx) {
  Expected<std::optional<fs::path>> Manifest = manifestPathOption(Opts, Ctx);
  if (!Manifest) {
    printError(Manifest.error());
    return 1;
  }
  fs::path Start = *Manifest ? (*Manifest)->parent_path() : Ctx.Cwd;
  Expected<Workspace> WS = findWorkspace(Start);
  if (!WS) {
    printError(WS.error());
    return 1;
  }
  Expected<Package> Pkg = resolvePackage(*WS, Start, Opts.Name);
  if (!Pkg) {
    printError(Pkg.error());
    return 1;
  }
  Expected<ProjectMetadata> Project =
      readCargoMetadata(Ctx.Env, Ctx.Cwd, Pkg->ManifestPath);
  if (!Project) {
    printError(Project.error());
    return 1;
  }
  applyMetadata(*Pkg, *Project);
  // The same resolution as planBuild(): what a build would use.
  Expected<ArchChoice> Arch = resolveArch(
      ArchInputs{Opts.Arch, Pkg->Info.OxideArch, Pkg->ManifestPath,
                 Ctx.DetectGpu},
      Ctx.Env);
  if (!Arch) {
    printError(Arch.error());
    return 1;
  }
  std::string Emulate = Pkg->Info.OxideEmulate.value_or("");
  if (Opts.Print) {
    std::cout << (*Opts.Print == "arch"      ? Arch->Arch
                  : *Opts.Print == "emulate" ? Emulate
                                             : Pkg->name())
              << "\n";
    return 0;
  }
  std::cout << "package = " << Pkg->name() << "\n"
            << "manifest = " << Pkg->ManifestPath.string() << "\n"
            << "target-dir = " << Project->TargetDirectory.string() << "\n"
            << "arch = " << Arch->Arch << " (from " << Arch->Origin << ")\n"
            << "emulate = " << Emulate << "\n";
  return 0;
}

int runCleanCommand(const Options &Opts, const Context &Ctx) {
  Expected<Workspace> WS = findWorkspace(Ctx.Cwd);
  if (!WS) {
    printError(WS.error());
    return 1;
  }
  // cargo's target directory, .cargo/config.toml included.
  Expected<ProjectMetadata> Project =
      readCargoMetadata(Ctx.Env, Ctx.Cwd, WS->ManifestPath);
  if (!Project) {
    printError(Project.error());
    return 1;
  }
  fs::path TargetDir = Project->TargetDirectory;
  std::optional<Package> Pkg;
  if (Opts.Name) {
    Expected<Package> Found = resolvePackage(*WS, Ctx.Cwd, Opts.Name);
    if (!Found) {
      printError(Found.error());
      return 1;
    }
    Pkg = *Found;
  }

  CargoRunner Cargo(Ctx.Env, Opts.Verbose);
  std::vector<std::string> Args = {"clean", "--manifest-path",
                                   WS->ManifestPath.string()};
  if (Pkg) {
    Args.push_back("--package");
    Args.push_back(Pkg->name());
  }
  if (Opts.Release)
    Args.push_back("--release");
  ProcessResult Result = Cargo.run(Args);
  if (!Result.succeeded()) {
    printError(cargoFailure("cargo clean", Result));
    return Result.Started ? 1 : 127;
  }

  // cargo clean of the whole workspace removes the target directory, oxide/
  // included; the rest is for a per-package or per-profile clean.
  std::error_code EC;
  fs::path OxideDir = TargetDir / "oxide";
  std::vector<fs::path> Remove;
  // Stamps are named <package>-<profile>[@<toolchain>]; drop the ones whose
  // artifacts the cargo clean above removed.
  auto StampCleaned = [&](const std::string &File) {
    std::string Base = File.substr(0, File.find('@'));
    std::string Profile = Opts.Release ? "-release" : "-debug";
    if (Pkg)
      return Base == Pkg->name() + Profile;
    return Base.ends_with(Profile); // a whole-workspace clean of one profile
  };
  if (Pkg)
    Remove.push_back(oxideOutputDir(TargetDir, Pkg->name()));
  if (Pkg || Opts.Release) {
    for (fs::directory_iterator It(OxideDir / ".stamps", EC), End;
         !EC && It != End; It.increment(EC))
      if (StampCleaned(It->path().filename().string()))
        Remove.push_back(It->path());
  } else {
    Remove.push_back(OxideDir);
  }
  for (const fs::path &P : Remove) {
    if (!fs::exists(P, EC))
      continue;
    fs::remove_all(P, EC);
    if (EC) {
      printError({"cannot remove " + P.string() + ": " + EC.message(),
                  "check its permissions and remove it by hand"});
      return 1;
    }
    if (Opts.Verbose)
      printStatus("Removed", P.string());
  }
  return 0;
}

int runLaunchCommand(const Options &Opts, const Context &Ctx) {
  if (!Opts.Gpus) {
    printError(Error{"`cargo oxide launch` needs --gpus N",
                     "for example: cargo oxide launch --gpus 2 "
                     "./target/release/my_program -- ARGS"});
    return 1;
  }
  fs::path Program = Ctx.Cwd / *Opts.Name;
  std::error_code EC;
  if (!fs::is_regular_file(Program, EC) ||
      access(Program.c_str(), X_OK) != 0) {
    printError(Error{"cannot launch `" + *Opts.Name + "`" +
                         ": no executable file there",
                     "give the path of a built program, e.g. "
                     "target/release/NAME (`cargo oxide build --release` "
                     "makes it)"});
    return 1;
  }
  std::optional<std::string> Emulate = Ctx.Env.getNonEmpty("OXIDE_EMULATE");
  if (auto Refusal = refuseRanks(*Opts.Gpus, Emulate && *Emulate != "0")) {
    printError(*Refusal);
    return 1;
  }
  return startRanks(Program, Opts, Ctx.Env);
}

} // namespace oxide::cli

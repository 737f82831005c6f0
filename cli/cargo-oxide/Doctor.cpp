//===- Doctor.cpp - cargo oxide doctor ------------------------------------===//
//
// Part of oxide. Checks, in the order a build needs them, everything oxide
// depends on, and prints one line per check: ✓ with what was found, or ✗ with
// what is wrong and a `fix:` line. The exit status is 0 only if every check
// passed, so scripts can gate on it; a build machine without a GPU fails
// only the driver and GPU checks, which the summary says plainly.
//
//===----------------------------------------------------------------------===//

#include "Cargo.h"
#include "Commands.h"
#include "CudaDriver.h"
#include "Diagnostic.h"
#include "Toolchain.h"

#include "oxide/Targets.h"

#include <algorithm>
#include <iostream>

namespace oxide::cli {

namespace {

struct Check {
  explicit Check(std::string Label) : Label(std::move(Label)) {}
  Check(std::string Label, bool Ok, std::string Detail, std::string Fix)
      : Label(std::move(Label)), Ok(Ok), Detail(std::move(Detail)),
        Fix(std::move(Fix)) {}

  std::string Label;
  bool Ok = false;
  std::string Detail;
  std::string Fix; ///< shown for failed checks
};

/// Runs \p Argv and returns its stdout and stderr, or nullopt with \p Why set.
std::optional<std::string> capture(const std::vector<std::string> &Argv,
                                   const Environment &Env, std::string &Why) {
  RunOptions Options;
  Options.Env = &Env;
  Options.CaptureStdout = true;
  Options.CaptureStderr = true;
  ProcessResult R = runProcess(Argv, Options);
  if (!R.succeeded()) {
    Why = R.Started ? "`" + formatCommandLine(Argv) + "` failed (" +
                          R.describe() + ")"
                    : R.StartError;
    std::string Last = lastNonEmptyLine(R.Output);
    if (!Last.empty())
      Why += ": " + Last;
    return std::nullopt;
  }
  return R.Output;
}

std::string firstLine(std::string_view Text) {
  size_t End = Text.find('\n');
  return std::string(Text.substr(0, End));
}

class Doctor {
public:
  Doctor(const Context &Ctx, bool RuntimeOnly)
      : Ctx(Ctx), RuntimeOnly(RuntimeOnly) {}

  int run();

private:
  const Context &Ctx;
  bool RuntimeOnly;
  std::vector<Check> Checks;
  int RustcLlvmMajor = 0;

  void checkCargo();
  void checkRustc();
  void checkLlvmPairing();
  void checkDeviceLinker();
  bool checkCudaToolkit();
  void checkPtxas();
  void checkLibdevice();
  void checkDriverAndGpu();
  void printDebugTools() const;
  void print() const;
};

void Doctor::checkCargo() {
  Check C("cargo");
  std::string Why;
  std::string Program = cargoProgram(Ctx.Env);
  if (auto Out = capture({Program, "--version"}, Ctx.Env, Why)) {
    C.Ok = true;
    C.Detail = firstLine(*Out);
  } else {
    C.Detail = Why;
    C.Fix = "install Rust with rustup (https://rustup.rs) and put ~/.cargo/bin "
            "on PATH";
  }
  Checks.push_back(C);
}

void Doctor::checkRustc() {
  Check C("rustc");
  std::string Why;
  std::string Program = rustcProgram(Ctx.Env);
  auto Out = capture({Program, "-vV"}, Ctx.Env, Why);
  if (!Out) {
    C.Detail = Why;
    C.Fix = "install a toolchain: `rustup toolchain install stable`";
    Checks.push_back(C);
    return;
  }
  Expected<RustcInfo> Info = parseRustcVersion(*Out);
  if (!Info) {
    C.Detail = Info.error().Message;
    C.Fix = Info.error().Hint;
    Checks.push_back(C);
    return;
  }
  C.Ok = true;
  C.Detail = Info->VersionLine + ", LLVM version: " +
             (Info->LlvmVersion.empty() ? "unknown" : Info->LlvmVersion);
  if (auto Toolchain = Ctx.Env.getNonEmpty("RUSTUP_TOOLCHAIN"))
    C.Detail += " [" + *Toolchain + "]";
  RustcLlvmMajor = Info->LlvmMajor;
  Checks.push_back(C);
}

void Doctor::checkLlvmPairing() {
  Check C("LLVM pairing");
  int Oxide = oxideLlvmMajor();
  C.Ok = isRustcLlvmSupported(RustcLlvmMajor, Oxide);
  C.Detail = describeLlvmPairing(RustcLlvmMajor, Oxide);
  if (!C.Ok)
    C.Fix = RustcLlvmMajor > Oxide
                ? "use a toolchain whose rustc is built on LLVM " +
                      std::to_string(Oxide) +
                      " or older (`cargo +stable oxide …`), or build oxide "
                      "against LLVM " +
                      std::to_string(RustcLlvmMajor)
                : "fix the rustc check above first";
  Checks.push_back(C);
}

void Doctor::checkDeviceLinker() {
  Check C("oxide-link");
  Expected<fs::path> Linker = locateDeviceLinker(Ctx.Env, Ctx.SelfExe);
  if (Linker) {
    C.Ok = true;
    C.Detail = Linker->string();
  } else {
    C.Detail = Linker.error().Message;
    C.Fix = Linker.error().Hint;
  }
  Checks.push_back(C);
}

bool Doctor::checkCudaToolkit() {
  Check C("CUDA toolkit");
  fs::path Root = cudaToolkitRoot(Ctx.Env);
  std::error_code EC;
  bool FromEnv = Ctx.Env.getNonEmpty("OXIDE_CUDA_PATH").has_value();
  C.Ok = fs::is_directory(Root, EC);
  C.Detail = Root.string() + (FromEnv ? " (OXIDE_CUDA_PATH)" : "") +
             (C.Ok ? "" : ": no such directory");
  if (!C.Ok)
    C.Fix = "install the CUDA toolkit (12 or newer) or set OXIDE_CUDA_PATH to "
            "its root, e.g. export OXIDE_CUDA_PATH=/usr/local/cuda-13.0";
  Checks.push_back(C);
  return C.Ok;
}

void Doctor::checkPtxas() {
  Check C("ptxas");
  std::optional<fs::path> Ptxas = findCudaTool("ptxas", Ctx.Env);
  if (!Ptxas) {
    C.Detail = "not found in " + (cudaToolkitRoot(Ctx.Env) / "bin").string() +
               " or PATH";
    C.Fix = "install the CUDA toolkit's compiler tools (ptxas validates the "
            "PTX oxide writes), or set OXIDE_CUDA_PATH";
    Checks.push_back(C);
    return;
  }
  std::string Why;
  if (auto Out = capture({Ptxas->string(), "--version"}, Ctx.Env, Why)) {
    C.Ok = true;
    C.Detail = lastNonEmptyLine(*Out) + " (" + Ptxas->string() + ")";
  } else {
    C.Detail = Why;
    C.Fix = "reinstall the CUDA toolkit; " + Ptxas->string() + " does not run";
  }
  Checks.push_back(C);
}

void Doctor::checkLibdevice() {
  Check C("libdevice");
  fs::path Path = libdevicePath(Ctx.Env);
  std::error_code EC;
  C.Ok = fs::is_regular_file(Path, EC);
  C.Detail = Path.string() + (C.Ok ? "" : ": not found");
  if (!C.Ok)
    C.Fix = "install the toolkit's NVVM component (math functions in kernels "
            "link against libdevice), or set OXIDE_CUDA_PATH";
  Checks.push_back(C);
}

void Doctor::checkDriverAndGpu() {
  DriverProbe Probe = probeCudaDriver();

  Check Driver("NVIDIA driver");
  Driver.Ok = Probe.Loaded;
  if (Probe.Loaded) {
    Driver.Detail =
        "libcuda.so.1, CUDA " + (Probe.DriverVersion
                                     ? formatCudaVersion(Probe.DriverVersion)
                                     : std::string("version unknown"));
  } else {
    Driver.Detail = "missing: " + Probe.LoadError;
    Driver.Fix = "install the NVIDIA driver (it provides libcuda.so.1) to run "
                 "kernels; building them and checking their PTX "
                 "(`cargo oxide build`, `cargo oxide pipeline`) works without";
  }
  Checks.push_back(Driver);

  Check Gpu("GPU");
  if (!Probe.Loaded) {
    Gpu.Detail = "missing: no NVIDIA driver to ask for a GPU";
    Gpu.Fix = "run on a machine with an NVIDIA GPU and its driver";
  } else if (!Probe.HasDevice) {
    Gpu.Detail = "missing: " + Probe.DeviceError;
    Gpu.Fix = "check `nvidia-smi`; in a container, pass the GPU through "
              "(e.g. docker --gpus all); check CUDA_VISIBLE_DEVICES";
  } else {
    std::string Arch = "sm_" + std::to_string(Probe.ComputeMajor) +
                       std::to_string(Probe.ComputeMinor);
    Gpu.Detail = "device 0 of " + std::to_string(Probe.DeviceCount) + ": " +
                 Probe.DeviceName + " (compute capability " +
                 std::to_string(Probe.ComputeMajor) + "." +
                 std::to_string(Probe.ComputeMinor) + ", " + Arch + ")";
    // A GPU is usable when Targets.def has a target for it (ptxas and LLVM
    // both know it).
    const oxide::GpuTarget *Target =
        oxide::targetForComputeCapability(Probe.ComputeMajor, Probe.ComputeMinor);
    Gpu.Ok = Target != nullptr;
    ComputeCapability Found{Probe.ComputeMajor, Probe.ComputeMinor};
    Expected<ArchChoice> Default =
        resolveArch({std::nullopt, std::nullopt, {}, [&] { return std::optional(Found); }},
                    Ctx.Env);
    if (!Gpu.Ok)
      Gpu.Fix = "oxide builds for " + oxide::targetNamesWith() +
                " (compiler/include/oxide/Targets.def); this GPU is none of them";
    else if (!Default)
      Gpu.Detail += "; " + Default.error().Message;
    else if (Default->Arch != Target->Name)
      Gpu.Detail += "; builds are for " + Default->Arch + " (from " + Default->Origin +
                    "), --arch " + std::string(Target->Name) + " for this GPU";
  }
  Checks.push_back(Gpu);

  Check Launch("kernel launch");
  if (!Probe.HasDevice) {
    Launch.Detail = "not tried: no GPU";
    Launch.Fix = "fix the GPU check above";
  } else if (Probe.KernelRan) {
    Launch.Ok = true;
    Launch.Detail = "a PTX kernel was JIT-compiled, ran on device 0 and "
                    "wrote the right 256 values";
  } else {
    Launch.Detail = Probe.KernelError;
    Launch.Fix = "the driver sees the GPU but cannot run a kernel on it: "
                 "check `nvidia-smi` for errors or a GPU in use exclusively, "
                 "and that the driver is as new as the CUDA toolkit";
  }
  Checks.push_back(Launch);
}

/// The tools behind `cargo oxide debug`, `sanitize` and `inspect --sass`:
/// listed, never failed (they are not needed to build or run).
void Doctor::printDebugTools() const {
  bool Color = useColorOnStdout();
  for (const char *Tool :
       {"cuda-gdb", "compute-sanitizer", "nvdisasm", "cuobjdump"}) {
    std::optional<fs::path> Found = findCudaTool(Tool, Ctx.Env);
    std::cout << bold("·", Color) << " " << Tool << ": "
              << (Found ? Found->string() : std::string("not found (optional)"))
              << "\n";
  }
}

void Doctor::print() const {
  bool Color = useColorOnStdout();
  size_t Width = 0;
  for (const Check &C : Checks)
    Width = std::max(Width, C.Label.size());
  for (const Check &C : Checks) {
    std::string Label = C.Label;
    Label.resize(Width + 2, ' ');
    std::cout << (C.Ok ? green("✓", Color) : red("✗", Color)) << " " << Label
              << C.Detail << "\n";
    if (!C.Ok && !C.Fix.empty())
      std::cout << std::string(Width + 4, ' ') << bold("fix:", Color) << " "
                << C.Fix << "\n";
  }
  std::cout.flush();
}

int Doctor::run() {
  if (!RuntimeOnly) {
    checkCargo();
    checkRustc();
    checkLlvmPairing();
    checkDeviceLinker();
    if (checkCudaToolkit()) {
      checkPtxas();
      checkLibdevice();
    } else {
      Checks.push_back({"ptxas", false, "not checked: no CUDA toolkit",
                        "fix the CUDA toolkit check above"});
      Checks.push_back({"libdevice", false, "not checked: no CUDA toolkit",
                        "fix the CUDA toolkit check above"});
    }
  }
  checkDriverAndGpu();
  print();
  printDebugTools();

  std::vector<std::string> Failed;
  for (const Check &C : Checks)
    if (!C.Ok)
      Failed.push_back(C.Label);
  if (Failed.empty()) {
    std::cout << "all " << Checks.size() << " checks passed\n";
    return 0;
  }
  std::string List;
  for (const std::string &F : Failed)
    List += (List.empty() ? "" : ", ") + F;
  bool OnlyRuntime =
      std::all_of(Failed.begin(), Failed.end(), [](const std::string &F) {
        return F == "NVIDIA driver" || F == "GPU" || F == "kernel launch";
      });
  printError({std::to_string(Failed.size()) + " of " +
                  std::to_string(Checks.size()) + " checks failed: " + List,
              OnlyRuntime && RuntimeOnly
                  ? "built programs cannot run their kernels here; run them "
                    "on a machine with an NVIDIA GPU and driver"
              : OnlyRuntime
                  ? "this machine can build kernels and validate their PTX "
                    "but not run them; run on a machine with an NVIDIA GPU"
                  : "follow the `fix:` lines above, then run `cargo oxide "
                    "doctor` again"});
  return 1;
}

} // namespace

int runDoctorCommand(const Options &Opts, const Context &Ctx) {
  return Doctor(Ctx, Opts.RuntimeOnly).run();
}

} // namespace oxide::cli

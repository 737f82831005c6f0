//===- Toolchain.cpp - rustc, LLVM and CUDA toolkit facts -----------------===//
//
// Part of oxide. See Toolchain.h.
//
//===----------------------------------------------------------------------===//

#include "Toolchain.h"

#include <cctype>

#ifndef OXIDE_LLVM_MAJOR
#define OXIDE_LLVM_MAJOR 22
#endif
#ifndef OXIDE_SOURCE_DIR
#define OXIDE_SOURCE_DIR ""
#endif

namespace oxide::cli {

namespace {

std::string_view trim(std::string_view S) {
  while (!S.empty() && std::isspace(static_cast<unsigned char>(S.front())))
    S.remove_prefix(1);
  while (!S.empty() && std::isspace(static_cast<unsigned char>(S.back())))
    S.remove_suffix(1);
  return S;
}

/// The leading decimal number of \p S, or nullopt.
std::optional<int> leadingNumber(std::string_view S) {
  int Value = 0;
  size_t I = 0;
  for (; I < S.size() && std::isdigit(static_cast<unsigned char>(S[I])); ++I) {
    if (Value > 100000)
      return std::nullopt;
    Value = Value * 10 + (S[I] - '0');
  }
  if (I == 0)
    return std::nullopt;
  return Value;
}

} // namespace

int oxideLlvmMajor() { return OXIDE_LLVM_MAJOR; }

Expected<RustcInfo> parseRustcVersion(std::string_view Text) {
  RustcInfo Info;
  bool First = true;
  while (!Text.empty()) {
    size_t End = Text.find('\n');
    std::string_view Line =
        trim(Text.substr(0, End == std::string_view::npos ? Text.size() : End));
    Text.remove_prefix(End == std::string_view::npos ? Text.size() : End + 1);
    if (Line.empty())
      continue;
    if (First) {
      First = false;
      Info.VersionLine = std::string(Line);
      continue;
    }
    size_t Colon = Line.find(':');
    if (Colon == std::string_view::npos)
      continue;
    std::string_view Key = trim(Line.substr(0, Colon));
    std::string_view Value = trim(Line.substr(Colon + 1));
    if (Key == "release")
      Info.Release = std::string(Value);
    else if (Key == "host")
      Info.Host = std::string(Value);
    else if (Key == "LLVM version") {
      Info.LlvmVersion = std::string(Value);
      Info.LlvmMajor = leadingNumber(Value).value_or(0);
    }
  }
  if (Info.VersionLine.rfind("rustc ", 0) != 0)
    return Error{"unexpected output from `rustc -vV`" +
                     (Info.VersionLine.empty() ? std::string(" (nothing)")
                                               : ": " + Info.VersionLine),
                 "check that `rustc` on PATH (or $RUSTC) is the Rust "
                 "compiler; `rustup show` lists the toolchains"};
  if (Info.Release.empty()) {
    // Old rustc without the release line: take it from "rustc X.Y.Z …".
    std::string_view Rest = std::string_view(Info.VersionLine).substr(6);
    Info.Release = std::string(Rest.substr(0, Rest.find(' ')));
  }
  return Info;
}

bool isRustcLlvmSupported(int RustcLlvmMajor, int OxideLlvmMajor) {
  return RustcLlvmMajor > 0 && RustcLlvmMajor <= OxideLlvmMajor;
}

std::string describeLlvmPairing(int RustcLlvmMajor, int OxideLlvmMajor) {
  std::string Oxide = "oxide's LLVM " + std::to_string(OxideLlvmMajor);
  if (RustcLlvmMajor <= 0)
    return "rustc did not report its LLVM version; " + Oxide;
  std::string Rustc = "rustc's LLVM " + std::to_string(RustcLlvmMajor);
  if (isRustcLlvmSupported(RustcLlvmMajor, OxideLlvmMajor))
    return Rustc + " <= " + Oxide;
  return Rustc + " is newer than " + Oxide + ": oxide cannot read its bitcode";
}

std::string lastNonEmptyLine(std::string_view Text) {
  std::string_view Last;
  while (!Text.empty()) {
    size_t End = Text.find('\n');
    std::string_view Line =
        trim(Text.substr(0, End == std::string_view::npos ? Text.size() : End));
    if (!Line.empty())
      Last = Line;
    Text.remove_prefix(End == std::string_view::npos ? Text.size() : End + 1);
  }
  return std::string(Last);
}

fs::path cudaToolkitRoot(const Environment &Env) {
  return Env.getNonEmpty("OXIDE_CUDA_PATH").value_or("/usr/local/cuda");
}

std::optional<fs::path> findCudaTool(std::string_view Name,
                                     const Environment &Env) {
  fs::path InToolkit = cudaToolkitRoot(Env) / "bin" / Name;
  if (isExecutableFile(InToolkit))
    return InToolkit;
  return findProgram(Name, Env);
}

fs::path libdevicePath(const Environment &Env) {
  return cudaToolkitRoot(Env) / "nvvm" / "libdevice" / "libdevice.10.bc";
}

fs::path oxideSourceRoot(const Environment &Env) {
  if (auto Root = Env.getNonEmpty("OXIDE_ROOT"))
    return fs::absolute(*Root).lexically_normal();
  return fs::path(OXIDE_SOURCE_DIR);
}

std::string rustcProgram(const Environment &Env) {
  return Env.getNonEmpty("RUSTC").value_or("rustc");
}

std::string formatCudaVersion(int Version) {
  return std::to_string(Version / 1000) + "." +
         std::to_string((Version % 1000) / 10);
}

std::optional<std::string> hostTriple(const Environment &Env) {
  RunOptions Capture;
  Capture.Env = &Env;
  Capture.CaptureStdout = true;
  ProcessResult R = runProcess({rustcProgram(Env), "-vV"}, Capture);
  if (!R.succeeded())
    return std::nullopt;
  Expected<RustcInfo> Info = parseRustcVersion(R.Output);
  if (!Info || Info->Host.empty())
    return std::nullopt;
  return Info->Host;
}

} // namespace oxide::cli

//===- DeviceSources.cpp - CUDA C++ device code the kernels call ----------===//
//
// A build script names CUDA C++ files whose device functions Rust kernels
// declare in `extern "C"` blocks: it prints
// `cargo::rustc-link-arg=--oxide-device-source=src/ops.cu`, which cargo hands
// to this linker for every binary of the package (and relinks when the build
// script says the file changed). The argument is taken off the link line here,
// since the system linker does not know it. `--oxide-nvcc-flag=FLAG` adds an
// nvcc option (`-I` of a vendor library's headers, `-std=c++17`, `-D…`).
//
// Each file is compiled by nvcc, the compiler its users write it for, to
// relocatable PTX (`-ptx -rdc=true`: every non-static `__device__` function
// stays visible to other modules) for the link's own target, so what it
// defines and oxide's PTX can become one module (LinkPtx.cpp) that ptxas, the
// driver's JIT and the emulator all take as they take oxide's own. nvcc's
// errors name the user's file and line; they are shown as nvcc wrote them.
//
// Also here: reading the function prototypes of a PTX text, which both the
// binding of Rust declarations (BindDeviceSources) and the PTX link use.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include <set>

using namespace llvm;
using namespace oxide;

namespace {

Error makeError(const Twine &Msg) { return createStringError(inconvertibleErrorCode(), Msg); }

/// The parameter list between the parentheses starting at \p Open, each
/// parameter without its name: `.param .align 4 .b8 [12]`, `.param .b32`.
std::vector<std::string> paramTypes(StringRef List) {
  std::vector<std::string> Out;
  SmallVector<StringRef> Parts;
  List.split(Parts, ',', -1, false);
  for (StringRef P : Parts) {
    SmallVector<StringRef> Words;
    P.split(Words, ' ', -1, false);
    std::string Norm;
    bool AfterAlign = false;
    for (StringRef W : Words) {
      W = W.trim();
      if (W.empty())
        continue;
      if (W.starts_with(".") || AfterAlign) {
        Norm += (Norm.empty() ? "" : " ") + W.str();
        AfterAlign = W == ".align";
        continue;
      }
      // The name, perhaps with an array size: keep the size.
      size_t Bracket = W.find('[');
      if (Bracket != StringRef::npos)
        Norm += " " + W.drop_front(Bracket).str();
    }
    if (!Norm.empty())
      Out.push_back(Norm);
  }
  return Out;
}


} // namespace

std::string PtxPrototype::str() const {
  std::string S = "(" + join(Params, ", ") + ")";
  if (!Returns.empty())
    S += " -> (" + join(Returns, ", ") + ")";
  return S;
}

std::string oxide::ptxWithoutComments(StringRef Ptx) {
  std::string S = Ptx.str();
  for (size_t I = 0; I + 1 < S.size(); ++I) {
    if (S[I] == '/' && S[I + 1] == '/') {
      while (I < S.size() && S[I] != '\n')
        S[I++] = ' ';
    } else if (S[I] == '/' && S[I + 1] == '*') {
      size_t End = S.find("*/", I + 2);
      End = End == std::string::npos ? S.size() : End + 2;
      for (; I < End; ++I)
        if (S[I] != '\n')
          S[I] = ' ';
    }
  }
  return S;
}

std::map<std::string, PtxPrototype> oxide::ptxFunctions(StringRef Ptx, bool Definitions) {
  std::map<std::string, PtxPrototype> Out;
  std::string Text = ptxWithoutComments(Ptx);
  StringRef S(Text);
  int Depth = 0;
  size_t StmtStart = 0;
  for (size_t I = 0; I < S.size(); ++I) {
    char C = S[I];
    if (C == '{') {
      if (Depth++ == 0) {
        StringRef Head = S.slice(StmtStart, I).trim();
        bool Visible = Head.starts_with(".visible") || Head.starts_with(".weak");
        bool Func = Head.contains(".func") || Head.contains(".entry");
        if (Definitions && Visible && Func) {
          // `.visible .func (.param .b32 r) name(.param .b32 p, ...)`
          size_t Kw = Head.contains(".func") ? Head.find(".func") + 5 : Head.find(".entry") + 6;
          StringRef Rest = Head.drop_front(Kw).ltrim();
          PtxPrototype P;
          if (Rest.starts_with("(")) {
            size_t Close = Rest.find(')');
            P.Returns = paramTypes(Rest.slice(1, Close));
            Rest = Rest.drop_front(Close + 1).ltrim();
          }
          size_t Paren = Rest.find('(');
          std::string Name = Rest.take_front(Paren).trim().str();
          if (Paren != StringRef::npos)
            P.Params = paramTypes(Rest.slice(Paren + 1, Rest.find(')', Paren)));
          if (!Name.empty())
            Out[Name] = P;
        }
      }
    } else if (C == '}') {
      if (--Depth == 0)
        StmtStart = I + 1;
    } else if (C == ';' && Depth == 0) {
      StringRef Head = S.slice(StmtStart, I).trim();
      if (!Definitions && Head.starts_with(".extern") && Head.contains(".func")) {
        StringRef Rest = Head.drop_front(Head.find(".func") + 5).ltrim();
        PtxPrototype P;
        if (Rest.starts_with("(")) {
          size_t Close = Rest.find(')');
          P.Returns = paramTypes(Rest.slice(1, Close));
          Rest = Rest.drop_front(Close + 1).ltrim();
        }
        size_t Paren = Rest.find('(');
        std::string Name = Rest.take_front(Paren).trim().str();
        if (Paren != StringRef::npos)
          P.Params = paramTypes(Rest.slice(Paren + 1, Rest.find(')', Paren)));
        if (!Name.empty())
          Out[Name] = P;
      }
      StmtStart = I + 1;
    } else if (C == '\n' && Depth == 0) {
      // Directives without a `;` (.version, .target, .address_size) end at
      // the line's end.
      StringRef Head = S.slice(StmtStart, I).trim();
      if (Head.starts_with(".version") || Head.starts_with(".target") ||
          Head.starts_with(".address_size") || Head.starts_with(".file"))
        StmtStart = I + 1;
    }
  }
  return Out;
}

void oxide::takeDeviceSourceArgs(std::vector<std::string> &LinkArgs, LinkerOptions &Opts) {
  std::set<std::string> Seen;
  const char *ManifestDir = getenv("CARGO_MANIFEST_DIR");
  auto Absolute = [&](StringRef P) {
    SmallString<256> Path(P);
    if (sys::path::is_relative(Path) && ManifestDir && *ManifestDir) {
      SmallString<256> Abs(ManifestDir);
      sys::path::append(Abs, Path);
      Path = Abs;
    }
    sys::path::remove_dots(Path, /*remove_dot_dot=*/true);
    return std::string(Path);
  };
  llvm::erase_if(LinkArgs, [&](const std::string &A) {
    StringRef Arg(A);
    // rustc may hand link args on as `-Wl,` when it drives cc; accept both.
    Arg.consume_front("-Wl,");
    if (Arg.consume_front(DeviceSourceArg)) {
      std::string Path = Absolute(Arg);
      if (Seen.insert(Path).second)
        Opts.DeviceSources.push_back(Path);
      return true;
    }
    if (Arg.consume_front(NvccFlagArg)) {
      Opts.NvccFlags.push_back(Arg.starts_with("-I") && Arg.size() > 2
                                   ? "-I" + Absolute(Arg.drop_front(2))
                                   : Arg.str());
      return true;
    }
    return false;
  });
}

Expected<std::vector<DeviceSourceUnit>>
oxide::compileDeviceSources(const std::vector<std::string> &Sources, const LinkerOptions &Opts) {
  std::vector<DeviceSourceUnit> Units;
  if (Sources.empty())
    return Units;
  SmallString<256> Nvcc(Opts.CudaPath);
  sys::path::append(Nvcc, "bin", "nvcc");
  if (!sys::fs::can_execute(Nvcc)) {
    auto Found = sys::findProgramByName("nvcc");
    if (!Found)
      return makeError("the build names CUDA C++ device code (" + Sources.front() +
                       "), which nvcc compiles, but no nvcc was found in " + Opts.CudaPath +
                       "/bin or on PATH\n  = help: install the CUDA toolkit or set "
                       "OXIDE_CUDA_PATH to it");
    Nvcc = *Found;
  }
  for (const std::string &Src : Sources) {
    if (!sys::fs::exists(Src))
      return makeError("the device source " + Src +
                       " does not exist\n  = note: a build script named it with `" +
                       DeviceSourceArg + "`; a relative path is taken from the package's "
                       "directory (CARGO_MANIFEST_DIR)");
    SmallString<128> Out, Log;
    sys::fs::createTemporaryFile("oxide-device-source", "ptx", Out);
    sys::fs::createTemporaryFile("oxide-nvcc", "log", Log);
    std::string Arch = "-arch=" + Opts.Arch;
    // -rdc=true keeps every non-static __device__ function visible, as a
    // relocatable object would; -ptx stops before ptxas, which runs once on
    // the linked module.
    std::vector<StringRef> Args = {Nvcc, "-ptx", "-rdc=true", Arch};
    for (const std::string &F : Opts.NvccFlags)
      Args.push_back(F);
    Args.insert(Args.end(), {"-o", Out, Src});
    std::optional<StringRef> Redirects[] = {std::nullopt, StringRef(Log), StringRef(Log)};
    if (Opts.Verbose) {
      errs() << "oxide-link: ";
      for (StringRef A : Args)
        errs() << A << " ";
      errs() << "\n";
    }
    int RC = sys::ExecuteAndWait(Nvcc, Args, std::nullopt, Redirects);
    auto LogText = MemoryBuffer::getFile(Log);
    std::string Messages = LogText ? (*LogText)->getBuffer().str() : "";
    auto Ptx = MemoryBuffer::getFile(Out);
    sys::fs::remove(Out);
    sys::fs::remove(Log);
    if (RC != 0 || !Ptx)
      return makeError("nvcc could not compile the device source " + Src + " for " + Opts.Arch +
                       ":\n" + Messages);
    DeviceSourceUnit U;
    U.Source = Src;
    U.Ptx = (*Ptx)->getBuffer().str();
    U.Functions = ptxFunctions(U.Ptx, /*Definitions=*/true);
    Units.push_back(std::move(U));
  }
  return Units;
}

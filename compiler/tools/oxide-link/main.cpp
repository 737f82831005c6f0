//===- oxide-link - rustc's linker, with a device link in front -----------===//
//
// cargo oxide sets `-C linker=oxide-link -C save-temps`. rustc then calls this
// program exactly as it would call `cc`. If the link contains no kernel
// entries (build scripts, proc macros, plain binaries) the arguments go to the
// system linker unchanged. Otherwise the kernels are compiled to PTX
// (DeviceLinker.h), an object with the image and the kernel table is added to
// the link, and the kernel table's host addresses are patched afterwards.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

using namespace llvm;
using namespace oxide;

namespace {

/// rustc passes `@file` when the command line is long: one argument per line,
/// with `\` escaping as gcc expects.
std::vector<std::string> expandResponseFiles(const std::vector<std::string> &Args) {
  std::vector<std::string> Out;
  for (const std::string &A : Args) {
    if (A.size() < 2 || A[0] != '@') {
      Out.push_back(A);
      continue;
    }
    auto Buf = MemoryBuffer::getFile(A.substr(1));
    if (!Buf) {
      Out.push_back(A);
      continue;
    }
    SmallVector<StringRef> Lines;
    (*Buf)->getBuffer().split(Lines, '\n', -1, false);
    for (StringRef L : Lines) {
      std::string Arg;
      for (size_t I = 0; I < L.size(); ++I)
        Arg += (L[I] == '\\' && I + 1 < L.size()) ? L[++I] : L[I];
      Out.push_back(Arg);
    }
  }
  return Out;
}

int runSystemLinker(const std::vector<std::string> &Args) {
  const char *Env = getenv("OXIDE_SYSTEM_LINKER");
  std::string Linker = Env && *Env ? Env : "cc";
  auto Path = sys::findProgramByName(Linker);
  if (!Path) {
    errs() << "error: oxide-link: the system linker `" << Linker << "` was not found\n"
           << "  = help: install a C toolchain (apt-get install gcc) or set OXIDE_SYSTEM_LINKER\n";
    return 1;
  }
  std::vector<StringRef> Argv{*Path};
  for (const std::string &A : Args)
    Argv.push_back(A);
  std::string ErrMsg;
  int RC = sys::ExecuteAndWait(*Path, Argv, std::nullopt, {}, 0, 0, &ErrMsg);
  if (RC < 0)
    errs() << "error: oxide-link: running " << *Path << " failed: " << ErrMsg << "\n";
  return RC;
}

/// LLVM reports some failures (an instruction the backend cannot select) by
/// aborting; turn that into a compile error instead of a crash with a stack dump.
void reportInternalError(void *, const char *Reason, bool) {
  errs() << "error: internal error in oxide's device compiler: " << Reason << "\n"
         << "   = note: this is a bug in oxide; `cargo oxide pipeline` writes every stage for a report\n";
  sys::Process::Exit(1);
}

/// `strip = true` makes rustc pass --strip-all, which would drop the local
/// symbols the kernel table is patched from. Takes those flags out of the
/// link and reports whether there were any; the output is stripped after the
/// patch instead (the slots hold offsets, so they survive stripping).
bool takeStripAll(std::vector<std::string> &Args) {
  size_t Before = Args.size();
  llvm::erase_if(Args, [](const std::string &A) {
    return A == "-s" || A == "-Wl,--strip-all" || A == "-Wl,-s" || A == "--strip-all";
  });
  return Args.size() != Before;
}

/// OXIDE_LLVM_ARGS: LLVM's own options for the device pipeline
/// (`-print-after=lower-panics`, `-print-after-all`, `-verify-each`,
/// `-time-passes`; docs/ABI.md §4). rustc owns this program's command line, so
/// they come through the environment. With OXIDE_DUMP_DIR (`cargo oxide
/// pipeline`) what they print goes to files there, since rustc shows a
/// successful linker's output to nobody: the IR to `passes/`, the timings to
/// `time-passes.txt`, unless the options name other places.
bool parseLLVMArgs(const LinkerOptions &Opts) {
  const char *Argv[] = {"oxide-link (OXIDE_LLVM_ARGS)"};
  if (!cl::ParseCommandLineOptions(1, Argv, "", &errs(), /*VFS=*/nullptr, "OXIDE_LLVM_ARGS"))
    return false;
  if (Opts.DumpDir.empty())
    return true;
  auto &Options = cl::getRegisteredOptions();
  auto SetUnlessGiven = [&](StringRef Name, StringRef File) {
    cl::Option *O = Options.lookup(Name);
    if (!O || O->getNumOccurrences() > 0)
      return;
    SmallString<256> Path(Opts.DumpDir);
    sys::path::append(Path, File);
    O->addOccurrence(0, Name, Path);
  };
  SetUnlessGiven("ir-dump-directory", "passes");
  SetUnlessGiven("info-output-file", "time-passes.txt");
  return true;
}

/// Strips all symbols from the linked file, as the link would have.
int stripAll(const std::string &File) {
  for (const char *Tool : {"strip", "llvm-strip-22", "llvm-strip"}) {
    if (auto Path = sys::findProgramByName(Tool)) {
      StringRef Argv[] = {*Path, "--strip-all", File};
      return sys::ExecuteAndWait(*Path, Argv);
    }
  }
  errs() << "error: oxide-link: the link asked for --strip-all, but neither strip nor llvm-strip "
            "was found to strip the output after patching the kernel table\n";
  return 1;
}

/// Where compiled parts are kept between links (PartCache.cpp): cargo links
/// into `<target>/<profile>/deps/`, and the cache goes beside that,
/// `<target>/<profile>/oxide-cache`, so `cargo clean` removes it. OXIDE_CACHE=0
/// turns it off; OXIDE_CACHE_DIR names another place.
std::string partCacheDir(const std::string &Output, const LinkerOptions &Opts) {
  if (const char *C = getenv("OXIDE_CACHE"); C && StringRef(C) == "0")
    return "";
  if (!Opts.CacheDir.empty())
    return Opts.CacheDir;
  SmallString<256> Dir(sys::path::parent_path(Output));
  if (sys::path::filename(Dir) == "deps")
    sys::path::remove_filename(Dir);
  if (Dir.empty())
    return "";
  sys::path::append(Dir, "oxide-cache");
  return std::string(Dir);
}

/// The cache's bound: OXIDE_CACHE_LIMIT_MB, else 512 MiB.
uint64_t partCacheLimit() {
  uint64_t MB = 512;
  if (const char *L = getenv("OXIDE_CACHE_LIMIT_MB"); L && *L)
    StringRef(L).getAsInteger(10, MB);
  return MB << 20;
}

int fail(const Twine &Msg) {
  errs() << "error: " << Msg << "\n";
  return 1;
}

/// OXIDE_LINK_LOG=FILE (cargo oxide sets it): what a link that succeeds
/// prints, its warnings and, with OXIDE_VERBOSE, its report, is also
/// appended to FILE, which cargo-oxide shows as the build goes. rustc shows
/// a linker's output only when the link fails (or with its linker-messages
/// lint, a flag that would rebuild every crate); a failed link's output is
/// left to rustc alone, so it is not shown twice. Until the process exits,
/// fd 2 (this program's and its tools': ptxas, nvlink, the system linker)
/// is a temporary file; at exit its contents go to the real stderr, for
/// rustc, and to FILE in one appending write, so that links running at once
/// do not interleave.
struct StderrCopy {
  int RealStderr = -1;
  std::string Temp, Log;
  bool Succeeded = false; // main returned 0
};
StderrCopy Copy;

void copyStderrAtExit() {
  if (Copy.Temp.empty())
    return;
  errs().flush();
  if (auto Buf = MemoryBuffer::getFile(Copy.Temp, /*IsText=*/false,
                                       /*RequiresNullTerminator=*/false)) {
    StringRef Text = (*Buf)->getBuffer();
    int LogFD = Copy.Succeeded && !Text.empty()
                    ? ::open(Copy.Log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644)
                    : -1;
    for (int FD : {Copy.RealStderr, LogFD}) {
      if (FD < 0)
        continue;
      for (StringRef Rest = Text; !Rest.empty();) {
        ssize_t N = ::write(FD, Rest.data(), Rest.size());
        if (N <= 0)
          break;
        Rest = Rest.drop_front(N);
      }
      if (FD != Copy.RealStderr)
        ::close(FD);
    }
  }
  sys::fs::remove(Copy.Temp);
  Copy.Temp.clear();
}

void copyStderrTo(const char *Log) {
  SmallString<128> Temp;
  int TempFD;
  if (sys::fs::createTemporaryFile("oxide-link-stderr", "txt", TempFD, Temp))
    return;
  errs().flush();
  Copy.RealStderr = ::dup(2);
  if (Copy.RealStderr < 0 || ::dup2(TempFD, 2) < 0) {
    ::close(TempFD);
    sys::fs::remove(Temp);
    return;
  }
  ::close(TempFD);
  Copy.Temp = std::string(Temp);
  Copy.Log = Log;
  std::atexit(copyStderrAtExit);
  // A crash's stack trace (InitLLVM's handler, which runs first) is not lost.
  sys::AddSignalHandler([](void *) { copyStderrAtExit(); }, nullptr);
}

} // namespace

int linkMain(int argc, char **argv) {
  InitLLVM X(argc, argv);
  install_fatal_error_handler(reportInternalError);
  if (const char *Log = getenv("OXIDE_LINK_LOG"); Log && *Log)
    copyStderrTo(Log);
  std::vector<std::string> Args(argv + 1, argv + argc);
  LinkerOptions Opts = LinkerOptions::fromEnvironment();

  std::vector<std::string> Expanded = expandResponseFiles(Args);
  // The system linker must not see them, kernels or not; a response file
  // that held one is replaced by the expanded line.
  size_t Before = Expanded.size();
  takeDeviceSourceArgs(Expanded, Opts);
  if (Expanded.size() != Before)
    Args = Expanded;
  auto Started = std::chrono::steady_clock::now();
  // With OXIDE_VERBOSE, the seconds since the previous mark (Compile.cpp
  // times the stages in between).
  auto Mark = [&, Last = Started](const char *Stage) mutable {
    auto Now = std::chrono::steady_clock::now();
    if (Opts.Verbose)
      errs() << format("oxide-link: %-28s %7.3f s\n", (std::string(Stage) + ":").c_str(),
                       std::chrono::duration<double>(Now - Last).count());
    Last = Now;
  };
  std::vector<std::string> Bitcode = gatherBitcode(Expanded, Opts.Verbose);
  if (!mentionsKernelEntries(Bitcode))
    return runSystemLinker(Args);

  if (!parseLLVMArgs(Opts))
    return fail("oxide-link: OXIDE_LLVM_ARGS has options this LLVM does not know (see above)");

  Opts.Libraries = libraryArchives(Expanded);
  std::string Output = linkOutput(Expanded);
  std::string Module = crateNameOfOutput(Output);
  Opts.CacheDir = partCacheDir(Output, Opts);
  if (Opts.Verbose)
    errs() << "oxide-link: device link of `" << Module << "` for " << Opts.Arch << " ("
           << Bitcode.size() << " codegen units)\n";

  Mark("gather bitcode");
  DiagnosticSink Diags;
  Expected<DeviceImage> Image = compileDeviceImage(Bitcode, Module, Opts, Diags);
  if (!Image) {
    std::string Msg = toString(Image.takeError());
    if (Diags.hasErrors()) {
      Diags.print(errs());
      if (!Opts.DiagnosticsJson.empty()) {
        std::error_code EC;
        raw_fd_ostream Json(Opts.DiagnosticsJson, EC, sys::fs::OF_Append);
        if (!EC)
          Diags.printJson(Json);
      }
      return 1;
    }
    return fail("oxide-link: " + Msg);
  }
  // The CUDA C++ functions kernels call need host definitions (HostStubs.cpp).
  SmallString<128> StubObj;
  if (!Image->DeviceSourceCalls.empty()) {
    if (sys::fs::createTemporaryFile("oxide-host-stubs", "o", StubObj))
      return fail("oxide-link: cannot create a temporary file");
    if (Error E = writeHostStubObject(Image->DeviceSourceCalls, std::string(StubObj)))
      return fail("oxide-link: " + toString(std::move(E)));
    Args.push_back(std::string(StubObj));
  }
  scope_exit RemoveStubs([&] {
    if (!StubObj.empty())
      sys::fs::remove(StubObj);
  });
  // A check links the host program without its kernels: it is not meant to
  // run (`cargo oxide check` builds into a target directory of its own).
  if (Image->Kernels.empty() || Opts.CheckOnly)
    return runSystemLinker(Args);
  if (Error E = assemblePtx(*Image, Opts, Diags)) {
    // An error in the user's inline PTX is a compile error at their line.
    if (Diags.hasErrors()) {
      consumeError(std::move(E));
      Diags.print(errs());
      if (!Opts.DiagnosticsJson.empty()) {
        std::error_code EC;
        raw_fd_ostream Json(Opts.DiagnosticsJson, EC, sys::fs::OF_Append);
        if (!EC)
          Diags.printJson(Json);
      }
      return 1;
    }
    return fail("oxide-link: " + toString(std::move(E)) +
                (Image->Units.empty()
                     ? "\n  = note: this is a bug in oxide; please report it with `cargo oxide "
                       "pipeline`"
                     : "\n  = note: the PTX holds CUDA C++ device code compiled by nvcc; "
                       "`cargo oxide pipeline` writes both parts"));
  }

  Mark("compile and assemble");
  SmallString<128> TableObj;
  if (sys::fs::createTemporaryFile("oxide-kernels", "o", TableObj))
    return fail("oxide-link: cannot create a temporary file");
  if (Error E = writeKernelTableObject(*Image, std::string(TableObj)))
    return fail("oxide-link: " + toString(std::move(E)));

  std::vector<std::string> LinkArgs = Args;
  bool StripAfterPatch = takeStripAll(LinkArgs);
  LinkArgs.push_back(std::string(TableObj));
  Mark("kernel table");
  int RC = runSystemLinker(LinkArgs);
  sys::fs::remove(TableObj);
  if (RC != 0)
    return RC;
  Mark("system linker");
  if (Error E = patchHostAddresses(*Image, Output, Opts.Verbose))
    return fail("oxide-link: " + toString(std::move(E)));
  if (StripAfterPatch && stripAll(Output) != 0)
    return 1;
  PartCache(Opts.CacheDir).prune(partCacheLimit());
  Mark("patch, strip, prune");
  if (Opts.Verbose)
    errs() << "oxide-link: embedded " << Image->Kernels.size() << " kernel(s), "
           << Image->Ptx.size() << " bytes of PTX\n";
  return 0;
}

int main(int argc, char **argv) {
  int RC = linkMain(argc, argv);
  Copy.Succeeded = RC == 0;
  return RC;
}

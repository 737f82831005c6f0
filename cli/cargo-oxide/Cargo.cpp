//===- Cargo.cpp - running cargo with the oxide environment ---------------===//
//
// Part of oxide. See Cargo.h.
//
//===----------------------------------------------------------------------===//

#include "Cargo.h"
#include "Options.h"

#include "oxide/Targets.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>
#include <cctype>
#include <sys/ioctl.h>
#include <unistd.h>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

namespace oxide::cli {

namespace {

std::vector<std::string> splitRustFlags(std::string_view Flags, char Separator,
                                        bool AnyWhitespace) {
  std::vector<std::string> Tokens;
  std::string Current;
  for (char C : Flags) {
    bool Split = AnyWhitespace
                     ? (C == ' ' || C == '\t' || C == '\n' || C == '\r')
                     : C == Separator;
    if (Split) {
      if (!Current.empty() || !AnyWhitespace)
        Tokens.push_back(Current);
      Current.clear();
    } else {
      Current += C;
    }
  }
  if (!Current.empty() || (!AnyWhitespace && !Flags.empty()))
    Tokens.push_back(Current);
  return Tokens;
}

/// Whether codegen option \p Value ("linker=…", "save-temps") is already in
/// \p Tokens, as `-C value` or `-Cvalue` or `--codegen value`.
bool hasCodegenOption(const std::vector<std::string> &Tokens,
                      const std::string &Value) {
  for (size_t I = 0; I < Tokens.size(); ++I) {
    if (Tokens[I] == "-C" + Value || Tokens[I] == "--codegen=" + Value)
      return true;
    if ((Tokens[I] == "-C" || Tokens[I] == "--codegen") &&
        I + 1 < Tokens.size() && Tokens[I + 1] == Value)
      return true;
  }
  return false;
}

/// The flags of \p Flags (pairs `-C x`) that \p Tokens lacks.
std::vector<std::string> missingFlags(const std::vector<std::string> &Tokens,
                                      const std::vector<std::string> &Flags) {
  std::vector<std::string> Missing;
  for (size_t I = 0; I < Flags.size(); ++I) {
    if (Flags[I] == "-C" && I + 1 < Flags.size()) {
      if (!hasCodegenOption(Tokens, Flags[I + 1])) {
        Missing.push_back(Flags[I]);
        Missing.push_back(Flags[I + 1]);
      }
      ++I;
      continue;
    }
    Missing.push_back(Flags[I]);
  }
  return Missing;
}

bool hasWhitespace(std::string_view S) {
  return S.find_first_of(" \t\n\r") != std::string_view::npos;
}

} // namespace

Expected<ArchChoice> resolveArch(const ArchInputs &In, const Environment &Env) {
  auto Named = [](const std::string &Arch, ArchSource Source,
                  std::string Origin) -> Expected<ArchChoice> {
    if (!isValidArch(Arch))
      return unknownArchError(Arch, Origin);
    return ArchChoice{Arch, Source, std::move(Origin)};
  };
  if (In.Flag)
    return Named(*In.Flag, ArchSource::Flag, "--arch");
  if (In.PackageArch)
    return Named(*In.PackageArch, ArchSource::Package,
                 "[package.metadata.oxide] arch in " + In.ManifestPath.string());
  if (auto FromEnv = Env.getNonEmpty("OXIDE_ARCH"))
    return Named(*FromEnv, ArchSource::Environment, "OXIDE_ARCH");
  if (In.DetectGpu)
    if (std::optional<ComputeCapability> CC = In.DetectGpu())
      // A GPU the table has no target for (older than the oldest, or newer
      // than this oxide) falls through to the default.
      if (const oxide::GpuTarget *T =
              oxide::targetForComputeCapability(CC->Major, CC->Minor))
        return ArchChoice{std::string(T->Name), ArchSource::Gpu,
                          "the GPU found (compute capability " +
                              std::to_string(CC->Major) + "." +
                              std::to_string(CC->Minor) + ")"};
  return ArchChoice{std::string(oxide::DefaultTargetName), ArchSource::Default,
                    "the default"};
}

fs::path expectedDeviceLinker(const Environment &Env,
                              const std::optional<fs::path> &SelfExe) {
  if (auto Override = Env.getNonEmpty("OXIDE_LINK"))
    return fs::absolute(*Override).lexically_normal();
  if (SelfExe)
    return SelfExe->parent_path() / "oxide-link";
  return {};
}

Expected<fs::path> locateDeviceLinker(const Environment &Env,
                                      const std::optional<fs::path> &SelfExe) {
  fs::path Linker = expectedDeviceLinker(Env, SelfExe);
  bool FromEnv = Env.getNonEmpty("OXIDE_LINK").has_value();
  if (Linker.empty())
    return Error{"cannot tell where the device linker oxide-link is",
                 "set OXIDE_LINK=/path/to/oxide-link"};
  if (!isExecutableFile(Linker))
    return Error{"device linker not found: " + Linker.string() +
                     (FromEnv ? " (from OXIDE_LINK)" : ""),
                 FromEnv ? "point OXIDE_LINK at an executable oxide-link, or "
                           "unset it to use the one next to cargo-oxide"
                         : "build oxide's C++ part (cmake --build <build-dir>) "
                           "so oxide-link sits next to cargo-oxide, or set "
                           "OXIDE_LINK=/path/to/oxide-link"};
  return Linker;
}

std::vector<std::string> oxideRustFlags(const fs::path &Linker) {
  return {"-C", "linker=" + Linker.string(), "-C", "save-temps"};
}

std::string appendRustFlags(std::string_view Existing,
                            const std::vector<std::string> &Flags) {
  std::vector<std::string> Tokens = splitRustFlags(Existing, ' ', true);
  std::string Result(Existing);
  // Drop trailing whitespace so the join below leaves one space.
  while (!Result.empty() && hasWhitespace(std::string_view(&Result.back(), 1)))
    Result.pop_back();
  for (const std::string &Flag : missingFlags(Tokens, Flags)) {
    if (!Result.empty())
      Result += ' ';
    Result += Flag;
  }
  return Result;
}

std::string appendEncodedRustFlags(std::string_view Existing,
                                   const std::vector<std::string> &Flags) {
  std::vector<std::string> Tokens = splitRustFlags(Existing, '\x1f', false);
  std::string Result(Existing);
  for (const std::string &Flag : missingFlags(Tokens, Flags)) {
    if (!Result.empty())
      Result += '\x1f';
    Result += Flag;
  }
  return Result;
}

std::string targetRustFlagsVariable(std::string_view Triple) {
  std::string Name = "CARGO_TARGET_";
  for (char C : Triple)
    Name += std::isalnum(static_cast<unsigned char>(C))
                ? static_cast<char>(std::toupper(static_cast<unsigned char>(C)))
                : '_';
  return Name + "_RUSTFLAGS";
}

bool configSetsTargetRustFlags(std::string_view Text) {
  std::string Table;
  size_t Pos = 0;
  while (Pos < Text.size()) {
    size_t End = Text.find('\n', Pos);
    if (End == std::string_view::npos)
      End = Text.size();
    std::string_view Line = Text.substr(Pos, End - Pos);
    Pos = End + 1;
    size_t First = Line.find_first_not_of(" \t");
    if (First == std::string_view::npos || Line[First] == '#')
      continue;
    Line.remove_prefix(First);
    if (Line.starts_with("[")) {
      size_t Close = Line.find(']');
      Table = std::string(Line.substr(Line.starts_with("[[") ? 2 : 1,
                                      Close == std::string_view::npos
                                          ? std::string_view::npos
                                          : Close - 1));
      continue;
    }
    size_t Equals = Line.find('=');
    if (Equals == std::string_view::npos)
      continue;
    std::string Key = Table.empty() ? "" : Table + ".";
    for (char C : Line.substr(0, Equals))
      if (C != ' ' && C != '\t')
        Key += C;
    if (Key.starts_with("target.") && Key.ends_with(".rustflags"))
      return true;
  }
  return false;
}

std::vector<fs::path> cargoConfigFiles(const fs::path &Cwd,
                                       const Environment &Env) {
  std::vector<fs::path> Files;
  std::error_code EC;
  auto Add = [&](const fs::path &Dir) {
    for (const char *Name : {"config.toml", "config"})
      if (fs::is_regular_file(Dir / Name, EC)) {
        Files.push_back(Dir / Name);
        return; // cargo reads config.toml when both are there
      }
  };
  for (fs::path Dir = Cwd;; Dir = Dir.parent_path()) {
    Add(Dir / ".cargo");
    if (Dir == Dir.parent_path() || Dir.empty())
      break;
  }
  if (auto Home = Env.getNonEmpty("CARGO_HOME"))
    Add(*Home);
  else if (auto User = Env.getNonEmpty("HOME"))
    Add(fs::path(*User) / ".cargo");
  return Files;
}

std::string chooseRustFlagsVariable(
    const Environment &Env, const fs::path &Cwd,
    const std::function<std::optional<std::string>()> &HostTriple) {
  bool TargetFlags = false;
  for (const std::string &Var : Env.toStrings()) {
    std::string_view Name = std::string_view(Var).substr(0, Var.find('='));
    TargetFlags |= Name.starts_with("CARGO_TARGET_") &&
                   Name.ends_with("_RUSTFLAGS");
  }
  for (const fs::path &File : cargoConfigFiles(Cwd, Env)) {
    std::ifstream In(File, std::ios::binary);
    std::ostringstream Text;
    Text << In.rdbuf();
    TargetFlags |= configSetsTargetRustFlags(Text.str());
  }
  if (TargetFlags)
    if (std::optional<std::string> Triple = HostTriple())
      return targetRustFlagsVariable(*Triple);
  return "CARGO_BUILD_RUSTFLAGS";
}

void applyOxideEnvironment(Environment &Env, const OxideBuildConfig &Config) {
  std::vector<std::string> Flags = oxideRustFlags(Config.Linker);

  // cargo reads CARGO_ENCODED_RUSTFLAGS when it is set (even empty), else
  // RUSTFLAGS, and ignores its configuration's rustflags then: extend the
  // one it will read. Otherwise our flags join the configuration's through
  // the variable form of its key (Cargo.h), so the user's stay.
  if (auto Encoded = Env.get("CARGO_ENCODED_RUSTFLAGS")) {
    Env.set("CARGO_ENCODED_RUSTFLAGS", appendEncodedRustFlags(*Encoded, Flags));
  } else if (hasWhitespace(Config.Linker.string())) {
    // RUSTFLAGS and the configuration's variables split at spaces and cannot
    // carry this path; move everything over to the encoded form, which can.
    std::string Existing = Env.get("RUSTFLAGS").value_or("");
    std::string Converted;
    for (const std::string &Token : splitRustFlags(Existing, ' ', true))
      Converted += (Converted.empty() ? "" : "\x1f") + Token;
    Env.set("CARGO_ENCODED_RUSTFLAGS",
            appendEncodedRustFlags(Converted, Flags));
    Env.unset("RUSTFLAGS");
  } else if (Env.get("RUSTFLAGS")) {
    Env.set("RUSTFLAGS",
            appendRustFlags(Env.get("RUSTFLAGS").value_or(""), Flags));
  } else {
    std::string Var = Config.RustFlagsVariable.empty()
                          ? std::string("CARGO_BUILD_RUSTFLAGS")
                          : Config.RustFlagsVariable;
    Env.set(Var, appendRustFlags(Env.get(Var).value_or(""), Flags));
  }

  Env.set("CARGO_INCREMENTAL", "0");
  Env.set("OXIDE_ARCH", Config.Arch);
  if (Config.DumpDir)
    Env.set("OXIDE_DUMP_DIR", Config.DumpDir->string());
  else
    Env.unset("OXIDE_DUMP_DIR"); // a stale one from the shell would scatter
                                 // dumps of unrelated links
  if (Config.Verbose)
    Env.set("OXIDE_VERBOSE", "1");
  if (!Config.DeviceDebug.empty())
    Env.set("OXIDE_DEVICE_DEBUG", Config.DeviceDebug);
  else
    Env.unset("OXIDE_DEVICE_DEBUG");
}

const std::vector<std::string> &oxideEnvironmentNames() {
  static const std::vector<std::string> Names = {
      "RUSTFLAGS",  "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS",
      "CARGO_TARGET_DIR", "CARGO_INCREMENTAL",
      "OXIDE_ARCH", "OXIDE_DUMP_DIR",          "OXIDE_VERBOSE",
      "OXIDE_DEVICE_DEBUG", "OXIDE_LLVM_ARGS", "CARGO_PROFILE_RELEASE_DEBUG"};
  return Names;
}

std::string cargoProgram(const Environment &Env) {
  return Env.getNonEmpty("CARGO").value_or("cargo");
}

const std::vector<std::string> &emulatorProfileArgs() {
  // Without a GPU every kernel instruction goes through the PTX virtual
  // machine (and the emulator around it): a debug build of those two crates
  // runs kernels tens of times slower. `cargo oxide new` writes the same
  // settings into the manifest; these reach every project, however it was
  // made. The kernels and the user's host code keep their profile.
  static const std::vector<std::string> Args = {
      "--config", "profile.dev.package.ptx-vm.opt-level=3",
      "--config", "profile.dev.package.cuda-emulator.opt-level=2"};
  return Args;
}

namespace {

/// The device linker's output of links that succeed (its warnings; with
/// --verbose, its report too) as the build goes: rustc shows a linker's
/// output only when the link fails, so oxide-link also appends it to the
/// file OXIDE_LINK_LOG names (its main.cpp), and this prints what each
/// link added, until finish() prints the rest.
class LinkReportFollower {
public:
  LinkReportFollower() {
    std::string Pattern =
        (std::filesystem::temp_directory_path() / "oxide-link-report-XXXXXX").string();
    int FD = mkstemp(Pattern.data());
    if (FD < 0)
      return;
    close(FD);
    Path = Pattern;
    Follower = std::thread([this] {
      while (!Done.load()) {
        printNew();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  ~LinkReportFollower() { finish(); }

  /// The file to set OXIDE_LINK_LOG to; empty where none could be made.
  const std::string &path() const { return Path; }

  void finish() {
    if (Path.empty())
      return;
    Done = true;
    if (Follower.joinable())
      Follower.join();
    printNew();
    std::lock_guard<std::mutex> Lock(Printing);
    std::error_code EC;
    std::filesystem::remove(Path, EC);
    Path.clear();
  }

  /// Prints what links added since the last call (from the follower and
  /// from whoever prints cargo's own output, so that a link's lines come
  /// before cargo's that follow the link).
  void printNew() {
    std::lock_guard<std::mutex> Lock(Printing);
    if (Path.empty())
      return;
    std::ifstream In(Path, std::ios::binary);
    In.seekg(static_cast<std::streamoff>(Shown));
    std::string Text((std::istreambuf_iterator<char>(In)), std::istreambuf_iterator<char>());
    if (Text.empty())
      return;
    Shown += Text.size();
    std::cerr << Text << std::flush;
  }

private:
  std::string Path;
  size_t Shown = 0;
  std::mutex Printing;
  std::atomic<bool> Done{false};
  std::thread Follower;
};

} // namespace

ProcessResult CargoRunner::run(const std::vector<std::string> &Args) const {
  std::vector<std::string> Argv = {cargoProgram(Env)};
  Argv.insert(Argv.end(), Args.begin(), Args.end());
  // After the subcommand (cargo takes --config there too), before any `--`
  // that starts the program's own arguments.
  if (Args.size() >= 1 && !Args[0].starts_with("-")) {
    const std::vector<std::string> &Profile = emulatorProfileArgs();
    Argv.insert(Argv.begin() + 2, Profile.begin(), Profile.end());
  }
  if (Verbose) {
    std::string Line;
    for (const std::string &Name : oxideEnvironmentNames()) {
      if (auto Value = Env.get(Name)) {
        std::string Shown = *Value;
        for (char &C : Shown)
          if (C == '\x1f')
            C = ' '; // readable; the real value keeps the separators
        Line += Name + "=" + shellQuote(Shown) + " ";
      }
    }
    for (const std::string &Var : Env.toStrings()) {
      std::string_view Name = std::string_view(Var).substr(0, Var.find('='));
      if (Name.starts_with("CARGO_TARGET_") && Name.ends_with("_RUSTFLAGS"))
        Line += std::string(Name) + "=" +
                shellQuote(Var.substr(Name.size() + 1)) + " ";
    }
    printStatus("Running", Line + formatCommandLine(Argv));
  }
  LinkReportFollower Report;
  Environment WithReport = Env;
  if (!Report.path().empty())
    WithReport.set("OXIDE_LINK_LOG", Report.path());
  RunOptions Options;
  Options.Env = &WithReport;
  // Only commands that build and run nothing: a program's or a test's own
  // stderr is left connected as it was.
  bool Builds = !Args.empty() &&
                (Args[0] == "build" || Args[0] == "rustc" ||
                 (Args[0] == "test" &&
                  std::find(Args.begin(), Args.end(), "--no-run") != Args.end()));
  if (Verbose || !Builds)
    return runProcess(Argv, Options);

  // cargo sees a pipe now: keep what it would show on the terminal.
  Environment Piped = WithReport;
  if (isatty(STDERR_FILENO)) {
    if (!Piped.getNonEmpty("CARGO_TERM_COLOR"))
      Piped.set("CARGO_TERM_COLOR", "always");
    struct winsize Size {};
    if (!Piped.getNonEmpty("CARGO_TERM_PROGRESS_WHEN") &&
        ioctl(STDERR_FILENO, TIOCGWINSZ, &Size) == 0 && Size.ws_col > 0) {
      Piped.set("CARGO_TERM_PROGRESS_WHEN", "always");
      Piped.set("CARGO_TERM_PROGRESS_WIDTH", std::to_string(Size.ws_col));
    }
  }
  Options.Env = &Piped;
  LinkFailureFilter Filter;
  auto Print = [](const std::string &Text) {
    if (!Text.empty()) {
      std::cerr << Text;
      std::cerr.flush();
    }
  };
  Options.StderrSink = [&](std::string_view Chunk) {
    Report.printNew();
    Print(Filter.feed(Chunk));
  };
  ProcessResult Result = runProcess(Argv, Options);
  Print(Filter.finish());
  if (Filter.rewrote())
    std::cerr << "note: --verbose shows the device linker's command line\n";
  return Result;
}

std::string stripAnsi(std::string_view Text) {
  std::string Out;
  for (size_t I = 0; I < Text.size(); ++I) {
    if (Text[I] == '\x1b' && I + 1 < Text.size() && Text[I + 1] == '[') {
      I += 2;
      while (I < Text.size() && !(Text[I] >= '@' && Text[I] <= '~'))
        ++I;
      continue;
    }
    Out += Text[I];
  }
  return Out;
}

std::string LinkFailureFilter::feed(std::string_view Chunk) {
  Pending += Chunk;
  std::string Out;
  size_t End;
  while ((End = Pending.find('\n')) != std::string::npos) {
    Out += line(std::string_view(Pending).substr(0, End));
    Pending.erase(0, End + 1);
  }
  // cargo's progress bar redraws one line with '\r' and never ends it.
  if (Now == State::PassThrough && Pending.find('\r') != std::string::npos) {
    Out += Pending;
    Pending.clear();
  }
  return Out;
}

std::string LinkFailureFilter::finish() {
  std::string Out;
  if (!Pending.empty())
    Out = Now == State::PassThrough ? Pending : line(Pending);
  Pending.clear();
  return Out;
}

std::string LinkFailureFilter::line(std::string_view Line) {
  // rustc indents the linker's output under "  = note: " by this much.
  constexpr size_t NoteIndent = std::string_view("  = note: ").size();
  std::string Plain = stripAnsi(Line);
  auto StartsWith = [&](std::string_view Prefix) {
    return std::string_view(Plain).substr(0, Prefix.size()) == Prefix;
  };
  switch (Now) {
  case State::PassThrough:
    if (StartsWith("error: linking with `") &&
        Plain.find("oxide-link` failed") != std::string::npos) {
      Now = State::Header;
      Rewrote = true;
      return "";
    }
    return std::string(Line) + "\n";
  case State::Header:
    if (Plain == "  |")
      return "";
    if (StartsWith("  = note: ")) {
      std::string Rest = Plain.substr(NoteIndent);
      // The command line (quoted words after one more space), and rustc's
      // remark that it shortened it.
      if (Rest.substr(0, 2) == " \"" ||
          Rest.substr(0, 26) == "some arguments are omitted")
        return "";
      Now = State::Body;
      return Rest + "\n";
    }
    Now = State::PassThrough;
    return std::string(Line) + "\n";
  case State::Body:
    if (Plain.empty()) {
      Now = State::PassThrough; // the blank line that ends rustc's error
      return "";
    }
    if (Plain.size() >= NoteIndent &&
        Plain.find_first_not_of(' ') >= NoteIndent)
      return Plain.substr(NoteIndent) + "\n";
    if (StartsWith("  = note: "))
      return Plain.substr(NoteIndent) + "\n";
    Now = State::PassThrough;
    return std::string(Line) + "\n";
  }
  return std::string(Line) + "\n";
}

Error cargoFailure(std::string_view Step, const ProcessResult &Result) {
  if (!Result.Started)
    return Error{"cannot run cargo: " + Result.StartError,
                 "install Rust with rustup (https://rustup.rs) and make sure "
                 "`cargo` is on PATH; `cargo oxide doctor` checks the setup"};
  return Error{std::string(Step) + " failed (" + Result.describe() + ")",
               "fix the errors above; `--verbose` shows the commands and what "
               "the device linker did"};
}

std::string linkStamp(const OxideBuildConfig &Config) {
  std::ostringstream Out;
  Out << "arch=" << Config.Arch << "\n";
  Out << "toolchain=" << Config.Toolchain << "\n";
  Out << "linker=" << Config.Linker.string() << "\n";
  if (!Config.DeviceDebug.empty()) // absent: stamps of older builds stay valid
    Out << "device-debug=" << Config.DeviceDebug << "\n";
  std::error_code EC;
  auto MTime = fs::last_write_time(Config.Linker, EC);
  Out << "linker-mtime="
      << (EC ? 0 : static_cast<long long>(MTime.time_since_epoch().count()))
      << "\n";
  auto Size = fs::file_size(Config.Linker, EC);
  Out << "linker-size=" << (EC ? 0 : static_cast<unsigned long long>(Size))
      << "\n";
  return Out.str();
}

std::string toolchainOf(const Environment &Env) {
  if (auto Toolchain = Env.getNonEmpty("RUSTUP_TOOLCHAIN"))
    return *Toolchain;
  return Env.getNonEmpty("RUSTC").value_or("");
}

fs::path linkStampPath(const fs::path &TargetDir, const std::string &Package,
                       std::string_view ProfileDir, std::string_view Toolchain) {
  std::string Name = Package + "-" + std::string(ProfileDir);
  if (!Toolchain.empty()) {
    // A file name, whatever the toolchain is called (it may be a path).
    Name += '@';
    for (char C : Toolchain)
      Name += (std::isalnum(static_cast<unsigned char>(C)) || C == '-' ||
               C == '_' || C == '.')
                  ? C
                  : '_';
  }
  return TargetDir / "oxide" / ".stamps" / Name;
}

bool linkStampMatches(const fs::path &Path, const std::string &Stamp) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    return false;
  std::ostringstream Buffer;
  Buffer << In.rdbuf();
  return Buffer.str() == Stamp;
}

void writeLinkStamp(const fs::path &Path, const std::string &Stamp) {
  std::error_code EC;
  fs::create_directories(Path.parent_path(), EC);
  std::ofstream Out(Path, std::ios::binary | std::ios::trunc);
  Out << Stamp;
}

} // namespace oxide::cli

//===- Process.cpp - environment and child processes ----------------------===//
//
// Part of oxide. See Process.h.
//
//===----------------------------------------------------------------------===//

#include "Process.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace oxide::cli {

//===----------------------------------------------------------------------===//
// Environment
//===----------------------------------------------------------------------===//

Environment Environment::current() {
  Environment Env;
  for (char **Entry = environ; Entry && *Entry; ++Entry) {
    std::string_view Pair(*Entry);
    size_t Eq = Pair.find('=');
    if (Eq == std::string_view::npos || Eq == 0)
      continue;
    Env.Vars.emplace(std::string(Pair.substr(0, Eq)),
                     std::string(Pair.substr(Eq + 1)));
  }
  return Env;
}

std::optional<std::string> Environment::get(std::string_view Name) const {
  auto It = Vars.find(Name);
  if (It == Vars.end())
    return std::nullopt;
  return It->second;
}

std::optional<std::string>
Environment::getNonEmpty(std::string_view Name) const {
  auto Value = get(Name);
  if (!Value || Value->empty())
    return std::nullopt;
  return Value;
}

bool Environment::contains(std::string_view Name) const {
  return Vars.find(Name) != Vars.end();
}

void Environment::set(std::string_view Name, std::string_view Value) {
  Vars.insert_or_assign(std::string(Name), std::string(Value));
}

void Environment::unset(std::string_view Name) {
  auto It = Vars.find(Name);
  if (It != Vars.end())
    Vars.erase(It);
}

std::vector<std::string> Environment::toStrings() const {
  std::vector<std::string> Result;
  Result.reserve(Vars.size());
  for (const auto &[Name, Value] : Vars)
    Result.push_back(Name + "=" + Value);
  return Result;
}

//===----------------------------------------------------------------------===//
// ProcessResult
//===----------------------------------------------------------------------===//

int ProcessResult::shellStatus() const {
  if (!Started)
    return 127;
  if (Signal != 0)
    return 128 + Signal;
  return ExitCode;
}

std::string signalName(int Signal) {
  // sigabbrev_np() would do, but only from glibc 2.32 on.
  static const std::pair<int, const char *> Names[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
      {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
      {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
      {SIGSEGV, "SIGSEGV"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},
      {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"}, {SIGSYS, "SIGSYS"}};
  for (const auto &[Number, Name] : Names)
    if (Number == Signal)
      return Name;
  return "signal " + std::to_string(Signal);
}

std::string ProcessResult::describe() const {
  if (!Started)
    return "could not be started: " + StartError;
  if (Signal != 0) {
    const char *Text = strsignal(Signal);
    return "killed by " + signalName(Signal) + " (signal " +
           std::to_string(Signal) +
           (Text ? std::string(", ") + Text : std::string()) + ")";
  }
  return "exit code " + std::to_string(ExitCode);
}

//===----------------------------------------------------------------------===//
// Running programs
//===----------------------------------------------------------------------===//

bool isExecutableFile(const fs::path &Path) {
  struct stat St;
  if (stat(Path.c_str(), &St) != 0 || !S_ISREG(St.st_mode))
    return false;
  return access(Path.c_str(), X_OK) == 0;
}

std::optional<fs::path> findProgram(std::string_view Name,
                                    const Environment &Env) {
  if (Name.empty())
    return std::nullopt;
  if (Name.find('/') != std::string_view::npos) {
    fs::path Path(Name);
    if (isExecutableFile(Path))
      return fs::absolute(Path);
    return std::nullopt;
  }
  std::string PathVar =
      Env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  size_t Start = 0;
  while (Start <= PathVar.size()) {
    size_t End = PathVar.find(':', Start);
    if (End == std::string::npos)
      End = PathVar.size();
    // An empty PATH entry means the current directory, as in execvp().
    std::string Dir = PathVar.substr(Start, End - Start);
    fs::path Candidate = (Dir.empty() ? fs::path(".") : fs::path(Dir)) / Name;
    if (isExecutableFile(Candidate))
      return fs::absolute(Candidate);
    Start = End + 1;
  }
  return std::nullopt;
}

std::optional<fs::path> currentExecutable() {
  std::error_code EC;
  fs::path Self = fs::read_symlink("/proc/self/exe", EC);
  if (EC)
    return std::nullopt;
  return Self;
}

namespace {

/// Restores SIGINT/SIGQUIT handling when the wait is over, however it ends.
class IgnoreInterruptsWhileWaiting {
public:
  IgnoreInterruptsWhileWaiting() {
    struct sigaction Ignore = {};
    Ignore.sa_handler = SIG_IGN;
    sigemptyset(&Ignore.sa_mask);
    sigaction(SIGINT, &Ignore, &OldInt);
    sigaction(SIGQUIT, &Ignore, &OldQuit);
  }
  ~IgnoreInterruptsWhileWaiting() {
    sigaction(SIGINT, &OldInt, nullptr);
    sigaction(SIGQUIT, &OldQuit, nullptr);
  }
  IgnoreInterruptsWhileWaiting(const IgnoreInterruptsWhileWaiting &) = delete;
  IgnoreInterruptsWhileWaiting &
  operator=(const IgnoreInterruptsWhileWaiting &) = delete;

private:
  struct sigaction OldInt = {};
  struct sigaction OldQuit = {};
};

void closeIfOpen(int &Fd) {
  if (Fd >= 0)
    close(Fd);
  Fd = -1;
}

} // namespace

ProcessResult runProcess(const std::vector<std::string> &Argv,
                         const RunOptions &Options) {
  ProcessResult Result;
  if (Argv.empty()) {
    Result.StartError = "empty command line";
    return Result;
  }

  // Everything the child needs is prepared before fork(), so the child only
  // calls async-signal-safe functions.
  std::vector<char *> ArgPtrs;
  for (const std::string &Arg : Argv)
    ArgPtrs.push_back(const_cast<char *>(Arg.c_str()));
  ArgPtrs.push_back(nullptr);

  std::vector<std::string> EnvStrings;
  std::vector<char *> EnvPtrs;
  char **ChildEnv = environ;
  if (Options.Env) {
    EnvStrings = Options.Env->toStrings();
    for (std::string &Entry : EnvStrings)
      EnvPtrs.push_back(Entry.data());
    EnvPtrs.push_back(nullptr);
    ChildEnv = EnvPtrs.data();
  }

  int OutFileFd = -1;
  if (Options.StdoutFile) {
    OutFileFd = open(Options.StdoutFile->c_str(),
                     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (OutFileFd < 0) {
      Result.StartError = "cannot write " + Options.StdoutFile->string() +
                          ": " + std::strerror(errno);
      return Result;
    }
  }

  int CapturePipe[2] = {-1, -1};
  if (Options.CaptureStdout && pipe2(CapturePipe, O_CLOEXEC) != 0) {
    Result.StartError = std::string("pipe: ") + std::strerror(errno);
    closeIfOpen(OutFileFd);
    return Result;
  }

  int StderrPipe[2] = {-1, -1};
  // Not with CaptureStdout: reading two pipes one after the other could
  // deadlock.
  bool SinkStderr = Options.StderrSink && !Options.CaptureStdout;
  if (SinkStderr && pipe2(StderrPipe, O_CLOEXEC) != 0) {
    Result.StartError = std::string("pipe: ") + std::strerror(errno);
    closeIfOpen(OutFileFd);
    closeIfOpen(CapturePipe[0]);
    closeIfOpen(CapturePipe[1]);
    return Result;
  }

  // The child writes errno here when execvp() fails; on success the pipe is
  // closed by O_CLOEXEC and the parent reads nothing. This is how we tell
  // "cargo not found" apart from "cargo exited 127".
  int ExecErrorPipe[2] = {-1, -1};
  if (pipe2(ExecErrorPipe, O_CLOEXEC) != 0) {
    Result.StartError = std::string("pipe: ") + std::strerror(errno);
    closeIfOpen(OutFileFd);
    closeIfOpen(CapturePipe[0]);
    closeIfOpen(CapturePipe[1]);
    closeIfOpen(StderrPipe[0]);
    closeIfOpen(StderrPipe[1]);
    return Result;
  }

  IgnoreInterruptsWhileWaiting Guard;

  pid_t Pid = fork();
  if (Pid < 0) {
    Result.StartError = std::string("fork: ") + std::strerror(errno);
    closeIfOpen(OutFileFd);
    closeIfOpen(CapturePipe[0]);
    closeIfOpen(CapturePipe[1]);
    closeIfOpen(ExecErrorPipe[0]);
    closeIfOpen(ExecErrorPipe[1]);
    closeIfOpen(StderrPipe[0]);
    closeIfOpen(StderrPipe[1]);
    return Result;
  }

  if (Pid == 0) {
    // Child: default signal dispositions, wire up stdout, exec.
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    if (OutFileFd >= 0)
      dup2(OutFileFd, STDOUT_FILENO);
    if (CapturePipe[1] >= 0) {
      dup2(CapturePipe[1], STDOUT_FILENO);
      if (Options.CaptureStderr)
        dup2(CapturePipe[1], STDERR_FILENO);
    }
    if (StderrPipe[1] >= 0)
      dup2(StderrPipe[1], STDERR_FILENO);
    // Report {stage, errno}: stage 0 is chdir(), stage 1 is execvp().
    if (Options.WorkingDir && chdir(Options.WorkingDir->c_str()) != 0) {
      int Report[2] = {0, errno};
      (void)!write(ExecErrorPipe[1], Report, sizeof(Report));
      _exit(127);
    }
    environ = ChildEnv;
    execvp(ArgPtrs[0], ArgPtrs.data());
    int Report[2] = {1, errno};
    (void)!write(ExecErrorPipe[1], Report, sizeof(Report));
    _exit(127);
  }

  // Parent.
  closeIfOpen(OutFileFd);
  closeIfOpen(CapturePipe[1]);
  closeIfOpen(ExecErrorPipe[1]);
  closeIfOpen(StderrPipe[1]);

  if (StderrPipe[0] >= 0) {
    char Buffer[8192];
    for (;;) {
      ssize_t N = read(StderrPipe[0], Buffer, sizeof(Buffer));
      if (N > 0) {
        Options.StderrSink(std::string_view(Buffer, static_cast<size_t>(N)));
        continue;
      }
      if (N < 0 && errno == EINTR)
        continue;
      break;
    }
    closeIfOpen(StderrPipe[0]);
  }

  if (CapturePipe[0] >= 0) {
    char Buffer[8192];
    for (;;) {
      ssize_t N = read(CapturePipe[0], Buffer, sizeof(Buffer));
      if (N > 0) {
        Result.Output.append(Buffer, static_cast<size_t>(N));
        continue;
      }
      if (N < 0 && errno == EINTR)
        continue;
      break;
    }
    closeIfOpen(CapturePipe[0]);
  }

  int Report[2] = {0, 0};
  ssize_t Got;
  do {
    Got = read(ExecErrorPipe[0], Report, sizeof(Report));
  } while (Got < 0 && errno == EINTR);
  closeIfOpen(ExecErrorPipe[0]);

  int Status = 0;
  while (waitpid(Pid, &Status, 0) < 0) {
    if (errno != EINTR) {
      Result.StartError = std::string("waitpid: ") + std::strerror(errno);
      return Result;
    }
  }

  if (Got == static_cast<ssize_t>(sizeof(Report))) {
    int Err = Report[1];
    if (Report[0] == 0)
      Result.StartError = "cannot enter " + Options.WorkingDir->string() +
                          ": " + std::strerror(Err);
    else if (Err == ENOENT)
      Result.StartError = "`" + Argv[0] + "` not found";
    else
      Result.StartError = "`" + Argv[0] + "`: " + std::strerror(Err);
    return Result;
  }

  Result.Started = true;
  if (WIFEXITED(Status))
    Result.ExitCode = WEXITSTATUS(Status);
  else if (WIFSIGNALED(Status))
    Result.Signal = WTERMSIG(Status);
  return Result;
}

//===----------------------------------------------------------------------===//
// Formatting
//===----------------------------------------------------------------------===//

std::string shellQuote(std::string_view Word) {
  if (Word.empty())
    return "''";
  bool Plain = true;
  for (char C : Word) {
    bool Safe = (C >= 'a' && C <= 'z') || (C >= 'A' && C <= 'Z') ||
                (C >= '0' && C <= '9') || std::strchr("-_./=:,+@%", C);
    if (!Safe) {
      Plain = false;
      break;
    }
  }
  if (Plain)
    return std::string(Word);
  std::string Quoted = "'";
  for (char C : Word) {
    if (C == '\'')
      Quoted += "'\\''";
    else
      Quoted += C;
  }
  Quoted += "'";
  return Quoted;
}

std::string formatCommandLine(const std::vector<std::string> &Argv) {
  std::string Line;
  for (const std::string &Arg : Argv) {
    if (!Line.empty())
      Line += ' ';
    Line += shellQuote(Arg);
  }
  return Line;
}

} // namespace oxide::cli

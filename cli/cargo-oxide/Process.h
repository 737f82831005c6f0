//===- Process.h - environment and child processes --------------*- C++ -*-===//
//
// Part of oxide. cargo-oxide is a driver: almost everything it does is run
// another program (cargo, rustc, ptxas, nvdisasm) with a prepared environment.
// This file holds the two pieces that makes possible:
//
//  * Environment - an editable copy of the process environment. Commands build
//    the environment a child gets here rather than calling setenv(), so the
//    composition (RUSTFLAGS & co.) is a pure function that tests can check.
//  * runProcess - fork + execvp + waitpid, optionally capturing stdout.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_PROCESS_H
#define OXIDE_CLI_PROCESS_H

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxide::cli {

namespace fs = std::filesystem;

/// An ordered set of NAME=VALUE pairs.
class Environment {
public:
  /// A copy of this process's environment.
  static Environment current();

  std::optional<std::string> get(std::string_view Name) const;
  /// Like get(), but an empty value counts as unset.
  std::optional<std::string> getNonEmpty(std::string_view Name) const;
  bool contains(std::string_view Name) const;
  void set(std::string_view Name, std::string_view Value);
  void unset(std::string_view Name);

  /// "NAME=VALUE" strings, the form execve() wants.
  std::vector<std::string> toStrings() const;

private:
  std::map<std::string, std::string, std::less<>> Vars;
};

/// How runProcess() connects the child.
struct RunOptions {
  /// The child's environment; null means this process's own.
  const Environment *Env = nullptr;
  /// Collect the child's stdout into ProcessResult::Output.
  bool CaptureStdout = false;
  /// With CaptureStdout: collect stderr into the same buffer.
  bool CaptureStderr = false;
  /// Write the child's stdout to this file instead (e.g. SASS listings).
  std::optional<fs::path> StdoutFile;
  /// Run the child in this directory.
  std::optional<fs::path> WorkingDir;
  /// Read the child's stderr through a pipe and hand it here piece by piece,
  /// as it comes (ignored with CaptureStdout).
  std::function<void(std::string_view)> StderrSink;
};

struct ProcessResult {
  /// False when the program could not be started at all (not found, not
  /// executable); StartError then says why.
  bool Started = false;
  std::string StartError;
  /// The exit status when the child exited normally, else -1.
  int ExitCode = -1;
  /// The signal that killed the child, else 0.
  int Signal = 0;
  std::string Output;

  bool succeeded() const { return Started && ExitCode == 0; }
  /// The status a shell would report: the exit code, 128 + signal, or 127
  /// when the program could not be started.
  int shellStatus() const;
  /// "exit code 101", "killed by SIGSEGV (signal 11, Segmentation
  /// fault)", …
  std::string describe() const;
};

/// "SIGSEGV", "SIGABRT", …; "signal N" for one without a name here.
std::string signalName(int Signal);

/// Runs Argv[0] (searched in PATH when it has no '/') with Argv as its
/// arguments and waits for it. While the child runs, SIGINT and SIGQUIT are
/// ignored here, as system() does: Ctrl-C goes to the whole foreground process
/// group, the child decides what to do with it, and we then report how it
/// ended instead of dying first and leaving the terminal to an orphan.
ProcessResult runProcess(const std::vector<std::string> &Argv,
                         const RunOptions &Options = {});

/// The full path of an executable: \p Name itself when it contains a '/',
/// otherwise the first match in PATH (taken from \p Env).
std::optional<fs::path> findProgram(std::string_view Name,
                                    const Environment &Env);

/// Whether \p Path is a regular file we may execute.
bool isExecutableFile(const fs::path &Path);

/// A command line as a user could paste it into a shell; used by --verbose.
std::string formatCommandLine(const std::vector<std::string> &Argv);

/// Quotes \p Word for a POSIX shell when it needs quoting.
std::string shellQuote(std::string_view Word);

/// The absolute path of the running executable (/proc/self/exe).
std::optional<fs::path> currentExecutable();

} // namespace oxide::cli

#endif // OXIDE_CLI_PROCESS_H

//===- Launch.cpp - the ranks of a multi-process job ----------------------===//
//
// Part of oxide. See Launch.h.
//
// Each rank is forked with its stdout and stderr on pipes of their own and
// its own process group, so that stopping a rank stops whatever it started.
// One poll() loop reads every pipe and reaps children without blocking: a
// rank that fails is seen while the others still run (a rank waiting for a
// dead peer would otherwise keep the job alive until its own timeout).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oxide::cli {

Environment rankEnvironment(const Environment &Base, unsigned Rank,
                            unsigned Size, const std::string &Rendezvous) {
  Environment Env = Base;
  Env.set("OXIDE_RANK", std::to_string(Rank));
  Env.set("OXIDE_LOCAL_RANK", std::to_string(Rank));
  Env.set("OXIDE_WORLD_SIZE", std::to_string(Size));
  Env.set("OXIDE_NCCL_ADDR", Rendezvous);
  return Env;
}

std::string freeLocalAddress() {
  int Fd = socket(AF_INET, SOCK_STREAM, 0);
  if (Fd < 0)
    return {};
  sockaddr_in Addr{};
  Addr.sin_family = AF_INET;
  Addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Addr.sin_port = 0;
  socklen_t Len = sizeof(Addr);
  std::string Result;
  if (bind(Fd, reinterpret_cast<sockaddr *>(&Addr), sizeof(Addr)) == 0 &&
      getsockname(Fd, reinterpret_cast<sockaddr *>(&Addr), &Len) == 0)
    Result = "127.0.0.1:" + std::to_string(ntohs(Addr.sin_port));
  close(Fd);
  return Result;
}

namespace {

/// One rank: its process and what is left of its two output streams.
struct Rank {
  pid_t Pid = -1;
  int Fds[2] = {-1, -1}; ///< stdout, stderr read ends; -1 once closed
  std::string Partial[2];
  bool Running = false;
  int Status = 0; ///< shell status once ended
};

int shellStatusOf(int WaitStatus) {
  if (WIFEXITED(WaitStatus))
    return WEXITSTATUS(WaitStatus);
  if (WIFSIGNALED(WaitStatus))
    return 128 + WTERMSIG(WaitStatus);
  return 1;
}

/// Forks rank \p R; false (with \p Why) if that failed.
bool start(Rank &R, const std::vector<std::string> &Command,
           const Environment &Env, std::string &Why) {
  int Out[2], Err[2];
  if (pipe(Out) != 0 || pipe(Err) != 0) {
    Why = std::strerror(errno);
    return false;
  }
  std::vector<std::string> EnvStrings = Env.toStrings();
  std::vector<char *> Argv, Envp;
  for (const std::string &A : Command)
    Argv.push_back(const_cast<char *>(A.c_str()));
  Argv.push_back(nullptr);
  for (const std::string &E : EnvStrings)
    Envp.push_back(const_cast<char *>(E.c_str()));
  Envp.push_back(nullptr);
  pid_t Pid = fork();
  if (Pid < 0) {
    Why = std::strerror(errno);
    return false;
  }
  if (Pid == 0) {
    setpgid(0, 0);
    dup2(Out[1], STDOUT_FILENO);
    dup2(Err[1], STDERR_FILENO);
    close(Out[0]);
    close(Out[1]);
    close(Err[0]);
    close(Err[1]);
    execvpe(Argv[0], Argv.data(), Envp.data());
    std::string Msg = "cannot start " + Command[0] + ": " +
                      std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, Msg.data(), Msg.size());
    _exit(127);
  }
  setpgid(Pid, Pid);
  close(Out[1]);
  close(Err[1]);
  R.Pid = Pid;
  R.Fds[0] = Out[0];
  R.Fds[1] = Err[0];
  R.Running = true;
  return true;
}

/// Writes the complete lines of \p Text (after what \p Partial holds) with
/// the rank's prefix, keeping an unfinished last line in \p Partial.
void emitLines(std::string &Partial, std::string_view Text, unsigned Index,
               std::ostream &To) {
  Partial.append(Text);
  size_t Start = 0, End;
  while ((End = Partial.find('\n', Start)) != std::string::npos) {
    To << "[rank " << Index << "] "
       << std::string_view(Partial).substr(Start, End - Start) << "\n";
    Start = End + 1;
  }
  Partial.erase(0, Start);
  To.flush();
}

} // namespace

int launchRanks(const std::vector<std::string> &Command,
                const Environment &Env, unsigned Size,
                const std::string &Rendezvous, std::ostream &Out,
                std::ostream &Err, int GraceSeconds) {
  std::vector<Rank> Ranks(Size);
  std::optional<unsigned> Failed;
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> KillAt;

  auto StopOthers = [&](unsigned Except) {
    for (unsigned I = 0; I < Size; ++I)
      if (I != Except && Ranks[I].Running)
        kill(-Ranks[I].Pid, SIGTERM);
    KillAt = Clock::now() + std::chrono::seconds(GraceSeconds);
  };

  for (unsigned I = 0; I < Size; ++I) {
    std::string Why;
    if (!start(Ranks[I], Command, rankEnvironment(Env, I, Size, Rendezvous),
               Why)) {
      Err << "cargo oxide: rank " << I << " could not be started: " << Why
          << "\n";
      Failed = I;
      Ranks[I].Status = 127;
      StopOthers(I);
      break;
    }
  }

  auto AnyOpen = [&] {
    for (const Rank &R : Ranks)
      if (R.Running || R.Fds[0] >= 0 || R.Fds[1] >= 0)
        return true;
    return false;
  };
  while (AnyOpen()) {
    std::vector<pollfd> Polls;
    std::vector<std::pair<unsigned, int>> Owners;
    for (unsigned I = 0; I < Size; ++I)
      for (int S = 0; S < 2; ++S)
        if (Ranks[I].Fds[S] >= 0) {
          Polls.push_back({Ranks[I].Fds[S], POLLIN, 0});
          Owners.push_back({I, S});
        }
    if (!Polls.empty())
      poll(Polls.data(), Polls.size(), 50);
    else
      usleep(20000);
    for (size_t P = 0; P < Polls.size(); ++P) {
      if (!(Polls[P].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      auto [I, S] = Owners[P];
      char Buf[4096];
      ssize_t Got = read(Polls[P].fd, Buf, sizeof(Buf));
      if (Got > 0) {
        emitLines(Ranks[I].Partial[S], std::string_view(Buf, Got), I,
                  S == 0 ? Out : Err);
      } else if (Got == 0 || errno != EINTR) {
        if (!Ranks[I].Partial[S].empty())
          emitLines(Ranks[I].Partial[S], "\n", I, S == 0 ? Out : Err);
        close(Ranks[I].Fds[S]);
        Ranks[I].Fds[S] = -1;
      }
    }
    for (unsigned I = 0; I < Size; ++I) {
      if (!Ranks[I].Running)
        continue;
      int WaitStatus = 0;
      if (waitpid(Ranks[I].Pid, &WaitStatus, WNOHANG) != Ranks[I].Pid)
        continue;
      Ranks[I].Running = false;
      Ranks[I].Status = shellStatusOf(WaitStatus);
      if (Ranks[I].Status != 0 && !Failed) {
        Failed = I;
        StopOthers(I);
      }
    }
    if (KillAt && Clock::now() >= *KillAt) {
      for (const Rank &R : Ranks)
        if (R.Running)
          kill(-R.Pid, SIGKILL);
      KillAt.reset();
    }
  }
  if (!Failed)
    return 0;
  unsigned Stopped = 0;
  for (unsigned I = 0; I < Size; ++I)
    Stopped += I != *Failed && Ranks[I].Status != 0;
  Err << "cargo oxide: rank " << *Failed << " of " << Size
      << " failed (status " << Ranks[*Failed].Status << ")";
  if (Stopped)
    Err << "; " << Stopped << " other rank(s) were stopped";
  Err << "\n";
  return Ranks[*Failed].Status;
}

} // namespace oxide::cli

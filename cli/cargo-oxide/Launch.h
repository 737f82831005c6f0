//===- Launch.h - the ranks of a multi-process job --------------*- C++ -*-===//
//
// Part of oxide. `cargo oxide run --gpus N` starts N copies of a program as
// the ranks of one job, the way a cluster launcher (torchrun, srun) would on
// one machine: each is told its place through the environment cuda-nccl's
// World::from_env reads, their output is interleaved line by line with a
// rank prefix, and the first rank to fail ends the job.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_LAUNCH_H
#define OXIDE_CLI_LAUNCH_H

#include "Process.h"

#include <ostream>
#include <string>
#include <vector>

namespace oxide::cli {

/// The environment of rank \p Rank of \p Size: \p Base with OXIDE_RANK,
/// OXIDE_LOCAL_RANK (the same: one machine), OXIDE_WORLD_SIZE and
/// OXIDE_NCCL_ADDR (\p Rendezvous, host:port) set.
Environment rankEnvironment(const Environment &Base, unsigned Rank,
                            unsigned Size, const std::string &Rendezvous);

/// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's
/// choice for port 0), as "127.0.0.1:PORT"; empty if no socket could be
/// made.
std::string freeLocalAddress();

/// Runs \p Command (program and arguments) \p Size times at once, rank r
/// with rankEnvironment(Env, r, Size, Rendezvous). Each line a rank writes
/// to stdout goes to \p Out, each stderr line to \p Err, prefixed by
/// "[rank r] ". When a rank fails (non-zero exit, a signal, or it cannot
/// be started) the others get SIGTERM, and SIGKILL if they have not ended
/// \p GraceSeconds later; a line on \p Err names the failed rank.
/// Returns 0, or the shell status of the first rank that failed.
int launchRanks(const std::vector<std::string> &Command,
                const Environment &Env, unsigned Size,
                const std::string &Rendezvous, std::ostream &Out,
                std::ostream &Err, int GraceSeconds = 5);

} // namespace oxide::cli

#endif

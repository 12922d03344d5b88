#ifndef LMDX_TOOLS_LAUNCHER_H_
#define LMDX_TOOLS_LAUNCHER_H_

#include <signal.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tools/job_watch.h"
#include "tools/signal_watch.h"

namespace lmdx::tools {

struct LaunchSpec {
  std::string program;            // executable every node runs
  std::vector<std::string> args;  // its arguments (argv[1..])
  int nodes = 1;
  bool tag_output = false;  // prefix each forwarded line with "[rank] "
  std::optional<std::chrono::milliseconds> timeout;
  // With a watch: a node still running that has not joined within this time is named and the
  // job stopped (it never called lmdx_init, or hangs before it); none waits for ever.
  std::optional<std::chrono::milliseconds> join_timeout;
  // "NAME=value" entries every node gets on top of the launcher's environment (the job secret,
  // the rendezvous address, the job id). LMDX_RANK and LMDX_SIZE are added per node.
  std::vector<std::string> job_env;
  // The job's rendezvous, when the nodes are LMDX programs; without one, every exit with status
  // 0 counts as orderly.
  JobWatch* watch = nullptr;
};

// Timings of the launcher's stop sequence; tests may shorten them.
struct LaunchTimings {
  // After SIGTERM, how long nodes get before SIGKILL.
  std::chrono::milliseconds kill_after{2000};
  // After a node exits with a non-zero status, how long the others get to exit on their own
  // (threads style: every node exits with rank 0's status, at nearly the same time) before the
  // launcher stops them.
  std::chrono::milliseconds exit_grace{1000};
  // After a node leaves the job without announcing its end, how long the launcher waits for a
  // node killed by a signal (the likelier cause: its peers see its sockets close before the
  // kernel reports its death) before it stops the job and names the one that left.
  std::chrono::milliseconds cause_settle{200};
  // After the last node is gone, how long a pipe kept open by a node's own child is drained.
  std::chrono::milliseconds drain{1000};
};

// Runs a job of spec.nodes processes on this machine and returns the launcher's exit status:
// 0 when every node exited 0; the failing node's status (128 + signal when killed) when one
// failed, after stopping the others; 124 on timeout; 1 when a node did not join in time; 128 +
// signal when the launcher was asked to stop (SIGINT: 130, SIGTERM: 143). Prints one line on stderr
// naming the cause of any failure. `signals` must watch LauncherSignals() and exist before any
// thread starts.
int RunJob(const LaunchSpec& spec, SignalWatch& signals, const LaunchTimings& timings = {});

// The signals RunJob expects its SignalWatch to watch.
// SIGQUIT (Ctrl-\\) asks rank 0 for its report of what every thread waits for.
inline std::vector<int> LauncherSignals() { return {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}; }

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_LAUNCHER_H_

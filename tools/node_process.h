#ifndef LMDX_TOOLS_NODE_PROCESS_H_
#define LMDX_TOOLS_NODE_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "tools/exit_status.h"

namespace lmdx::tools {

struct NodeSpawn {
  std::string program;                   // path of the executable
  std::vector<std::string> argv;         // argv[0] included
  std::vector<std::string> env;          // "NAME=value", the whole environment
  bool inherit_stdin = false;            // otherwise stdin is /dev/null
  const sigset_t* child_mask = nullptr;  // signal mask to restore before exec; null: empty mask
};

// One node process of a job, with pipes for its stdout and stderr. The node dies with its launcher
// (PR_SET_PDEATHSIG), and a NodeProcess that is destroyed while its process still runs kills and
// reaps it, so no path through the launcher leaves a node behind.
class NodeProcess {
 public:
  // Throws lmdx::Error when the pipes cannot be made, fork fails or exec fails (with the reason).
  static NodeProcess Spawn(const NodeSpawn& spawn);

  NodeProcess(NodeProcess&& other) noexcept;
  NodeProcess& operator=(NodeProcess&&) = delete;
  NodeProcess(const NodeProcess&) = delete;
  ~NodeProcess();

  pid_t pid() const { return pid_; }
  bool running() const { return !status_.has_value(); }
  const std::optional<ExitStatus>& status() const { return status_; }
  Fd& stdout_pipe() { return stdout_; }
  Fd& stderr_pipe() { return stderr_; }

  // Sends sig while the process is unreaped (its pid cannot have been reused yet).
  void Signal(int sig) const;
  // Collects the exit status if the process has ended; true when it ended just now.
  bool TryReap();

 private:
  NodeProcess(pid_t pid, Fd out, Fd err)
      : pid_(pid), stdout_(std::move(out)), stderr_(std::move(err)) {}

  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
  Fd stdout_;
  Fd stderr_;
};

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_NODE_PROCESS_H_

#include "tools/exit_status.h"

#include <sys/wait.h>

#include <cstring>

namespace lmdx::tools {

std::string SignalName(int signo) {
  // sigabbrev_np (glibc 2.32+) gives the name without "SIG" and never depends on the locale.
  if (const char* abbrev = sigabbrev_np(signo)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(signo);
}

ExitStatus ExitStatus::FromWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) return {true, WTERMSIG(wait_status)};
  return {false, WEXITSTATUS(wait_status)};
}

std::string ExitStatus::Describe() const {
  if (signaled) return "died (killed by signal " + SignalName(value) + ")";
  return "exited with status " + std::to_string(value);
}

}  // namespace lmdx::tools

#ifndef LMDX_TOOLS_EXIT_STATUS_H_
#define LMDX_TOOLS_EXIT_STATUS_H_

#include <string>

namespace lmdx::tools {

// "SIGSEGV", "SIGKILL", ...; "signal 42" for numbers without a name. Independent of the locale,
// unlike strsignal, so messages and tests can rely on it.
std::string SignalName(int signo);

// How a process ended, from a waitpid status.
struct ExitStatus {
  bool signaled = false;
  int value = 0;  // the exit code, or the signal number when signaled

  static ExitStatus FromWaitStatus(int wait_status);
  bool success() const { return !signaled && value == 0; }
  // What a shell would report: the exit code, or 128 + the signal number.
  int ShellCode() const { return signaled ? 128 + value : value; }
  // "exited with status 3" or "died (killed by signal SIGSEGV)".
  std::string Describe() const;
};

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_EXIT_STATUS_H_

#ifndef LMDX_TESTS_TOOLS_SUBPROCESS_H_
#define LMDX_TESTS_TOOLS_SUBPROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/fd.h"

namespace lmdx::tools::testing {

// How a finished process ended and what it wrote.
struct Outcome {
  bool signaled = false;
  int code = 0;  // exit status, or the signal number when signaled
  bool timed_out = false;
  std::string out;
  std::string err;
  std::chrono::milliseconds elapsed{0};
};

// A process the test starts, capturing its stdout and stderr. Destroying it kills and reaps it,
// so a failed assertion never leaves a launcher behind.
class Subprocess {
 public:
  // env entries ("NAME=value") are set on top of the test's environment; an entry "-NAME"
  // removes NAME.
  Subprocess(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  // Reads all output and waits for the exit; after `limit` the process is killed (timed_out).
  Outcome Finish(std::chrono::milliseconds limit = std::chrono::seconds(30));

 private:
  pid_t pid_ = -1;
  Fd out_;
  Fd err_;
  std::chrono::steady_clock::time_point start_;
};

// Starts argv and finishes it.
Outcome RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                   std::chrono::milliseconds limit = std::chrono::seconds(30));

// The lines of text, without their newlines.
std::vector<std::string> Lines(const std::string& text);

// True while a process with this pid exists (zombies included).
bool ProcessExists(pid_t pid);

}  // namespace lmdx::tools::testing

#endif  // LMDX_TESTS_TOOLS_SUBPROCESS_H_

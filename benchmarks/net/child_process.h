// Runs one command and reads its standard output line by line: the driver uses it to start each
// ping-pong job and parse what rank 0 prints. Standard error passes straight through, so a
// failing job's own messages reach the user unchanged.
#ifndef LMDX_BENCHMARKS_NET_CHILD_PROCESS_H_
#define LMDX_BENCHMARKS_NET_CHILD_PROCESS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace lmdx::bench {

struct ChildOutcome {
  bool started = false;
  std::string start_error;  // why it could not start, when !started
  int exit_code = -1;       // when it exited
  int signal = 0;           // when a signal ended it
  bool ok() const { return started && signal == 0 && exit_code == 0; }
};

// "exited with status 3", "was killed by SIGSEGV", "could not start: ...".
std::string describe(const ChildOutcome& outcome);

// Runs argv (argv[0] is a path) with extra variables added to this process's environment, calls
// on_line for each line of its standard output (without the newline), and waits for it. Its
// standard error goes to stderr_file when one is named, else to this process's.
ChildOutcome run_child(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& extra_env,
                       const std::function<void(const std::string&)>& on_line,
                       const std::string& stderr_file = "");

// The full path of an executable found on PATH, or "" when there is none.
std::string find_on_path(const std::string& name);

// The folder holding this process's executable (from /proc/self/exe).
std::string own_directory();

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_NET_CHILD_PROCESS_H_

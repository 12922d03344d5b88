#ifndef LMDX_TESTS_TESTING_JOB_RUNNER_H_
#define LMDX_TESTS_TESTING_JOB_RUNNER_H_

#include <chrono>
#include <string>
#include <vector>

namespace lmdx::testing {

// What a job run through the real launcher left behind.
struct JobResult {
  int exit_code = -1;  // the launcher's exit status (128 + signal if it was killed)
  std::string out;     // everything the launcher wrote on stdout
  std::string err;     // and on stderr
  std::chrono::milliseconds elapsed{0};
};

// Path of a binary given to the test by Bazel in the environment variable `variable`
// (`env = {"NAME": "$(rootpath //x:y)"}` in the BUILD file), resolved against the test's runfiles.
std::string BinaryFromEnv(const char* variable);

// Runs `lmdx run PROGRAM -n NODES [launcher_flags] -- program_args` with the launcher named by
// LMDX_TOOL. The run is killed after `limit` (the test then fails on exit_code).
JobResult RunJob(const std::string& program, int nodes,
                 const std::vector<std::string>& program_args,
                 const std::vector<std::string>& launcher_flags = {},
                 std::chrono::seconds limit = std::chrono::seconds(120));

// Runs any command (argv[0] found on PATH when it has no slash) with extra_env added to this
// process's environment ("NAME=value"), killed after `limit`.
JobResult RunCommand(const std::vector<std::string>& command,
                     const std::vector<std::string>& extra_env = {},
                     std::chrono::seconds limit = std::chrono::seconds(120));

// Counts the occurrences of needle in haystack.
int CountOf(const std::string& haystack, const std::string& needle);

}  // namespace lmdx::testing

#endif  // LMDX_TESTS_TESTING_JOB_RUNNER_H_

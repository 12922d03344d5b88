#include "tests/testing/job_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

extern char** environ;

namespace lmdx::testing {
namespace {

std::string ResolveRunfile(const std::string& path) {
  if (std::filesystem::exists(path)) return std::filesystem::absolute(path);
  for (const char* root : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    const char* dir = std::getenv(root);
    if (dir == nullptr) continue;
    std::filesystem::path candidate = std::filesystem::path(dir) / "lmdx" / path;
    if (std::filesystem::exists(candidate)) return candidate;
  }
  // Outside the runfiles tree, a Bazel output path resolves against the workspace's bazel-bin.
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (workspace != nullptr) {
    std::filesystem::path candidate = std::filesystem::path(workspace) / "bazel-bin" / path;
    if (std::filesystem::exists(candidate)) return candidate;
  }
  throw std::runtime_error("cannot find " + path + " in the test's runfiles");
}

}  // namespace

std::string BinaryFromEnv(const char* variable) {
  const char* value = std::getenv(variable);
  if (value == nullptr) throw std::runtime_error(std::string(variable) + " is not set");
  return ResolveRunfile(value);
}

JobResult RunJob(const std::string& program, int nodes,
                 const std::vector<std::string>& program_args,
                 const std::vector<std::string>& launcher_flags, std::chrono::seconds limit) {
  std::vector<std::string> args = {BinaryFromEnv("LMDX_TOOL"), "run", program, "-n",
                                   std::to_string(nodes)};
  args.insert(args.end(), launcher_flags.begin(), launcher_flags.end());
  args.push_back("--");
  args.insert(args.end(), program_args.begin(), program_args.end());
  return RunCommand(args, {}, limit);
}

JobResult RunCommand(const std::vector<std::string>& command,
                     const std::vector<std::string>& extra_env, std::chrono::seconds limit) {
  std::vector<std::string> args = command;
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = extra_env;
  std::vector<char*> envp;
  for (std::string& entry : env_strings) envp.push_back(entry.data());
  for (char** entry = environ; *entry != nullptr; ++entry) envp.push_back(*entry);
  envp.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (spawned != 0) throw std::runtime_error("cannot start " + args[0]);

  JobResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_pipes = 2;
  bool killed = false;
  while (open_pipes > 0) {
    auto left = limit - (std::chrono::steady_clock::now() - start);
    int wait_ms = static_cast<int>(
        std::max<long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(left).count()));
    if (::poll(fds, 2, wait_ms) == 0 && !killed) {
      ::kill(pid, SIGKILL);  // the launcher itself hung: fail loudly rather than hang the suite
      killed = true;
      result.err += "\n[job_runner: the launcher did not finish in time and was killed]\n";
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[65536];
      ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      } else {
        sinks[i]->append(buffer, static_cast<std::size_t>(got));
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

int CountOf(const std::string& haystack, const std::string& needle) {
  int count = 0;
  for (auto at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

}  // namespace lmdx::testing

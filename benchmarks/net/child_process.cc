#include "benchmarks/net/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace lmdx::bench {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Child side of fork: only async-signal-safe calls until exec. An exec failure is written to
// report_fd (close-on-exec, so a successful exec closes it with nothing written).
[[noreturn]] void exec_child(const std::vector<std::string>& argv,
                             const std::vector<std::pair<std::string, std::string>>& extra_env,
                             int stdout_fd, int report_fd, const std::string& stderr_file) {
  int stderr_fd = STDERR_FILENO;
  if (!stderr_file.empty()) {
    stderr_fd = open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  if (stderr_fd < 0 || dup2(stdout_fd, STDOUT_FILENO) < 0 ||
      (stderr_fd != STDERR_FILENO && dup2(stderr_fd, STDERR_FILENO) < 0)) {
    const int err = errno;
    (void)!write(report_fd, &err, sizeof err);
    _exit(127);
  }
  for (const auto& [name, value] : extra_env) setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  const int err = errno;
  (void)!write(report_fd, &err, sizeof err);
  _exit(127);
}

void read_lines(int fd, const std::function<void(const std::string&)>& on_line) {
  std::string pending;
  char chunk[4096];
  for (;;) {
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      on_line(pending.substr(start, nl - start));
    }
    pending.erase(0, start);
  }
  if (!pending.empty()) on_line(pending);
}

}  // namespace

std::string describe(const ChildOutcome& outcome) {
  if (!outcome.started) return "could not start: " + outcome.start_error;
  if (outcome.signal != 0) {
    const char* name = sigabbrev_np(outcome.signal);
    return std::string("was killed by ") +
           (name ? std::string("SIG") + name : "signal " + std::to_string(outcome.signal));
  }
  return "exited with status " + std::to_string(outcome.exit_code);
}

ChildOutcome run_child(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& extra_env,
                       const std::function<void(const std::string&)>& on_line,
                       const std::string& stderr_file) {
  ChildOutcome outcome;
  int out_pipe[2];
  int report_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) < 0) {
    outcome.start_error = "pipe: " + errno_text(errno);
    return outcome;
  }
  if (pipe2(report_pipe, O_CLOEXEC) < 0) {
    outcome.start_error = "pipe: " + errno_text(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return outcome;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    outcome.start_error = "fork: " + errno_text(errno);
    for (int fd : {out_pipe[0], out_pipe[1], report_pipe[0], report_pipe[1]}) close(fd);
    return outcome;
  }
  if (pid == 0) exec_child(argv, extra_env, out_pipe[1], report_pipe[1], stderr_file);

  close(out_pipe[1]);
  close(report_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = read(report_pipe[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  close(report_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    outcome.start_error = argv[0] + ": " + errno_text(exec_errno);
  } else {
    outcome.started = true;
    read_lines(out_pipe[0], on_line);
  }
  close(out_pipe[0]);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (outcome.started) {
    if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
    if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  }
  return outcome;
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::istringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) dir = ".";
    std::string candidate = dir;
    candidate += '/';
    candidate += name;
    if (access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      // The folder made canonical, the name kept: OpenMPI's mpirun derives its install prefix
      // from the folder it was started from and refuses /bin (a symlink to /usr/bin here).
      std::error_code ec;
      const auto real_dir = std::filesystem::weakly_canonical(dir, ec);
      return ec ? candidate : (real_dir / name).string();
    }
  }
  return "";
}

std::string own_directory() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return ".";
  return exe.parent_path().string();
}

}  // namespace lmdx::bench

#include "tests/tools/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

extern char** environ;

namespace lmdx::tools::testing {

namespace {

std::vector<std::string> Environment(const std::vector<std::string>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  auto remove = [&env](const std::string& name) {
    std::erase_if(env, [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
  };
  for (const std::string& change : changes) {
    if (change.starts_with("-")) {
      remove(change.substr(1));
    } else {
      remove(change.substr(0, change.find('=')));
      env.push_back(change);
    }
  }
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

Subprocess::Subprocess(const std::vector<std::string>& argv_in,
                       const std::vector<std::string>& env_changes) {
  std::vector<std::string> argv_strings = argv_in;
  std::vector<std::string> env_strings = Environment(env_changes);
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<char*> envp = CStrings(env_strings);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  start_ = std::chrono::steady_clock::now();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_.reset(out[0]);
  err_.reset(err[0]);
  if (pid_ < 0) throw std::runtime_error("fork failed");
}

Subprocess::~Subprocess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

Outcome Subprocess::Finish(std::chrono::milliseconds limit) {
  Outcome outcome;
  auto deadline = start_ + limit;
  while (out_ || err_) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Fd*, std::string*>> owners;
    for (auto [fd, text] : {std::pair{&out_, &outcome.out}, std::pair{&err_, &outcome.err}}) {
      if (!*fd) continue;
      fds.push_back({fd->get(), POLLIN, 0});
      owners.emplace_back(fd, text);
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      outcome.timed_out = true;
      ::kill(pid_, SIGKILL);
      break;
    }
    int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      char buffer[65536];
      ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        owners[i].second->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        owners[i].first->reset();
      }
    }
  }
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  outcome.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start_);
  outcome.signaled = WIFSIGNALED(status);
  outcome.code = outcome.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
  return outcome;
}

Outcome RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   std::chrono::milliseconds limit) {
  Subprocess process(argv, env);
  return process.Finish(limit);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

bool ProcessExists(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace lmdx::tools::testing

#include "tools/node_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/error.h"

namespace lmdx::tools {
namespace {

struct Pipe {
  Fd read;
  Fd write;
};

Pipe MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) ThrowSystemError("pipe2", errno, LMDX_ERR_INTERNAL);
  return {Fd(fds[0]), Fd(fds[1])};
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the child between fork and exec: only async-signal-safe calls, because the launcher
// has other threads (the rendezvous server) whose locks may be held at the fork.
[[noreturn]] void ExecChild(pid_t parent, int in_fd, int out_fd, int err_fd, int report_fd,
                            const sigset_t& mask, const char* program, char* const argv[],
                            char* const envp[]) {
  // Nodes never outlive a launcher that is killed: the kernel sends SIGKILL when it dies. If it
  // died already before prctl, getppid shows it.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
  if ((in_fd >= 0 && ::dup2(in_fd, STDIN_FILENO) < 0) || ::dup2(out_fd, STDOUT_FILENO) < 0 ||
      ::dup2(err_fd, STDERR_FILENO) < 0) {
    int e = errno;
    (void)!::write(report_fd, &e, sizeof(e));
    ::_exit(127);
  }
  // The launcher ignores SIGPIPE and blocks the signals it watches; a node starts with defaults.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr);
  // A launcher started in the background by a script ignores SIGQUIT; rank 0 takes it for the
  // hang report only from its default (net/hang_watch.h).
  ::sigaction(SIGQUIT, &dfl, nullptr);
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  ::execve(program, argv, envp);
  int e = errno;
  (void)!::write(report_fd, &e, sizeof(e));
  ::_exit(127);
}

}  // namespace

NodeProcess NodeProcess::Spawn(const NodeSpawn& spawn) {
  Pipe out = MakePipe();
  Pipe err = MakePipe();
  Pipe report = MakePipe();  // carries errno if exec fails; closes on exec (O_CLOEXEC)
  Fd dev_null;
  if (!spawn.inherit_stdin) {
    dev_null.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!dev_null) ThrowSystemError("open /dev/null", errno, LMDX_ERR_INTERNAL);
  }
  sigset_t empty;
  sigemptyset(&empty);
  const sigset_t& mask = spawn.child_mask ? *spawn.child_mask : empty;
  std::vector<char*> argv = CStrings(spawn.argv);
  std::vector<char*> envp = CStrings(spawn.env);
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) ThrowSystemError("fork", errno, LMDX_ERR_INTERNAL);
  if (pid == 0) {
    ExecChild(parent, dev_null.get(), out.write.get(), err.write.get(), report.write.get(), mask,
              spawn.program.c_str(), argv.data(), envp.data());
  }

  NodeProcess node(pid, std::move(out.read), std::move(err.read));
  report.write.reset();
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(report.read.get(), &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n == sizeof(child_errno)) {
    // ~NodeProcess reaps the child, which has exited with 127.
    ThrowSystemError("cannot start " + spawn.program, child_errno, LMDX_ERR_INTERNAL);
  }
  for (Fd* fd : {&node.stdout_, &node.stderr_}) {
    ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
  }
  return node;
}

NodeProcess::NodeProcess(NodeProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      status_(other.status_),
      stdout_(std::move(other.stdout_)),
      stderr_(std::move(other.stderr_)) {}

NodeProcess::~NodeProcess() {
  if (pid_ <= 0 || !running()) return;
  ::kill(pid_, SIGKILL);
  int ws;
  while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
  }
}

void NodeProcess::Signal(int sig) const {
  if (pid_ > 0 && running()) ::kill(pid_, sig);
}

bool NodeProcess::TryReap() {
  if (pid_ <= 0 || !running()) return false;
  int ws;
  pid_t r;
  do {
    r = ::waitpid(pid_, &ws, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return false;
  status_ = ExitStatus::FromWaitStatus(ws);
  return true;
}

}  // namespace lmdx::tools

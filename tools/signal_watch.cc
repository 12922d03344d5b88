#include "tools/signal_watch.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.h"

namespace lmdx::tools {

SignalWatch::SignalWatch(const std::vector<int>& signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  // A process-directed signal reaches the signalfd only if every thread blocks it. Threads inherit
  // the mask, so the watch must exist before any other thread starts (the rendezvous server's).
  if (int rc = pthread_sigmask(SIG_BLOCK, &set, &previous_mask_); rc != 0) {
    ThrowSystemError("pthread_sigmask", rc, LMDX_ERR_INTERNAL);
  }
  fd_.reset(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd_) {
    int saved = errno;
    pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
    ThrowSystemError("signalfd", saved, LMDX_ERR_INTERNAL);
  }
}

SignalWatch::~SignalWatch() {
  fd_.reset();
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

std::vector<int> SignalWatch::ReadPending() {
  std::vector<int> out;
  signalfd_siginfo info[16];
  for (;;) {
    ssize_t n = ::read(fd_.get(), info, sizeof(info));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n / static_cast<ssize_t>(sizeof(info[0])); ++i) {
      out.push_back(static_cast<int>(info[i].ssi_signo));
    }
  }
  return out;
}

}  // namespace lmdx::tools

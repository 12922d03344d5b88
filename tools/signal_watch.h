#ifndef LMDX_TOOLS_SIGNAL_WATCH_H_
#define LMDX_TOOLS_SIGNAL_WATCH_H_

#include <signal.h>

#include <vector>

#include "base/fd.h"

namespace lmdx::tools {

// Turns signals into readable events on a file descriptor (signalfd), so the launcher's single
// poll loop sees child exits and Ctrl-C alongside node output, without handlers or races.
// The signals are blocked while the watch lives; the previous mask comes back on destruction.
class SignalWatch {
 public:
  explicit SignalWatch(const std::vector<int>& signals);
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;
  ~SignalWatch();

  int fd() const { return fd_.get(); }
  // The mask before the watch; a child restores it before exec so nodes get signals normally.
  const sigset_t& previous_mask() const { return previous_mask_; }
  // Every signal pending now (empty when none); never blocks.
  std::vector<int> ReadPending();

 private:
  sigset_t previous_mask_;
  Fd fd_;
};

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_SIGNAL_WATCH_H_

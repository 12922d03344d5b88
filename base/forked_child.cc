#include "base/forked_child.h"

#include <pthread.h>

#include <mutex>

namespace lmdx {

void WatchForForks() {
  // pthread_atfork handlers cannot be removed, so one for the process. fork() made with glibc's
  // fork runs it; _Fork and raw clone do not, and neither does vfork (whose child must exec).
  static std::once_flag registered;
  std::call_once(registered, [] {
    ::pthread_atfork(nullptr, nullptr,
                     [] { internal::forked_child.store(true, std::memory_order_relaxed); });
  });
}

}  // namespace lmdx

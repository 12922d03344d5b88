#ifndef LMDX_NET_COMPLETION_H_
#define LMDX_NET_COMPLETION_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace lmdx::net {

// A one-shot event an application thread waits on while the progress thread finishes its
// request (a reply, a receive, a send of a borrowed buffer). It is the single place where a
// runtime call blocks, so that LMDX's user-level threads can later yield here instead.
class Completion {
 public:
  // Notifies under the lock: the waiter owns this object and may destroy it as soon as it sees
  // done_, so nothing here may touch it after the lock is released.
  void Signal() {
    std::lock_guard lock(mutex_);
    done_ = true;
    ready_.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return done_; });
  }
  // False when the time ran out first.
  bool WaitFor(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return ready_.wait_for(lock, timeout, [this] { return done_; });
  }
  bool done() {
    std::lock_guard lock(mutex_);
    return done_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  bool done_ = false;
};

}  // namespace lmdx::net

#endif  // LMDX_NET_COMPLETION_H_

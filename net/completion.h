#ifndef LMDX_NET_COMPLETION_H_
#define LMDX_NET_COMPLETION_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace lmdx::net {

class Completion;

// Something that can make progress on behalf of a waiting thread: the node's progress engine.
class CompletionDriver {
 public:
  virtual ~CompletionDriver() = default;
  // Polls the network from the calling thread for a short while; returns when completion is
  // done or the while is over (the caller then sleeps).
  virtual void DriveBriefly(Completion& completion) = 0;
};

// A one-shot event an application thread waits on while the network finishes its request (a
// reply, a receive, the send of a borrowed buffer). It is the single place where a runtime call
// blocks, so that LMDX's user-level threads can later yield here instead.
//
// A waiter first polls the network itself for a few tens of microseconds (an answer to a request
// usually comes back within that time), then sleeps until the progress thread signals it. So a
// quick answer costs no wake-up at all, and a slow one costs no spinning.
class Completion {
 public:
  // The process's driver (its node's progress engine), or none: then Wait only sleeps.
  static void SetDriver(CompletionDriver* driver) { driver_.store(driver); }

  // Notifies under the lock: the waiter owns this object and may destroy it once it has seen
  // done_ and taken the lock once more (Settle), so nothing here touches it after the unlock.
  void Signal() {
    std::lock_guard lock(mutex_);
    done_.store(true, std::memory_order_release);
    ready_.notify_all();
  }
  void Wait() {
    if (!done()) {
      CompletionDriver* driver = driver_.load(std::memory_order_acquire);
      if (driver != nullptr) driver->DriveBriefly(*this);
    }
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return done(); });
  }
  // False when the time ran out first. Polls the network briefly first, as Wait does.
  bool WaitFor(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    if (!done()) {
      CompletionDriver* driver = driver_.load(std::memory_order_acquire);
      if (driver != nullptr) driver->DriveBriefly(*this);
    }
    std::unique_lock lock(mutex_);
    return ready_.wait_until(lock, deadline, [this] { return done(); });
  }
  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  static inline std::atomic<CompletionDriver*> driver_{nullptr};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::atomic<bool> done_{false};
};

}  // namespace lmdx::net

#endif  // LMDX_NET_COMPLETION_H_

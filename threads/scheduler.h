// User-level threads of one node (blueprint section 8): fibers from Boost.Context run by a small
// pool of worker OS threads. A user-level thread that waits in the runtime parks, and its worker
// runs another ready one; thousands of them cost a stack each and nothing while parked.
//
// Each user-level thread stays on the worker that first ran it. Moving a fiber between OS
// threads would let code that cached the address of a thread_local (errno, the runtime's own)
// read another thread's; the price is no load balancing between workers.
#ifndef LMDX_THREADS_SCHEDULER_H_
#define LMDX_THREADS_SCHEDULER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "threads/stack_pool.h"

namespace lmdx::threads {

class Scheduler;
struct SchedulerWorker;  // one worker OS thread and its ready queue (scheduler.cc)

// One user-level thread. Handles stay valid after it ends (for join).
class UserThread {
 public:
  // True once its body has returned (or thrown: the exception is reported and the thread ends).
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // Blocks the caller (parks it when the caller is a user-level thread) until this one ends.
  void Join();
  // Join that a user-level thread gives up, returning false, once stop() is true (checked
  // whenever it is woken; Wake it after making stop() true). An OS thread never gives up.
  bool JoinUnless(const std::function<bool()>& stop);

 private:
  friend class Scheduler;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> finished_{false};
  const void* tag_ = nullptr;  // Scheduler::SetCurrentTag
  std::mutex join_mutex_;
  std::condition_variable join_changed_;
  std::vector<UserThread*> joiners_;  // user-level threads parked in Join
};

class Scheduler {
 public:
  struct Options {
    int workers = 2;                       // worker OS threads
    std::size_t stack_bytes = 128 * 1024;  // per user-level thread, with a guard page below
  };

  explicit Scheduler(Options options);
  // Waits for every user-level thread to end, then stops the workers; after Abandon, leaves the
  // workers running and returns at once (the process is ending and takes them with it).
  ~Scheduler();
  void Abandon() { abandoned_.store(true, std::memory_order_release); }
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts body on a new user-level thread. Any thread may call it.
  std::shared_ptr<UserThread> Spawn(std::function<void()> body);

  // The user-level thread running on the calling OS thread, or nullptr on any other thread.
  static UserThread* Current();
  // A word the running user-level thread's owner keeps on it (the threads service's description
  // of what it runs, for a crash note): read with no lock, from a signal handler too. Set and read
  // on the thread itself; nullptr on an OS thread or before it is set.
  static void SetCurrentTag(const void* tag);
  static const void* CurrentTag();
  // From a user-level thread: lets the other ready threads of its worker run first.
  static void Yield();
  // From a user-level thread: sleeps until Wake(it). A Wake that comes first is remembered, so a
  // waiter that checks a condition, then parks, never misses the wake between the two.
  static void Park();
  // Park with a deadline: returns at the deadline at the latest (its worker keeps the timer), or
  // earlier on a Wake. It does not say which; callers check their condition and the clock.
  static void ParkUntil(std::chrono::steady_clock::time_point deadline);
  // Makes a parked user-level thread ready again (or remembers the wake). Any thread may call it.
  static void Wake(UserThread* thread);

  // User-level threads started and not yet ended.
  std::size_t live() const { return live_.load(std::memory_order_acquire); }
  int workers() const { return static_cast<int>(workers_.size()); }

 private:
  friend class UserThread;
  void RunWorker(struct SchedulerWorker& worker);
  static void WakeExpired(SchedulerWorker& worker);
  static void Enqueue(UserThread* thread);
  static void Finish(UserThread* thread);

  // Stacks of ended threads are reused, up to this many idle ones (128 KiB each by default).
  static constexpr std::size_t kIdleStacksKept = 1024;

  Options options_;
  std::shared_ptr<StackPool> stacks_;
  std::vector<std::unique_ptr<SchedulerWorker>> workers_;
  std::atomic<std::size_t> next_worker_{0};
  std::atomic<bool> abandoned_{false};
  std::atomic<std::size_t> live_{0};
  std::mutex live_mutex_;
  std::condition_variable all_ended_;
  // Every thread spawned, kept alive until it ends and the scheduler lets go of it.
  std::mutex threads_mutex_;
  std::unordered_map<UserThread*, std::shared_ptr<UserThread>> threads_;
};

}  // namespace lmdx::threads

#endif  // LMDX_THREADS_SCHEDULER_H_

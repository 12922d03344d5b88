// A task as the runtime keeps it (tasks/runtime.h), and the wait group its spawner waits on.
// Private to tasks/.
#ifndef LMDX_TASKS_INTERNAL_TASK_H_
#define LMDX_TASKS_INTERNAL_TASK_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lmdx::tasks {

using TaskFunction = void (*)(void* args);

namespace internal {

// The copy of a task's arguments. Small ones (a fib frame, a row number) stay inside the task,
// so that a fine-grained spawn costs no allocation for them.
class ArgsCopy {
 public:
  ArgsCopy() = default;
  ArgsCopy(const void* bytes, std::size_t size) : size_(size) {
    if (size > inline_.size()) heap_ = std::make_unique<std::byte[]>(size);
    if (size > 0) std::memcpy(data(), bytes, size);
  }
  std::byte* data() { return heap_ ? heap_.get() : inline_.data(); }
  const std::byte* data() const { return heap_ ? heap_.get() : inline_.data(); }
  std::size_t size() const { return size_; }

 private:
  static constexpr std::size_t kInlineBytes = 64;
  std::array<std::byte, kInlineBytes> inline_{};
  std::unique_ptr<std::byte[]> heap_;
  std::size_t size_ = 0;
};

class WaitGroup;

struct Task {
  TaskFunction fn = nullptr;
  ArgsCopy args;
  // Where its end goes: the spawner's node, its group there (a pointer only on that node), and
  // the spawner's arguments there, which this copy overwrites when the task ends (0: it does not).
  int origin = -1;
  std::uint64_t group = 0;
  std::uint64_t args_address = 0;
  // What the nodes it came through released for it; acquired before it runs (a spawn is a
  // release, a task's start an acquire). Empty for a task that never left its spawner's node.
  std::vector<std::string> releases;
  // Who spawned it, for a crash report; computed only when the task leaves its node.
  std::string spawner;
  TaskFunction spawner_fn = nullptr;  // the spawning task's function, nullptr for a thread
};

// A result that came from another node: what its task's copy of the arguments became, and what
// the task released at its end (acquired by the waiter before it writes the copy back).
struct EndedElsewhere {
  std::uint64_t args_address = 0;
  std::string args;
  std::string release;
};

// The tasks one task (or one thread) spawned and still waits for. Each counts until it and all
// it spawned have ended, so a wait on the group covers the descendants too.
//
// The count falls under the group's mutex: the waiter may destroy the group (it lives on the
// stack of the task it belongs to) as soon as it has seen zero under the mutex, so the last
// decrement and its wake-up must be over by then.
class WaitGroup {
 public:
  // Which kind of caller waits on it, so that the last task to end wakes it the right way.
  enum class Sleeper { kNone, kOsThread, kFiber, kRunner };

  std::mutex mutex;
  std::condition_variable woken;  // a plain OS thread's sleep
  std::atomic<std::int64_t> pending{0};
  // Set (seq_cst) by a runner before it looks at pending for the last time and sleeps on the
  // runtime's condition, which the last decrement then notifies (tasks/runtime.cc, Serve).
  std::atomic<bool> runner_sleeping{false};
  Sleeper sleeper = Sleeper::kNone;             // guarded by mutex
  void* fiber = nullptr;                        // guarded by mutex: the parked user-level thread
  std::vector<EndedElsewhere> ended_elsewhere;  // guarded by mutex
  std::atomic<bool> any_left{false};            // a task of this group ran on another node
};

}  // namespace internal
}  // namespace lmdx::tasks

#endif  // LMDX_TASKS_INTERNAL_TASK_H_

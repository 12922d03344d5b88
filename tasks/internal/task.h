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
  ArgsCopy(const ArgsCopy&) = delete;
  ArgsCopy& operator=(const ArgsCopy&) = delete;
  // Copies size bytes at bytes, in place (no temporary whose unused inline bytes would move).
  void Assign(const void* bytes, std::size_t size) {
    size_ = size;
    heap_.reset();
    if (size > inline_.size()) heap_ = std::make_unique<std::byte[]>(size);
    if (size > 0) std::memcpy(data(), bytes, size);
  }
  std::byte* data() { return heap_ ? heap_.get() : inline_.data(); }
  const std::byte* data() const { return heap_ ? heap_.get() : inline_.data(); }
  std::size_t size() const { return size_; }

 private:
  static constexpr std::size_t kInlineBytes = 64;
  std::array<std::byte, kInlineBytes> inline_;  // not zeroed: a spawn writes what it uses
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
  bool write_back = false;
  // Nonzero once the task left its origin: the number under which the origin keeps its group and
  // arguments' address (a remote node never sees either).
  std::uint64_t out_id = 0;
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

// A task of this node's that runs on another: where its end goes when it comes back.
struct OutTask {
  std::uint64_t group = 0;  // its WaitGroup's address
  std::uint64_t args_address = 0;
  std::size_t args_size = 0;
};

// The tasks one task (or one thread) spawned and still waits for. Each counts until it and all
// it spawned have ended, so a wait on the group covers the descendants too.
//
// One atomic word holds the count and two flags, so that a task's end costs one atomic decrement
// when its waiter is not asleep (the common case: a runner runs its own children). A waiter that
// sleeps sets kSleeping first; the end that brings the count to zero while it is set owes the
// waiter a wake-up, and sets kWoken under the lock the waiter sleeps with once it is done with
// the group. The waiter leaves only when the count is zero and no wake-up is owed: the group
// lives on the stack of the task it belongs to, and must outlast every touch of it.
class WaitGroup {
 public:
  WaitGroup() = default;
  WaitGroup(const WaitGroup&) = delete;
  WaitGroup& operator=(const WaitGroup&) = delete;

  // Which kind of caller sleeps on it, so that the last task to end wakes it the right way.
  enum class Sleeper { kNone, kOsThread, kFiber, kRunner };

  static constexpr std::int64_t kCount = (std::int64_t{1} << 40) - 1;
  static constexpr std::int64_t kSleeping = std::int64_t{1} << 40;
  static constexpr std::int64_t kWoken = std::int64_t{1} << 41;

  static std::int64_t CountOf(std::int64_t state) { return state & kCount; }
  // Nothing pending and no wake-up owed: the waiter may go (and the group may end).
  static bool Released(std::int64_t state) {
    return CountOf(state) == 0 && ((state & kSleeping) == 0 || (state & kWoken) != 0);
  }

  std::atomic<std::int64_t> state{0};
  // Written by the waiter before it sets kSleeping, read by the end that owes it the wake-up.
  Sleeper sleeper = Sleeper::kNone;
  void* fiber = nullptr;  // the parked user-level thread, for kFiber
  std::mutex mutex;       // kOsThread and kFiber sleep with it; kRunner with the runtime's
  // A plain OS thread's condition, for kOsThread: only callers that are not tasks sleep on their
  // group, so a task's own group (one per task run) carries none.
  std::condition_variable* woken = nullptr;
  std::vector<EndedElsewhere> ended_elsewhere;  // guarded by mutex
  std::atomic<bool> any_left{false};            // a task of this group went to another node
  // A task of this group writes its copy back into the stack frame of the task that owns the
  // group (set by spawns from a running task): that task must wait before it returns.
  bool writes_into_frame = false;
};

// The group of a caller that is not a task (main, an LMDX thread), with the condition it sleeps on.
struct CallerGroup {
  WaitGroup group;
  std::condition_variable woken;
};

}  // namespace internal
}  // namespace lmdx::tasks

#endif  // LMDX_TASKS_INTERNAL_TASK_H_

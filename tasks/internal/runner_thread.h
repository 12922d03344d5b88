// An OS thread with a large stack, for the task runners: a task that waits runs other tasks on
// its own stack, and under the pushing schedulers tasks from other nodes nest there too, so a
// runner's stack must hold far more than the 8 MiB default. The stack is address space only
// until used. Private to tasks/.
#ifndef LMDX_TASKS_INTERNAL_RUNNER_THREAD_H_
#define LMDX_TASKS_INTERNAL_RUNNER_THREAD_H_

#include <pthread.h>

#include <cstddef>
#include <functional>
#include <memory>

namespace lmdx::tasks::internal {

class RunnerThread {
 public:
  static constexpr std::size_t kStackBytes = std::size_t{256} << 20;

  explicit RunnerThread(std::function<void()> body);
  ~RunnerThread();  // joins
  RunnerThread(const RunnerThread&) = delete;
  RunnerThread& operator=(const RunnerThread&) = delete;

  void Join();

 private:
  pthread_t thread_{};
  bool joinable_ = false;
};

// Bytes left on the calling thread's stack below the caller's frame.
std::size_t StackLeft();
// True when address lies on the calling thread's stack below top (in frames deeper than the one
// that holds top).
bool OnStackBelow(const void* address, const void* top);

}  // namespace lmdx::tasks::internal

#endif  // LMDX_TASKS_INTERNAL_RUNNER_THREAD_H_

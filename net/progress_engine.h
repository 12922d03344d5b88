#ifndef LMDX_NET_PROGRESS_ENGINE_H_
#define LMDX_NET_PROGRESS_ENGINE_H_

#include <sys/epoll.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/fd.h"

namespace lmdx::net {

// One thread per node that waits on epoll for every transport's file descriptors and runs their
// callbacks. It sleeps in epoll_wait when there is nothing to do: on a two-core machine a
// spinning progress thread would take half the machine from the computation.
//
// Callbacks run on the progress thread and must not block; work that must wait is parked and
// resumed by a later event (deferred replies in net/node.h).
class ProgressEngine {
 public:
  using IoCallback = std::function<void(std::uint32_t events)>;
  using Task = std::function<void()>;

  ProgressEngine();
  ~ProgressEngine();
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  void Start();
  // Stops the thread after the callback it is running; safe to call more than once.
  void Stop();

  // Registers fd for the given epoll events. Any thread may call these.
  void Add(int fd, std::uint32_t events, IoCallback callback);
  void Modify(int fd, std::uint32_t events);
  // After Remove returns on the progress thread, the callback will not run again; from another
  // thread it may still be running once.
  void Remove(int fd);

  // Runs task on the progress thread soon (wakes it through an eventfd).
  void Post(Task task);
  // Runs task on the progress thread after delay_ms, for timeouts; coarse (10 ms) by design.
  void PostAfter(int delay_ms, Task task);

  bool OnProgressThread() const { return std::this_thread::get_id() == thread_id_; }

 private:
  struct Registration {
    IoCallback callback;
  };
  void Run();
  void RunPosted();
  int NextTimeoutMs();

  Fd epoll_fd_;
  Fd wake_fd_;
  std::thread thread_;
  std::thread::id thread_id_;
  std::atomic<bool> stopping_{false};

  std::mutex mutex_;  // guards the tables below
  std::unordered_map<int, std::shared_ptr<Registration>> registrations_;
  std::vector<Task> posted_;
  struct Timer {
    std::int64_t due_ms;
    Task task;
  };
  std::vector<Timer> timers_;
};

}  // namespace lmdx::net

#endif  // LMDX_NET_PROGRESS_ENGINE_H_

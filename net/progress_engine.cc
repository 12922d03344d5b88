#include "net/progress_engine.h"

#include <sys/eventfd.h>
#include <time.h>

#include <algorithm>
#include <cerrno>

#include "base/error.h"
#include "base/log.h"

namespace lmdx::net {
namespace {

std::int64_t NowMs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1000000;
}

}  // namespace

ProgressEngine::ProgressEngine()
    : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)), wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!epoll_fd_) ThrowSystemError("epoll_create1", errno, LMDX_ERR_INTERNAL);
  if (!wake_fd_) ThrowSystemError("eventfd", errno, LMDX_ERR_INTERNAL);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = wake_fd_.get();
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &event) != 0) {
    ThrowSystemError("epoll_ctl(eventfd)", errno, LMDX_ERR_INTERNAL);
  }
}

ProgressEngine::~ProgressEngine() { Stop(); }

void ProgressEngine::Start() {
  thread_ = std::thread([this] { Run(); });
  thread_id_ = thread_.get_id();
}

void ProgressEngine::Stop() {
  if (stopping_.exchange(true)) {
    if (thread_.joinable() && !OnProgressThread()) thread_.join();
    return;
  }
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
  if (thread_.joinable()) {
    if (OnProgressThread()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }
}

void ProgressEngine::Add(int fd, std::uint32_t events, IoCallback callback) {
  {
    std::lock_guard lock(mutex_);
    registrations_[fd] = std::make_shared<Registration>(Registration{std::move(callback)});
  }
  epoll_event event{};
  event.events = events;
  event.data.fd = fd;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
    int saved = errno;
    std::lock_guard lock(mutex_);
    registrations_.erase(fd);
    ThrowSystemError("epoll_ctl(ADD)", saved);
  }
}

void ProgressEngine::Modify(int fd, std::uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.fd = fd;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, fd, &event) != 0 && errno != ENOENT &&
      errno != EBADF) {
    ThrowSystemError("epoll_ctl(MOD)", errno);
  }
}

void ProgressEngine::Remove(int fd) {
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  std::lock_guard lock(mutex_);
  registrations_.erase(fd);
}

void ProgressEngine::Post(Task task) {
  {
    std::lock_guard lock(mutex_);
    posted_.push_back(std::move(task));
  }
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
}

void ProgressEngine::PostAfter(int delay_ms, Task task) {
  {
    std::lock_guard lock(mutex_);
    timers_.push_back(Timer{NowMs() + delay_ms, std::move(task)});
  }
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
}

int ProgressEngine::NextTimeoutMs() {
  std::lock_guard lock(mutex_);
  if (timers_.empty()) return -1;
  std::int64_t now = NowMs();
  std::int64_t soonest = timers_.front().due_ms;
  for (const Timer& timer : timers_) soonest = std::min(soonest, timer.due_ms);
  return static_cast<int>(std::clamp<std::int64_t>(soonest - now, 0, 10000));
}

void ProgressEngine::RunPosted() {
  std::vector<Task> tasks;
  std::vector<Task> due;
  {
    std::lock_guard lock(mutex_);
    tasks.swap(posted_);
    std::int64_t now = NowMs();
    auto first_due = std::partition(timers_.begin(), timers_.end(),
                                    [now](const Timer& timer) { return timer.due_ms > now; });
    for (auto it = first_due; it != timers_.end(); ++it) due.push_back(std::move(it->task));
    timers_.erase(first_due, timers_.end());
  }
  for (Task& task : tasks) task();
  for (Task& task : due) task();
}

void ProgressEngine::Run() {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  while (!stopping_.load(std::memory_order_acquire)) {
    int count = ::epoll_wait(epoll_fd_.get(), events, kMaxEvents, NextTimeoutMs());
    if (count < 0) {
      if (errno == EINTR) continue;
      LogLine(SystemErrorText("progress engine: epoll_wait", errno));
      return;
    }
    for (int i = 0; i < count && !stopping_.load(std::memory_order_acquire); ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_.get()) {
        std::uint64_t value;
        [[maybe_unused]] ssize_t n = ::read(wake_fd_.get(), &value, sizeof value);
        continue;
      }
      std::shared_ptr<Registration> registration;
      {
        std::lock_guard lock(mutex_);
        auto it = registrations_.find(fd);
        if (it == registrations_.end()) continue;
        registration = it->second;
      }
      registration->callback(events[i].events);
    }
    RunPosted();
  }
}

}  // namespace lmdx::net

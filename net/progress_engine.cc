#include "net/progress_engine.h"

#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"

namespace lmdx::net {
namespace {

thread_local bool in_dispatch = false;

}  // namespace

ProgressEngine::ProgressEngine()
    : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)),
      outer_fd_(::epoll_create1(EPOLL_CLOEXEC)),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!epoll_fd_ || !outer_fd_) ThrowSystemError("epoll_create1", errno, LMDX_ERR_INTERNAL);
  if (!wake_fd_) ThrowSystemError("eventfd", errno, LMDX_ERR_INTERNAL);
  // The wake descriptor is the progress thread's alone: were it in the event set, a driver that
  // polls the set could drain a wake-up meant for the progress thread before it ran, and it would
  // sleep on (with a driver's lazy pollers left disarmed and no window to arm them).
  for (int fd : {wake_fd_.get(), epoll_fd_.get()}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (::epoll_ctl(outer_fd_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
      ThrowSystemError("epoll_ctl", errno, LMDX_ERR_INTERNAL);
    }
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
    has_posted_.store(true, std::memory_order_release);
  }
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
}

void ProgressEngine::PostAfter(int delay_ms, Task task) {
  std::int64_t due_ms = MonotonicMs() + delay_ms;
  {
    std::lock_guard lock(mutex_);
    timers_.push_back(Timer{due_ms, std::move(task)});
  }
  // The progress thread reads the timers after every wake-up, before it sleeps again: one that
  // sleeps until no later than this timer is due finds it then, and waking it now to shorten a
  // sleep it will not outlast would only take a core (a wait for a receive starts a timer per
  // large message). A thread awake (0) or asleep for longer is woken.
  std::int64_t wakes_by_ns = wakes_by_ns_.load(std::memory_order_acquire);
  if (wakes_by_ns != 0 && wakes_by_ns <= due_ms * 1000000) return;
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
}

bool ProgressEngine::ThisThreadWillPoll() const {
  return !InDispatch() && !stopping_.load(std::memory_order_acquire) && Completion::WaitPollsHere();
}

namespace {
// Set by LookAgainForThisWait on a thread about to drive; DriveBriefly takes it.
thread_local bool look_again_if_wait_not_done = false;
}  // namespace

void ProgressEngine::LookAgainForThisWait() {
  if (ThisThreadWillPoll()) {
    look_again_if_wait_not_done = true;
    return;
  }
  Post([] {});
}

int ProgressEngine::NextTimeoutMs() {
  std::lock_guard lock(mutex_);
  if (timers_.empty()) return -1;
  std::int64_t now = MonotonicMs();
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
    has_posted_.store(false, std::memory_order_release);
    std::int64_t now = MonotonicMs();
    auto first_due = std::partition(timers_.begin(), timers_.end(),
                                    [now](const Timer& timer) { return timer.due_ms > now; });
    for (auto it = first_due; it != timers_.end(); ++it) due.push_back(std::move(it->task));
    timers_.erase(first_due, timers_.end());
  }
  for (Task& task : tasks) task();
  for (Task& task : due) task();
}

bool ProgressEngine::InDispatch() const { return in_dispatch || OnProgressThread(); }

bool ProgressEngine::DispatchLocked(const epoll_event* events, int count) {
  in_dispatch = true;
  for (int i = 0; i < count && !stopping_.load(std::memory_order_acquire); ++i) {
    int fd = events[i].data.fd;
    std::shared_ptr<Registration> registration;
    {
      std::lock_guard lock(mutex_);
      auto it = registrations_.find(fd);
      if (it == registrations_.end()) continue;
      registration = it->second;
    }
    // The same ready socket may be reported to two threads; a callback that finds nothing to do
    // returns at once (EAGAIN).
    registration->callback(events[i].events);
  }
  bool found = PollAll();
  RunPosted();
  in_dispatch = false;
  return found;
}

// The pollers are read under the dispatch lock (polls) or the pollers' lock (arming and
// disarming), so one comes or goes under both; a driver's rounds then take no lock but the
// dispatch lock. Which kinds there are is part of what the quick lane relies on.
void ProgressEngine::AddPoller(Poller* poller) {
  std::unique_lock dispatch_lock(dispatch_mutex_, std::defer_lock);
  if (!in_dispatch) dispatch_lock.lock();  // a callback that adds one holds it already
  std::lock_guard drivers_lock(drivers_mutex_);
  CloseQuickLaneLocked();
  std::lock_guard lock(pollers_mutex_);
  pollers_.push_back(poller);
  PollersOf(poller->ArmsLazily()).fetch_add(1, std::memory_order_release);
}

void ProgressEngine::RemovePoller(Poller* poller) {
  std::unique_lock dispatch_lock(dispatch_mutex_, std::defer_lock);
  if (!in_dispatch) dispatch_lock.lock();
  std::lock_guard drivers_lock(drivers_mutex_);
  CloseQuickLaneLocked();
  std::lock_guard lock(pollers_mutex_);
  if (std::erase(pollers_, poller) == 0) return;
  PollersOf(poller->ArmsLazily()).fetch_sub(1, std::memory_order_release);
}

bool ProgressEngine::PollAll() {
  bool found = false;
  for (Poller* poller : pollers_) found |= poller->Poll();
  return found;
}

void ProgressEngine::DriveBriefly(Completion& completion) {
  // Whoever must look again for this wait is told once the drive ends without it (or at once).
  bool look_again = std::exchange(look_again_if_wait_not_done, false);
  if (InDispatch() || stopping_.load(std::memory_order_acquire)) {
    if (look_again) Post([] {});
    return;
  }
  constexpr int kMaxEvents = 16;
  epoll_event events[kMaxEvents];
  BeginDriving();
  // The budget counts idle time only: while frames keep arriving (a large message streaming in)
  // this thread goes on reading them rather than handing over to the progress thread midway.
  std::int64_t budget_ns = std::int64_t{drive_micros_.load(std::memory_order_relaxed)} * 1000 *
                           (completion.waits_in_bursts() ? kConversationDriveFactor : 1);
  // The clock is read once per batch of rounds only (kRoundsPerClockRead): a round that finds
  // nothing takes a fraction of a microsecond, and a clock read (27 ns here) each time was a fifth
  // of it. A wait whose answer comes within the first batch reads it not at all: idle time counts
  // from the first check after the last batch that found something.
  std::int64_t idle_since = 0;
  bool found_since_check = true;
  bool first_batch = true;
  auto within_budget = [&] {
    if (std::exchange(first_batch, false)) return true;
    std::int64_t now = MonotonicNs();
    if (found_since_check) idle_since = now;
    found_since_check = false;
    return now - idle_since < budget_ns;
  };
  while (!completion.done() && within_budget()) {
    std::unique_lock lock(dispatch_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) {
      // The progress thread dispatches, most likely what this thread waits for. On a machine
      // with no core to spare it may have been preempted holding the lock: give it this core
      // rather than spin out the budget against it.
      std::this_thread::yield();
      continue;
    }
    in_dispatch = true;
    bool found = false;
    if (!event_set_taken_) {
      // The progress thread keeps the event set; rings are all this thread needs to watch. The
      // dispatch lock is kept for the rounds between two looks at the clock: taking and giving
      // it back each round was most of what a round that finds nothing costs, and so of the
      // time an arriving frame waits to be seen.
      for (unsigned round = 0; round < kRoundsPerClockRead && !completion.done(); ++round) {
        found |= PollAll();
        if (has_posted_.load(std::memory_order_acquire)) {
          // A frame a node sent itself (a manager answering its own node) is a posted task:
          // run it here rather than wait for the progress thread to wake for it.
          RunPosted();
          found = true;
          break;
        }
      }
      in_dispatch = false;
      found_since_check |= found;
      continue;
    }
    found = PollAll();
    in_dispatch = false;
    int count = ::epoll_wait(epoll_fd_.get(), events, kMaxEvents, 0);
    if (count > 0) {
      DispatchLocked(events, count);  // runs posted tasks too
      found = true;
    } else if (has_posted_.load(std::memory_order_acquire)) {
      in_dispatch = true;
      RunPosted();
      in_dispatch = false;
      found = true;
    }
    found_since_check |= found;
  }
  // The size is read only once the completion is done: it is written before the signal.
  bool done = completion.done();
  bool satisfied = done && completion.waits_in_bursts();
  bool small = completion.bytes_moved() <= Completion::kSmallTransferBytes ||
               large_transfers_stay_lazy_.load(std::memory_order_relaxed);
  EndDriving(satisfied, satisfied && small);
  if (look_again && !done) Post([] {});
}

void ProgressEngine::Run() {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  // A poll that found something looks again before sleeping: a poller may take one round's worth
  // a call (a UCX worker) and leave the rest for the next.
  bool poll_again = false;
  while (!stopping_.load(std::memory_order_acquire)) {
    epoll_event outer[2];
    int timeout_ms = NextTimeoutMs();
    std::int64_t timeout_ns = timeout_ms < 0 ? -1 : std::int64_t{timeout_ms} * 1000000;
    {
      std::lock_guard lock(drivers_mutex_);
      timeout_ns = PrepareSleepLocked(timeout_ns);
    }
    // Something waits already (a poller armed just now had a frame): dispatch whatever follows.
    const bool must_dispatch = poll_again || timeout_ns == 0;
    if (poll_again) timeout_ns = 0;
    timespec timeout{timeout_ns / 1000000000, timeout_ns % 1000000000};
    int ready =
        ::epoll_pwait2(outer_fd_.get(), outer, 2, timeout_ns < 0 ? nullptr : &timeout, nullptr);
    wakes_by_ns_.store(0, std::memory_order_relaxed);
    if (ready < 0) {
      if (errno == EINTR) continue;
      LogLine(SystemErrorText("progress engine: epoll_wait", errno));
      return;
    }
    for (int i = 0; i < ready; ++i) {
      if (outer[i].data.fd != wake_fd_.get()) continue;
      std::uint64_t value;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_.get(), &value, sizeof value);
    }
    // Woken by its own timeout (a lazy window's end), with no timer due, while the conversation
    // goes on (a thread drives, or drivers received within the window): the drivers poll every
    // poller and will be back, and taking the dispatch lock, or the UCX lock behind it, from a
    // thread that moves a large message would only be waited for, a futex sleep and two context
    // switches each time (in a 1 MiB conversation over UCX tcp, about one per message). The look
    // at the window is done; the next window starts, and ends the conversation if it passes
    // without a receive.
    if (ready == 0 && !must_dispatch && NextTimeoutMs() != 0 && ConversationGoesOn()) continue;
    {
      std::lock_guard lock(dispatch_mutex_);
      int count = ::epoll_wait(epoll_fd_.get(), events, kMaxEvents, 0);
      poll_again = DispatchLocked(events, std::max(count, 0));
    }
    if (linger_wanted_.exchange(false, std::memory_order_acq_rel)) LingerAfterActivity();
  }
}

// A peer in a burst of requests (a node faulting on page after page, a lock passed around) sends
// the next one within microseconds of the last answer. Only serving a request asks for this
// (WantLinger): after plain messages and replies the application threads poll for themselves,
// and a progress thread spinning beside them would only take their cores. Polling the rings a
// little longer answers it at once instead of after a wake-up of this thread, which costs tens of
// microseconds on a virtual machine; the linger ends after the same idle budget a waiting thread
// drives, and is off when the host has more nodes than cores.
void ProgressEngine::LingerAfterActivity() {
  std::int64_t budget_ns = std::int64_t{drive_micros_.load(std::memory_order_relaxed)} * 1000;
  if (budget_ns == 0 || !HaveAnyPollers()) return;
  {
    std::lock_guard lock(drivers_mutex_);
    if (DriversIn(CloseQuickLaneLocked()) != 0) {
      OpenQuickLaneIfItFitsLocked();  // nothing changed
      return;                         // an application thread is polling already
    }
    StartPollingLocked(/*take_event_set=*/false);
  }
  constexpr int kMaxEvents = 16;
  epoll_event events[kMaxEvents];
  std::int64_t last_event = MonotonicNs();
  while (!stopping_.load(std::memory_order_acquire) && MonotonicNs() - last_event < budget_ns) {
    // A waiting application thread polls now: two pollers would only share the cores.
    if (Drivers() != 0) return;
    std::unique_lock lock(dispatch_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) continue;
    in_dispatch = true;
    bool found = PollAll();
    if (has_posted_.load(std::memory_order_acquire)) {
      RunPosted();
      found = true;
    }
    in_dispatch = false;
    if (!pollers_only_.load(std::memory_order_relaxed)) {
      int count = ::epoll_wait(epoll_fd_.get(), events, kMaxEvents, 0);
      if (count > 0) {
        DispatchLocked(events, count);
        found = true;
      }
    }
    if (found) last_event = MonotonicNs();
  }
}

}  // namespace lmdx::net

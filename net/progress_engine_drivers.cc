// The drivers' side of the progress engine (net/progress_engine.h): which thread polls, when the
// pollers are armed and the event set watched, the lazy windows after a conversation's receives,
// and the quick lane through which a conversation's drives begin and end without a lock.
#include "net/progress_engine.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "base/clock.h"

namespace lmdx::net {

void ProgressEngine::SetDrivePollersOnly(bool only) {
  std::lock_guard lock(drivers_mutex_);
  CloseQuickLaneLocked();  // the next driver takes the event set or not: the lane's state changes
  pollers_only_.store(only, std::memory_order_relaxed);
}

bool ProgressEngine::HavePollers(Laziness laziness) {
  return PollersOf(laziness).load(std::memory_order_acquire) > 0;
}

bool ProgressEngine::HaveAnyPollers() {
  return HavePollers(Laziness::kEager) || HavePollers(Laziness::kAfterReceives) ||
         HavePollers(Laziness::kAfterSmallReceives);
}

template <typename Call>
bool ProgressEngine::ForEachPollerOf(Laziness laziness, Call call) {
  if (!HavePollers(laziness)) return false;
  std::lock_guard lock(pollers_mutex_);
  for (Poller* poller : pollers_) {
    if (poller->ArmsLazily() == laziness) call(*poller);
  }
  return true;
}

bool ProgressEngine::ArmEveryPollerLocked() {
  bool waiting = ArmPollers(Laziness::kEager);
  waiting |= ArmPollers(Laziness::kAfterReceives);
  waiting |= ArmPollers(Laziness::kAfterSmallReceives);
  lazy_armed_ = true;
  small_lazy_armed_ = true;
  return waiting;
}

bool ProgressEngine::ArmPollers(Laziness laziness) {
  bool waiting = false;
  ForEachPollerOf(laziness, [&waiting](Poller& poller) { waiting |= poller.Arm(); });
  return waiting;
}

bool ProgressEngine::DisarmPollers(Laziness laziness) {
  return ForEachPollerOf(laziness, [](Poller& poller) { poller.Disarm(); });
}

// The event set stays registered in the outer set; taking it from the progress thread only
// clears its interest (EPOLL_CTL_MOD), which costs 0.5 us a wait on this machine where removing
// and adding it again cost 1.2 us, a fifth of a TCP ping-pong's half round trip.
void ProgressEngine::WatchEventSetLocked(bool watch) {
  if (event_set_watched_ == watch) return;
  event_set_watched_ = watch;
  epoll_event event{};
  event.events = watch ? std::uint32_t{EPOLLIN} : 0;
  event.data.fd = epoll_fd_.get();
  ::epoll_ctl(outer_fd_.get(), EPOLL_CTL_MOD, epoll_fd_.get(), &event);
}

// Pollers are disarmed while a thread drives (it polls them) and armed again when the last one
// leaves, so that a writer signals only when nobody would otherwise look.
void ProgressEngine::BeginDriving() {
  if (TryBeginQuickly()) return;
  std::lock_guard lock(drivers_mutex_);
  if (DriversIn(drive_word_.fetch_add(1, std::memory_order_acq_rel)) != 0) return;
  event_set_taken_ = !pollers_only_.load(std::memory_order_relaxed);
  StartPollingLocked(event_set_taken_);
}

// Lazy pollers left disarmed, and an event set left with the drivers, by the last driver of a
// conversation cost nothing to take again.
void ProgressEngine::StartPollingLocked(bool take_event_set) {
  // Taken, or given back when this poller will not look at it (the progress thread lingers, or
  // the drivers came to poll only pollers): nobody would hear it otherwise.
  WatchEventSetLocked(!take_event_set);
  DisarmPollers(Laziness::kEager);
  if (lazy_armed_) lazy_armed_ = !DisarmPollers(Laziness::kAfterReceives);
  if (small_lazy_armed_) small_lazy_armed_ = !DisarmPollers(Laziness::kAfterSmallReceives);
}

// A driver that received a message leaves the lazy pollers disarmed for a while: in a
// conversation it is back polling within microseconds, and arming a UCX worker between two
// messages cost more than the messages. After a small message it leaves the event set with the
// drivers too (two epoll_ctl a wait, a tenth of a udp or tcp half round trip); after a large one
// it gives the set back, since the progress thread's wake-up at each window's end took a core
// from a thread that copied a large message (tcp lost a tenth of its 1 MiB rate). The progress
// thread arms and watches them when a whole window passes with nobody receiving
// (PrepareSleepLocked). It is woken for that only when it sleeps with no window; each window
// that a conversation outlasts doubles the next, up to kMaxLazyWindowNs, since its wake-up at the
// end of each takes a core from a polling thread. A driver whose budget ran out, or that waited
// for a request's answer, arms everything: it goes to sleep or computes, and something must hear
// the next frame at once.
void ProgressEngine::EndDriving(bool satisfied, bool small) {
  bool stay_lazy = satisfied && LazyGraceNs() > 0;
  if (stay_lazy && small && TryEndQuickly()) return;
  std::lock_guard lock(drivers_mutex_);
  // The last driver closes the quick lane in the same step: what it does next may change what
  // the lane relies on, and no quick drive may begin in between.
  std::uint64_t word = drive_word_.load(std::memory_order_relaxed);
  std::uint64_t after;
  do {
    after = word - 1;
    if (DriversIn(word) == 1) after &= ~kQuickLane;
  } while (!drive_word_.compare_exchange_weak(word, after, std::memory_order_acq_rel,
                                              std::memory_order_relaxed));
  if (DriversIn(word) != 1) return;
  if (!(stay_lazy && small && event_set_taken_)) WatchEventSetLocked(true);
  // Something arrived after the last poll: the progress thread takes it.
  bool wake = ArmPollers(Laziness::kEager);
  if (!lazy_armed_ && !stay_lazy) {
    wake |= ArmPollers(Laziness::kAfterReceives);
    lazy_armed_ = true;
  }
  if (!small_lazy_armed_ && !(stay_lazy && small)) {
    wake |= ArmPollers(Laziness::kAfterSmallReceives);
    small_lazy_armed_ = true;
  }
  if (!AllHeardLocked()) {
    // Counted, not timed: a clock read here was a tenth of a shared-memory message's half round
    // trip. The progress thread looks when its window ends; one that sleeps with no window (only
    // an event or a timer would wake it) must wake to start one.
    drive_word_.fetch_add(kReceiveUnit, std::memory_order_acq_rel);
    wake |= lazy_until_ns_ == 0 && wakes_by_ns_.load(std::memory_order_relaxed) != 0;
  }
  if (wake) {
    // Once until it sleeps again: it looks at the pollers before that (PrepareSleepLocked), so
    // the drivers that leave meanwhile need not write. A write per receive while the progress
    // thread waited for a core sometimes kept a ping-pong several times slower for a whole run.
    wakes_by_ns_.store(0, std::memory_order_relaxed);
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
    return;  // the progress thread reopens the lane if it fits once it has looked
  }
  OpenQuickLaneIfItFitsLocked();
}

bool ProgressEngine::TryBeginQuickly() {
  std::uint64_t word = drive_word_.load(std::memory_order_relaxed);
  while ((word & kQuickLane) != 0 && DriversIn(word) == 0) {
    if (drive_word_.compare_exchange_weak(word, word + 1, std::memory_order_acquire,
                                          std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

// Only the last driver may end quickly, and it counts its receive as EndDriving would.
bool ProgressEngine::TryEndQuickly() {
  std::uint64_t word = drive_word_.load(std::memory_order_relaxed);
  while ((word & kQuickLane) != 0 && DriversIn(word) == 1) {
    if (drive_word_.compare_exchange_weak(word, word - 1 + kReceiveUnit, std::memory_order_release,
                                          std::memory_order_relaxed)) {
      quick_drives_.store(quick_drives_.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

bool ProgressEngine::QuickLaneFitsLocked() {
  return lazy_until_ns_ != 0 && LazyGraceNs() > 0 && !AllHeardLocked() &&
         !HavePollers(Laziness::kEager) &&
         (!lazy_armed_ || !HavePollers(Laziness::kAfterReceives)) &&
         (!small_lazy_armed_ || !HavePollers(Laziness::kAfterSmallReceives)) &&
         event_set_watched_ == !event_set_taken_ &&
         event_set_taken_ == !pollers_only_.load(std::memory_order_relaxed);
}

void ProgressEngine::OpenQuickLaneIfItFitsLocked() {
  if (QuickLaneFitsLocked()) drive_word_.fetch_or(kQuickLane, std::memory_order_acq_rel);
}

bool ProgressEngine::ConversationGoesOn() {
  std::lock_guard lock(drivers_mutex_);
  std::uint64_t word = drive_word_.load(std::memory_order_acquire);
  return lazy_until_ns_ != 0 && (DriversIn(word) != 0 || ReceivesIn(word) != window_receives_);
}

std::int64_t ProgressEngine::PrepareSleepLocked(std::int64_t timeout_ns) {
  auto shorten_to = [&timeout_ns](std::int64_t ns) {
    timeout_ns = timeout_ns < 0 ? ns : std::min(timeout_ns, ns);
  };
  // Closed while this thread looks, so that neither count changes under it.
  const std::uint64_t word = CloseQuickLaneLocked();
  const int drivers = DriversIn(word);
  const std::uint64_t receives = ReceivesIn(word);
  std::int64_t now = MonotonicNs();
  // The lazy pollers stay disarmed while a conversation goes on: in windows, each of which ends
  // with a look at whether a driver left them lazy within it (or drives still). So they stay
  // disarmed one to two windows after the last receive.
  bool lazy = !AllHeardLocked() && LazyGraceNs() > 0;
  auto start_window = [&] {
    window_receives_ = receives;
    lazy_until_ns_ = now + std::max(lazy_window_ns_, LazyGraceNs());
  };
  if (!lazy) {
    lazy_until_ns_ = 0;
  } else if (lazy_until_ns_ == 0) {
    // The first look since a driver left them lazy. Pollers disarmed by this thread's own linger
    // (no receive counted) are no conversation: they are armed at once, as a request to a node
    // that served one must be heard.
    if (receives != window_receives_ || drivers != 0) start_window();
  } else if (now >= lazy_until_ns_) {
    if (receives != window_receives_ || drivers != 0) {
      // A window passed and the conversation still goes on: the next is longer, since this
      // thread's wake-up at the end of each takes a core from a polling thread.
      lazy_window_ns_ = std::min(2 * std::max(lazy_window_ns_, LazyGraceNs()), kMaxLazyWindowNs);
      start_window();
    } else {
      lazy_until_ns_ = 0;  // a whole window without a receive: the conversation is over
    }
  }
  bool conversing = lazy_until_ns_ != 0;
  if (conversing) {
    // Nobody drives: writers to this node's rings must signal before this thread sleeps. The
    // drivers, when there are some, poll; the last to leave arms what must be.
    if (drivers == 0 && ArmPollers(Laziness::kEager)) timeout_ns = 0;
    shorten_to(lazy_until_ns_ - now);
  } else if (drivers == 0) {
    if (ArmEveryPollerLocked()) timeout_ns = 0;
    WatchEventSetLocked(true);  // what came meanwhile wakes this thread at once
    lazy_window_ns_ = LazyGraceNs();
  }
  OpenQuickLaneIfItFitsLocked();
  wakes_by_ns_.store(timeout_ns < 0 ? INT64_MAX : now + timeout_ns, std::memory_order_relaxed);
  return timeout_ns;
}

}  // namespace lmdx::net

#ifndef LMDX_NET_COMPLETION_H_
#define LMDX_NET_COMPLETION_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

#include "net/wait_board.h"

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

// Lets a runtime wait yield a user-level thread (threads/) instead of blocking its OS thread. The
// threads layer installs one; net/ knows nothing more of it.
class Parking {
 public:
  virtual ~Parking() = default;
  // The calling user-level thread, or nullptr when the caller is a plain OS thread.
  virtual void* Current() = 0;
  // Parks the calling user-level thread until Wake; a Wake that came first is remembered.
  virtual void Park() = 0;
  // The same, but returns by the deadline at the latest (the caller checks what happened).
  virtual void ParkUntil(std::chrono::steady_clock::time_point deadline) = 0;
  virtual void Wake(void* thread) = 0;
  // True when the calling user-level thread was killed (lmdx_kill_thread) and should stop
  // waiting; its Wake comes after the mark.
  virtual bool Interrupted() = 0;
};

// While one is alive on a thread, waits on it block the OS thread even on a user-level thread: a
// page fault is served inside the SIGSEGV handler, where the signal stays blocked for the OS
// thread until the handler returns, so another user-level thread switched in there could not
// take a fault of its own.
class NoParkingScope {
 public:
  NoParkingScope() { ++depth_; }
  ~NoParkingScope() { --depth_; }
  NoParkingScope(const NoParkingScope&) = delete;
  NoParkingScope& operator=(const NoParkingScope&) = delete;
  static bool active() { return depth_ > 0; }

 private:
  static inline thread_local int depth_ = 0;
};

// Who is calling, as the runtime tells threads apart (a lock's holder, a barrier's participant):
// the LMDX user-level thread when the caller runs on one (several share an OS thread), else the
// OS thread. Never 0.
std::uint64_t CurrentThreadKey();

// A one-shot event an application thread waits on while the network finishes its request (a
// reply, a receive, the send of a borrowed buffer). It is the single place where a runtime call
// blocks: a user-level thread parks here and its worker runs another.
//
// A waiter first polls the network itself for a few tens of microseconds (an answer to a request
// usually comes back within that time), then sleeps until the progress thread signals it. So a
// quick answer costs no wake-up at all, and a slow one costs no spinning.
class Completion {
 public:
  // The process's driver (its node's progress engine), or none: then Wait only sleeps.
  static void SetDriver(CompletionDriver* driver) { driver_.store(driver); }
  static void SetParking(Parking* parking) { parking_.store(parking); }
  static Parking* parking() { return parking_.load(std::memory_order_acquire); }
  // True when a wait on the calling thread would poll the network itself before it sleeps (an
  // OS thread, or one that may not park, with a driver); false when it would park at once.
  static bool WaitPollsHere() {
    if (driver_.load(std::memory_order_acquire) == nullptr) return false;
    Parking* parking = parking_.load(std::memory_order_acquire);
    return parking == nullptr || NoParkingScope::active() || parking->Current() == nullptr;
  }

  // Notifies (and wakes a parked user-level thread) under the lock: the waiter owns this object
  // and may destroy it, and itself end, once it has seen done_ and taken the lock once more, so
  // nothing here touches either after the unlock.
  void Signal() {
    if (driven_here_ == this) {
      // The waiter is this very thread, running callbacks in DriveBriefly: it neither sleeps nor
      // parks, and it looks at done_ once the callback returns. The lock and the notification
      // were a good part of a shared-memory message's receive.
      signalled_here_ = true;
      done_.store(true, std::memory_order_release);
      return;
    }
    std::lock_guard lock(mutex_);
    done_.store(true, std::memory_order_release);
    if (sleeper_) sleeper_->notify_all();
    if (parked_ != nullptr) parking_.load(std::memory_order_acquire)->Wake(parked_);
  }
  enum class Outcome { kDone, kTimedOut, kInterrupted };

  // reason names the wait in a hang report (net/wait_board.h); it lives as long as the call.
  void Wait(const WaitReason* reason = nullptr) {
    if (DoneAndReleased()) return;
    WaitUntilDone(reason);
  }
  // Wait, except that a user-level thread killed while it waits stops waiting and gets false.
  // The caller then withdraws what it waited for (a queued lock request, a posted receive), or,
  // when it is too late for that, waits on with Wait. An OS thread is never interrupted.
  bool WaitUnlessInterrupted(const WaitReason* reason = nullptr) {
    if (DoneAndReleased()) return true;
    std::optional<Outcome> parked = ParkedWait(std::nullopt, /*interruptible=*/true, reason);
    if (parked) return *parked == Outcome::kDone;
    WaitUntilDone(reason);
    return true;
  }
  // False when the time ran out first. A user-level thread parks until then; an OS thread polls
  // the network briefly first, as Wait does, then sleeps.
  bool WaitFor(std::chrono::milliseconds timeout) {
    return WaitForUnlessInterrupted(timeout, /*interruptible=*/false) == Outcome::kDone;
  }
  // WaitFor that a kill interrupts too, as WaitUnlessInterrupted.
  Outcome WaitForUnlessInterrupted(std::chrono::milliseconds timeout, bool interruptible = true) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    if (std::optional<Outcome> parked = ParkedWait(deadline, interruptible)) return *parked;
    DriveBriefly();
    std::unique_lock lock(mutex_);
    return Sleeper().wait_until(lock, deadline, [this] { return done(); }) ? Outcome::kDone
                                                                           : Outcome::kTimedOut;
  }
  bool done() const { return done_.load(std::memory_order_acquire); }
  // The calling thread waits for this and polls the network for it (DriveBriefly) right now:
  // a Signal from it takes no lock and wakes nobody.
  bool DrivenOnThisThread() const { return driven_here_ == this; }
  // The waiter is likely to wait again within microseconds once this is done (a message receive
  // in a conversation), so pollers whose arming costs system calls may stay disarmed for a while
  // after it (ProgressEngine::Poller::ArmsLazily). Requests whose answer lets the program compute
  // on (a page, a lock, a barrier) leave it off: a request to this node must then be heard at once.
  void SetWaitsInBursts() { waits_in_bursts_ = true; }
  bool waits_in_bursts() const { return waits_in_bursts_; }
  // How much data the awaited exchange moved (a message's payload), set before Signal. After a
  // small one the event set too stays with polling threads for the lazy window; a large one takes
  // long enough that the progress thread's wake-ups at the window's end would cost more than the
  // system calls it spares (ProgressEngine::EndDriving).
  static constexpr std::size_t kSmallTransferBytes = 16 * 1024;
  void SetBytesMoved(std::size_t bytes) { bytes_moved_ = bytes; }
  std::size_t bytes_moved() const { return bytes_moved_; }

 private:
  // Done, and the signaller is out of Signal: the lock taken once after done_ is seen is what
  // lets the waiter destroy this object (see Signal). Spares a wait already over the board.
  bool DoneAndReleased() {
    if (!done()) return false;
    if (signalled_here_) return true;  // no other thread was ever in Signal
    std::lock_guard lock(mutex_);
    return true;
  }

  // A wait enters the board (net/wait_board.h) only once its thread stops polling and sleeps or
  // parks: a wait that ends while its thread polls, as most message waits do, never blocked, and
  // entering costs two trips through the board's lock.
  void WaitUntilDone(const WaitReason* reason) {
    if (ParkedWait(std::nullopt, /*interruptible=*/false, reason)) return;
    DriveBriefly();
    if (DoneAndReleased()) return;
    wait_board::Waiting waiting(reason);
    std::unique_lock lock(mutex_);
    Sleeper().wait(lock, [this] { return done(); });
  }

  // A user-level thread lets the others of its worker run rather than poll the network: it parks
  // until done, the deadline or (when interruptible) its kill. nullopt for a plain OS thread,
  // which waits in the caller's own way.
  // reason: the untimed wait this is, entered on the board; nullptr for a timed wait.
  std::optional<Outcome> ParkedWait(std::optional<std::chrono::steady_clock::time_point> deadline,
                                    bool interruptible, const WaitReason* reason = nullptr) {
    Parking* parking = parking_.load(std::memory_order_acquire);
    void* self = parking != nullptr && !NoParkingScope::active() ? parking->Current() : nullptr;
    if (self == nullptr) return std::nullopt;
    std::optional<wait_board::Waiting> waiting;
    if (!deadline) waiting.emplace(reason);
    for (;;) {
      // Asked before the lock: Interrupted takes the threads layer's own lock.
      bool interrupted = interruptible && parking->Interrupted();
      {
        std::lock_guard lock(mutex_);
        parked_ = nullptr;
        if (done()) return Outcome::kDone;
        if (interrupted) return Outcome::kInterrupted;
        if (deadline && std::chrono::steady_clock::now() >= *deadline) return Outcome::kTimedOut;
        parked_ = self;
      }
      if (deadline) {
        parking->ParkUntil(*deadline);
      } else {
        parking->Park();
      }
    }
  }

  // The condition variable a sleeping waiter waits on; callers hold mutex_.
  std::condition_variable& Sleeper() {
    if (!sleeper_) sleeper_.emplace();
    return *sleeper_;
  }

  // An OS thread first polls the network itself for a short while (an answer usually comes
  // back within it), then sleeps.
  void DriveBriefly() {
    if (done()) return;
    CompletionDriver* driver = driver_.load(std::memory_order_acquire);
    if (driver == nullptr) return;
    DrivenHere here(this);
    driver->DriveBriefly(*this);
  }
  // Marks the completion this thread drives for, so that a Signal from its own callbacks takes
  // the short way.
  class DrivenHere {
   public:
    explicit DrivenHere(Completion* completion) : previous_(driven_here_) {
      driven_here_ = completion;
    }
    ~DrivenHere() { driven_here_ = previous_; }
    DrivenHere(const DrivenHere&) = delete;
    DrivenHere& operator=(const DrivenHere&) = delete;

   private:
    Completion* previous_;
  };

  static inline std::atomic<CompletionDriver*> driver_{nullptr};
  static inline std::atomic<Parking*> parking_{nullptr};
  static inline thread_local Completion* driven_here_ = nullptr;
  void* parked_ = nullptr;       // the user-level thread parked in Wait, guarded by mutex_
  bool signalled_here_ = false;  // Signal ran on the waiting thread itself (only it touches this)
  bool waits_in_bursts_ = false;
  std::size_t bytes_moved_ = 0;  // written before done_ is set, read only once it is
  std::mutex mutex_;
  // Made by the first waiter that sleeps, under mutex_: most waits end while their thread polls,
  // and destroying a condition variable that was never waited on still cost a locked instruction
  // on every small message's receive.
  std::optional<std::condition_variable> sleeper_;
  std::atomic<bool> done_{false};
};

inline std::uint64_t CurrentThreadKey() {
  Parking* parking = Completion::parking();
  if (void* user_thread = parking != nullptr ? parking->Current() : nullptr) {
    return reinterpret_cast<std::uintptr_t>(user_thread);
  }
  // OS threads get numbers with the top bit set: user-space pointers never have it.
  static std::atomic<std::uint64_t> next{1};
  thread_local const std::uint64_t key = (std::uint64_t{1} << 63) | next.fetch_add(1);
  return key;
}

}  // namespace lmdx::net

#endif  // LMDX_NET_COMPLETION_H_

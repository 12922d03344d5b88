#ifndef LMDX_NET_PROGRESS_ENGINE_H_
#define LMDX_NET_PROGRESS_ENGINE_H_

#include <sys/epoll.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/fd.h"
#include "net/completion.h"

namespace lmdx::net {

// One thread per node that waits on epoll for every transport's file descriptors and runs their
// callbacks. It sleeps in epoll_wait when there is nothing to do: on a two-core machine a
// spinning progress thread would take half the machine from the computation.
//
// Callbacks run on the progress thread and must not block; work that must wait is parked and
// resumed by a later event (deferred replies in net/node.h).
//
// An application thread that waits for the network (net/completion.h) may run the callbacks
// itself for a few tens of microseconds: a mutex keeps callbacks to one thread at a time, so they
// still never run concurrently, and the answer it waits for needs no thread switch to reach it.
class ProgressEngine : public CompletionDriver {
 public:
  // Memory a transport polls without system calls (net/shm/shm_transport.h's rings). A waiting
  // thread polls it in its drive loop; when nobody polls, the poller is armed: writers then
  // signal a descriptor the poller registered with Add, which wakes the progress thread.
  // Polls never overlap one another (the dispatch lock), nor do Arm and Disarm calls (the
  // pollers' lock); but a poll may overlap an Arm or a Disarm, so what both touch must allow it.
  class Poller {
   public:
    virtual ~Poller() = default;
    // Delivers what has arrived; true when it found anything. Runs like an IoCallback.
    virtual bool Poll() = 0;
    // Nobody will poll for a while: ask writers to signal. True when something is already
    // waiting (the caller must poll again instead of sleeping).
    virtual bool Arm() = 0;
    // A thread polls now: writers need not signal.
    virtual void Disarm() = 0;
    // When arming costs system calls (a UCX worker: ucp_worker_arm, epoll_ctl, and a signal the
    // peer must send to an armed worker) or moves cache lines (a ring's flag, which its writer
    // reads on every frame), the poller may stay disarmed for a short grace after a
    // waiting thread got what it waited for, since that thread is likely to wait again at once (a
    // ping-pong, a fault after a fault); the progress thread arms it when the grace ends with
    // nobody polling. kAfterSmallReceives: only after a small message (see EndDriving). A
    // poller's laziness never changes: the engine counts its pollers by kind.
    enum class Laziness { kEager, kAfterReceives, kAfterSmallReceives };
    virtual Laziness ArmsLazily() const { return Laziness::kEager; }
  };

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

  // Pollers stay registered until removed; Remove waits for a poll in progress to end.
  void AddPoller(Poller* poller);
  void RemovePoller(Poller* poller);
  // Waiting threads poll only the pollers, with no system call, and leave the event set with the
  // progress thread: right when every peer of the node is reached through a poller, since taking
  // the event set costs two system calls per wait. Otherwise they also take the event set.
  void SetDrivePollersOnly(bool only);
  // After a wait that moved a large message, the last driver gives the event set back to the
  // progress thread and arms the pollers lazy after small receives, unless told to treat it as a
  // small one here. Giving it back is right over tcp, whose large copies the progress thread's
  // wake-ups at each lazy window's end would slow; over udp the peer's next datagrams then woke
  // the progress thread batch after batch, against the thread about to receive them.
  void SetLargeTransfersStayLazy(bool stay) {
    large_transfers_stay_lazy_.store(stay, std::memory_order_relaxed);
  }

  // Runs task on the progress thread soon (wakes it through an eventfd).
  void Post(Task task);
  // Runs task on the progress thread after delay_ms, for timeouts; coarse (10 ms) by design.
  void PostAfter(int delay_ms, Task task);
  // True when a wait on the calling thread would poll this engine before sleeping (DriveBriefly).
  bool ThisThreadWillPoll() const;
  // Something the calling thread is about to wait for needs a transport to look again (a raw
  // message's data held for the receive just posted). A thread that will poll looks itself, and
  // the progress thread is woken only if it stops polling with its wait not done; one that will
  // not poll wakes it now.
  void LookAgainForThisWait();

  bool OnProgressThread() const { return std::this_thread::get_id() == thread_id_; }
  // True on the progress thread and while a waiting thread runs callbacks: code that must not
  // block (it would stall every connection) checks this.
  bool InDispatch() const;

  // CompletionDriver: polls and dispatches from the calling thread until the completion is done
  // or nothing has arrived for the drive budget.
  void DriveBriefly(Completion& completion) override;
  static constexpr int kDefaultDriveMicros = 50;
  // A driver reads the clock once every this many rounds of polling (see DriveBriefly).
  static constexpr unsigned kRoundsPerClockRead = 32;
  // A receive in a conversation (Completion::waits_in_bursts) polls this many budgets. Its answer
  // usually comes within microseconds, but on a machine with no core to spare the peer is now and
  // then preempted for longer than one budget; a waiter that then sleeps sends the pair through
  // wake-ups and signals, which delay the next answer past the budget too, and the conversation
  // stays on that slow path (over UCX shared memory, 8 B round trips settled at 3.5-5 us in half
  // the runs instead of 1.9). A request whose answer lets the program compute on keeps one
  // budget: a page's home may be computing, and this core may be the one it needs.
  static constexpr int kConversationDriveFactor = 4;
  // 0 makes a waiter poll once and then sleep: right when this host runs more nodes than it has
  // cores, where a polling waiter would hold the core the awaited node needs.
  void SetDriveBudget(int micros) { drive_micros_.store(micros, std::memory_order_relaxed); }
  // Called by a handler that served a request: the asker is likely to send another soon, so the
  // progress thread polls a while before it sleeps.
  void WantLinger() { linger_wanted_.store(true, std::memory_order_release); }
  // How many drives began and ended on the quick lane (no trip through the drivers' lock; see
  // drive_word_). A count for tests and benchmarks, which may miss a few when threads race.
  std::uint64_t quick_drives() const { return quick_drives_.load(std::memory_order_relaxed); }

 private:
  struct Registration {
    IoCallback callback;
  };
  void Run();
  // After serving a request, polls the rings for the drive budget's idle time before sleeping.
  void LingerAfterActivity();
  // Runs the callbacks of events[0..count), polls the pollers, then runs posted tasks and due
  // timers; true when a poller found something. Caller holds dispatch_mutex_.
  bool DispatchLocked(const epoll_event* events, int count);
  void RunPosted();
  // Polls every poller; caller holds dispatch_mutex_. True when any found something.
  bool PollAll();
  using Laziness = Poller::Laziness;
  // Arms the pollers of that laziness; true when one has something waiting.
  bool ArmPollers(Laziness laziness);
  // True when there was any poller of that laziness.
  bool DisarmPollers(Laziness laziness);
  // Calls call(poller) for each poller of that laziness, under pollers_mutex_; false, without
  // taking it, when there is none of that kind.
  template <typename Call>
  bool ForEachPollerOf(Laziness laziness, Call call);
  // Arms the pollers of every laziness and marks the lazy ones armed; true when one has something
  // waiting. Caller holds drivers_mutex_.
  bool ArmEveryPollerLocked();
  // A thread polls from now on: disarms the eager pollers and those lazy ones still armed, and
  // takes the event set when drivers poll it; caller holds drivers_mutex_.
  void StartPollingLocked(bool take_event_set);
  // Before the progress thread sleeps (caller holds drivers_mutex_): arms the pollers that must
  // be, and shortens the sleep to the end of the lazy pollers' grace; returns the timeout in ns
  // (-1: none).
  std::int64_t PrepareSleepLocked(std::int64_t timeout_ns);
  // Within a lazy window, a thread drives or drivers received since it began.
  bool ConversationGoesOn();
  // The shortest time lazy pollers stay disarmed after a receive: twice the drive budget (none
  // when waiters do not poll).
  std::int64_t LazyGraceNs() const {
    return std::int64_t{drive_micros_.load(std::memory_order_relaxed)} * 2000;
  }
  int NextTimeoutMs();

  Fd epoll_fd_;  // every registered descriptor: the event set
  Fd outer_fd_;  // what the progress thread sleeps on: epoll_fd_ (unless drivers have it) and
                 // wake_fd_, which is the progress thread's alone
  Fd wake_fd_;
  std::thread thread_;
  std::thread::id thread_id_;
  std::atomic<bool> stopping_{false};
  std::mutex dispatch_mutex_;  // held while callbacks run, by whichever thread runs them
  // While application threads drive, the event set leaves the progress thread's outer set:
  // otherwise every arriving frame would also wake the progress thread, and on a two-core machine
  // its wake-up takes the core of the very thread that waits.
  void BeginDriving();
  // satisfied: the driver got what it waited for (so it may well wait again soon); small: what it
  // got was small (Completion::kSmallTransferBytes).
  void EndDriving(bool satisfied, bool small);
  // Whether the progress thread's sleep watches the event set (drivers take it while they poll);
  // a system call only when that changes. Caller holds drivers_mutex_.
  void WatchEventSetLocked(bool watch);
  std::atomic<int> drive_micros_{kDefaultDriveMicros};
  std::atomic<bool> large_transfers_stay_lazy_{false};
  std::mutex drivers_mutex_;
  // The drivers' state in one word: how many application threads drive now, how many receives
  // they left lazy pollers disarmed after (the progress thread's windows compare these), and
  // whether the quick lane is open. It is open while a conversation is in its steady state (see
  // QuickLaneFitsLocked): a drive that begins then changes nothing, and one that ends after a
  // small receive in it only counts the receive, so each is one compare-and-swap on this word
  // instead of two trips through drivers_mutex_, whose four locked instructions were a good part
  // of a shared-memory message's way. Whoever changes that state under the lock closes the lane
  // first (CloseQuickLaneLocked), and so sees a count no quick drive can change until it reopens.
  std::atomic<std::uint64_t> drive_word_{0};
  static constexpr std::uint64_t kDriversMask = 0xffff;
  static constexpr std::uint64_t kQuickLane = std::uint64_t{1} << 16;
  static constexpr std::uint64_t kReceiveUnit = std::uint64_t{1} << 32;
  static int DriversIn(std::uint64_t word) { return static_cast<int>(word & kDriversMask); }
  static std::uint64_t ReceivesIn(std::uint64_t word) { return word >> 32; }
  int Drivers() const { return DriversIn(drive_word_.load(std::memory_order_acquire)); }
  // One compare-and-swap each; false when the lane is closed or another thread drives.
  bool TryBeginQuickly();
  bool TryEndQuickly();
  // Closes the lane; returns the word as it was. Caller holds drivers_mutex_.
  std::uint64_t CloseQuickLaneLocked() {
    return drive_word_.fetch_and(~kQuickLane, std::memory_order_acq_rel);
  }
  // Whether a quick drive would leave what a drive through the lock leaves: no eager poller to
  // disarm and arm, the lazy ones disarmed, the event set where the next driver will want it, and
  // a window of the progress thread's open (it looks at the count when the window ends, so a
  // quick end need not wake it). Caller holds drivers_mutex_.
  bool QuickLaneFitsLocked();
  void OpenQuickLaneIfItFitsLocked();
  std::atomic<std::uint64_t> quick_drives_{0};
  std::atomic<bool> linger_wanted_{false};  // a request was served since the last sleep
  // The drivers took the event set from the progress thread (set by the first, under the mutex;
  // read by drivers while they drive).
  bool event_set_taken_ = false;
  // Whether the progress thread's sleep watches the event set, guarded by drivers_mutex_. Like a
  // lazy poller, it stays with the drivers for the lazy window after a small receive.
  bool event_set_watched_ = true;
  std::atomic<bool> pollers_only_{false};
  // Lazy pollers (Poller::ArmsLazily), guarded by drivers_mutex_: whether those of each laziness
  // are armed (true when there are none), and the windows they stay disarmed in after a
  // satisfied wait.
  bool lazy_armed_ = true;
  bool small_lazy_armed_ = true;
  // Everything a sleeping progress thread must hear is armed or watched; caller holds
  // drivers_mutex_.
  bool AllHeardLocked() const { return lazy_armed_ && small_lazy_armed_ && event_set_watched_; }
  // The end of the progress thread's current window (0: none), and how many times drivers had
  // left lazy pollers disarmed when the window began (ReceivesIn(drive_word_) counts them).
  std::int64_t lazy_until_ns_ = 0;
  std::int64_t lazy_window_ns_ = 0;  // a window's length; grows while receives go on
  std::uint64_t window_receives_ = 0;
  static constexpr std::int64_t kMaxLazyWindowNs = 1'000'000;
  // When the progress thread's sleep ends at the latest (monotonic ns; INT64_MAX: only on an
  // event); 0 while it is awake, or woken already, and will look at the lazy pollers before
  // sleeping again. A driver that leaves lazy pollers disarmed wakes it only when it sleeps with
  // no window, and sets this to 0 when it does.
  std::atomic<std::int64_t> wakes_by_ns_{0};

  // pollers_ is read under dispatch_mutex_ (polls) or pollers_mutex_ (arming and disarming),
  // and changed under both.
  std::mutex pollers_mutex_;
  std::vector<Poller*> pollers_;
  // How many pollers of each laziness there are: arming and disarming skip the lock for a kind
  // there is none of (every wait begins and ends with one of each; most nodes have one kind).
  std::atomic<int> pollers_of_[3] = {};
  std::atomic<int>& PollersOf(Poller::Laziness laziness) {
    return pollers_of_[static_cast<std::size_t>(laziness)];
  }
  bool HavePollers(Poller::Laziness laziness);
  bool HaveAnyPollers();

  std::mutex mutex_;  // guards the tables below
  std::unordered_map<int, std::shared_ptr<Registration>> registrations_;
  std::vector<Task> posted_;
  std::atomic<bool> has_posted_{false};  // posted_ is not empty
  struct Timer {
    std::int64_t due_ms;
    Task task;
  };
  std::vector<Timer> timers_;
};

}  // namespace lmdx::net

#endif  // LMDX_NET_PROGRESS_ENGINE_H_

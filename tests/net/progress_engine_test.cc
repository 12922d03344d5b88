#include "net/progress_engine.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "net/completion.h"

namespace lmdx::net {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Memory a peer writes, as the engine sees a ring or a UCX worker: a frame is "waiting" until a
// poll takes it, and while armed the poller must report waiting frames. Taking a frame signals
// the completion the test waits on.
class FramePoller : public ProgressEngine::Poller {
 public:
  explicit FramePoller(Laziness laziness) : laziness_(laziness) {}

  // taker: the only thread whose poll may take the frame (a waiter testing its own drive), or
  // any thread when empty. bytes: the frame's payload.
  void Arrive(Completion* completion, std::thread::id taker = {}, std::size_t bytes = 8) {
    {
      std::lock_guard lock(mutex_);
      waiting_ = completion;
      taker_ = taker;
      bytes_ = bytes;
    }
    // As a ring's writer does: an armed reader is signalled.
    if (signal_fd_ >= 0 && armed_.load()) {
      std::uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(signal_fd_, &one, sizeof one);
    }
  }
  // A descriptor Arrive writes to when it finds the poller armed (none: it never signals).
  void SignalWith(int fd) { signal_fd_ = fd; }
  bool armed() const { return armed_.load(); }
  int arms() const { return arms_.load(); }

  bool Poll() override {
    Completion* completion;
    {
      std::lock_guard lock(mutex_);
      if (taker_ != std::thread::id{} && taker_ != std::this_thread::get_id()) return false;
      completion = waiting_;
      waiting_ = nullptr;
    }
    if (completion == nullptr) return false;
    completion->SetBytesMoved(bytes_);
    completion->Signal();
    return true;
  }
  bool Arm() override {
    armed_ = true;
    ++arms_;
    std::lock_guard lock(mutex_);
    // A frame kept for a waiter's own drive is that waiter's to take, not the progress thread's.
    return waiting_ != nullptr && taker_ == std::thread::id{};
  }
  void Disarm() override { armed_ = false; }
  Laziness ArmsLazily() const override { return laziness_; }

 private:
  const Laziness laziness_;
  std::atomic<bool> armed_{false};
  std::atomic<int> arms_{0};
  std::mutex mutex_;
  Completion* waiting_ = nullptr;
  std::thread::id taker_;
  std::size_t bytes_ = 0;
  int signal_fd_ = -1;
};

// True once predicate holds, false when it still does not after a generous while.
template <typename Predicate>
bool Eventually(Predicate predicate) {
  auto deadline = steady_clock::now() + std::chrono::seconds(10);
  while (!predicate()) {
    if (steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

// Reads an eventfd's count, as a callback must before the descriptor stops being ready.
void DrainEventFd(int fd) {
  std::uint64_t value;
  [[maybe_unused]] ssize_t n = ::read(fd, &value, sizeof value);
}

// A waiter drives the engine until the frame that arrives on `poller` completes its wait.
void DriveUntilFrameArrives(ProgressEngine& engine, FramePoller& poller, bool in_bursts,
                            std::size_t bytes) {
  Completion done;
  if (in_bursts) done.SetWaitsInBursts();
  poller.Arrive(&done, std::this_thread::get_id(), bytes);
  // A drive may end before it takes the frame (its budget ran out while the progress thread
  // held the dispatch lock: a slow sanitizer build); the last drive is the one that took it.
  while (!done.done()) engine.DriveBriefly(done);
  done.Wait();  // lets the signaller leave `done` before it goes
}

class ProgressEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (FramePoller* poller : {&lazy_, &eager_, &small_lazy_}) engine_.AddPoller(poller);
    engine_.Start();
    engine_.Post([] {});  // the progress thread arms every poller before it sleeps
    ASSERT_TRUE(Eventually([&] { return lazy_.armed() && eager_.armed() && small_lazy_.armed(); }));
  }
  void TearDown() override {
    engine_.Stop();
    for (FramePoller* poller : {&lazy_, &eager_, &small_lazy_}) engine_.RemovePoller(poller);
  }

  void WaitFor(FramePoller& poller, bool in_bursts, std::size_t bytes = 8) {
    DriveUntilFrameArrives(engine_, poller, in_bursts, bytes);
  }

  using Laziness = ProgressEngine::Poller::Laziness;
  ProgressEngine engine_;
  FramePoller lazy_{Laziness::kAfterReceives};
  FramePoller eager_{Laziness::kEager};
  FramePoller small_lazy_{Laziness::kAfterSmallReceives};
};

TEST_F(ProgressEngineTest, AReceiveLeavesLazyPollersDisarmedUntilTheProgressThreadArmsThem) {
  WaitFor(eager_, /*in_bursts=*/true);
  EXPECT_FALSE(lazy_.armed()) << "armed right after a receive: its system calls were not spared";
  EXPECT_TRUE(eager_.armed()) << "a ring must signal as soon as nobody polls it";
  EXPECT_TRUE(Eventually([&] { return lazy_.armed(); }))
      << "nobody armed the lazy poller after its window: its frames would go unheard";
}

TEST_F(ProgressEngineTest, OnlyASmallReceiveLeavesTheSmallReceivesPollerDisarmed) {
  // A long budget makes a long window (twice the budget): a slow run cannot outlast it between
  // the receive and the look.
  engine_.SetDriveBudget(20000);
  WaitFor(eager_, /*in_bursts=*/true, /*bytes=*/8);
  EXPECT_FALSE(small_lazy_.armed()) << "armed right after a small receive";
  EXPECT_TRUE(Eventually([&] { return small_lazy_.armed(); }))
      << "nobody armed it after its window: its frames would go unheard";

  WaitFor(eager_, /*in_bursts=*/true, /*bytes=*/Completion::kSmallTransferBytes + 1);
  EXPECT_TRUE(small_lazy_.armed()) << "left disarmed after a large receive";
  EXPECT_FALSE(lazy_.armed()) << "the other lazy poller stays disarmed after any receive";
}

TEST_F(ProgressEngineTest, AnEventThatComesWhileTheDriversKeepTheEventSetIsStillDispatched) {
  Fd event(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  ASSERT_TRUE(event);
  std::atomic<int> dispatched{0};
  engine_.Add(event.get(), EPOLLIN, [&](std::uint32_t) {
    DrainEventFd(event.get());
    ++dispatched;
  });
  for (int round = 0; round < 20; ++round) {
    // A small receive in a conversation: the event set stays with the drivers for a window.
    WaitFor(eager_, /*in_bursts=*/true, /*bytes=*/8);
    // Within the window (the progress thread looks when it ends), or well after it (the set must
    // be watched again by then).
    if (round % 2 == 1) std::this_thread::sleep_for(milliseconds(20));
    std::uint64_t one = 1;
    ASSERT_EQ(::write(event.get(), &one, sizeof one), 8);
    EXPECT_TRUE(Eventually([&] { return dispatched.load() == round + 1; }))
        << "an event on the set went unheard after receive " << round;
  }
  engine_.Remove(event.get());
}

// A node of sockets alone has no pollers: the event set is the only thing a sleeping progress
// thread must be woken to watch again. Answers come on one descriptor and complete this thread's
// wait; requests come on another and are only counted.
class SocketsAloneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(answer_ && request_);
    engine_.Start();
    engine_.Add(answer_.get(), EPOLLIN, [this](std::uint32_t) {
      DrainEventFd(answer_.get());
      std::lock_guard lock(mutex_);
      if (waiting_ == nullptr) return;
      waiting_->SetBytesMoved(8);
      waiting_->Signal();
      waiting_ = nullptr;
    });
    engine_.Add(request_.get(), EPOLLIN, [this](std::uint32_t) {
      DrainEventFd(request_.get());
      ++requests_;
    });
  }
  void TearDown() override {
    engine_.Stop();
    engine_.Remove(answer_.get());
    engine_.Remove(request_.get());
  }
  // A small answer in a conversation, taken by this thread's drive: the set stays with it.
  void WaitForAnAnswer() {
    Completion done;
    done.SetWaitsInBursts();
    {
      std::lock_guard lock(mutex_);
      waiting_ = &done;
    }
    ASSERT_EQ(::write(answer_.get(), &kOne, sizeof kOne), 8);
    while (!done.done()) engine_.DriveBriefly(done);
    done.Wait();
  }
  // Well after the window: only a set watched again wakes the progress thread for this.
  void SendARequestLater() {
    std::this_thread::sleep_for(milliseconds(20));
    ASSERT_EQ(::write(request_.get(), &kOne, sizeof kOne), 8);
  }

  static constexpr std::uint64_t kOne = 1;
  ProgressEngine engine_;
  Fd answer_{::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)};
  Fd request_{::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)};
  std::mutex mutex_;
  Completion* waiting_ = nullptr;
  std::atomic<int> requests_{0};
};

TEST_F(SocketsAloneTest, WithNoPollersTheEventSetIsWatchedAgainAfterTheWindow) {
  for (int round = 0; round < 5; ++round) {
    ASSERT_NO_FATAL_FAILURE(WaitForAnAnswer());
    ASSERT_NO_FATAL_FAILURE(SendARequestLater());
    EXPECT_TRUE(Eventually([&] { return requests_.load() == round + 1; }))
        << "a request went unheard after answer " << round;
  }
}

// The same after a whole conversation of answers back to back: the drives that follow the first
// poll the event set while the progress thread is being woken to start its window. None of them
// may take that wake-up from it, or it sleeps on with the set left to drivers that are gone.
TEST_F(SocketsAloneTest, AfterAConversationOfSocketsTheEventSetIsWatchedAgain) {
  for (int round = 0; round < 3; ++round) {
    for (int message = 0; message < 200; ++message) ASSERT_NO_FATAL_FAILURE(WaitForAnAnswer());
    ASSERT_NO_FATAL_FAILURE(SendARequestLater());
    EXPECT_TRUE(Eventually([&] { return requests_.load() == round + 1; }))
        << "a request went unheard after conversation " << round;
  }
}

TEST_F(ProgressEngineTest, ARequestsAnswerArmsEveryPollerAtOnce) {
  // A page or a lock lets the program compute on: a request to this node must wake it now.
  WaitFor(eager_, /*in_bursts=*/false);
  EXPECT_TRUE(lazy_.armed());
  EXPECT_TRUE(eager_.armed());
  EXPECT_TRUE(small_lazy_.armed());
}

// Lower bounds only: a slow machine lengthens a drive, never shortens it.
TEST_F(ProgressEngineTest, AReceiveInAConversationPollsSeveralBudgetsBeforeItSleeps) {
  constexpr int kBudgetMicros = 2000;
  engine_.SetDriveBudget(kBudgetMicros);
  Completion receive;
  receive.SetWaitsInBursts();
  auto start = steady_clock::now();
  engine_.DriveBriefly(receive);  // nothing arrives
  EXPECT_GE(steady_clock::now() - start,
            std::chrono::microseconds(kBudgetMicros * ProgressEngine::kConversationDriveFactor));

  Completion request;
  start = steady_clock::now();
  engine_.DriveBriefly(request);
  EXPECT_GE(steady_clock::now() - start, std::chrono::microseconds(kBudgetMicros));
}

TEST_F(ProgressEngineTest, AWaiterWhoseBudgetRunsOutArmsEveryPoller) {
  Completion never;
  never.SetWaitsInBursts();
  engine_.DriveBriefly(never);  // nothing arrives: the budget runs out and the waiter sleeps
  EXPECT_TRUE(lazy_.armed());
  EXPECT_TRUE(eager_.armed());
  EXPECT_TRUE(small_lazy_.armed());
}

TEST_F(ProgressEngineTest, AFrameThatArrivesWhileLazyPollersAreDisarmedIsStillDelivered) {
  WaitFor(lazy_, /*in_bursts=*/true);
  ASSERT_FALSE(lazy_.armed());
  // Nobody polls now; the next frame must reach its waiter through the progress thread.
  Completion later;
  lazy_.Arrive(&later);
  EXPECT_TRUE(later.WaitFor(std::chrono::seconds(10))) << "a frame went unheard";
}

TEST_F(ProgressEngineTest, AConversationDoesNotArmTheLazyPollerBetweenItsMessages) {
  int arms_before = lazy_.arms();
  for (int i = 0; i < 200; ++i) WaitFor(lazy_, /*in_bursts=*/true);
  // Each receive used to arm it on the way out (200 arms). The progress thread may arm it when
  // one of its windows passes with no receive (a descheduled test thread), but not per message.
  EXPECT_LT(lazy_.arms() - arms_before, 150);
  EXPECT_TRUE(eager_.armed()) << "a ring must signal as soon as nobody polls it";
}

// A node whose pollers are all lazy after small receives (shared memory alone): once a
// conversation is in its steady state, its drives begin and end on the quick lane, without the
// drivers' lock. What the lock would do must still be done: the poller stays disarmed between
// messages, is armed once the conversation ends, and is armed at once by a drive the lane does
// not fit (a request's answer, a large receive).
class QuickLaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(signal_);
    poller_.SignalWith(signal_.get());
    engine_.Add(signal_.get(), EPOLLIN, [this](std::uint32_t) { DrainEventFd(signal_.get()); });
    engine_.AddPoller(&poller_);
    engine_.Start();
    engine_.Post([] {});
    ASSERT_TRUE(Eventually([&] { return poller_.armed(); }));
  }
  void TearDown() override {
    engine_.Stop();
    engine_.RemovePoller(&poller_);
    engine_.Remove(signal_.get());
  }
  void WaitFor(bool in_bursts, std::size_t bytes = 8) {
    DriveUntilFrameArrives(engine_, poller_, in_bursts, bytes);
  }
  void Converse(int messages) {
    for (int i = 0; i < messages; ++i) WaitFor(/*in_bursts=*/true);
  }
  // Converses until the last few drives took the quick lane (it opens once the progress thread
  // has looked, which it may do only between two drives); false if it never does.
  bool ConverseOnTheQuickLane() {
    std::uint64_t before = engine_.quick_drives();
    for (int i = 0; i < 100000; ++i) {
      WaitFor(/*in_bursts=*/true);
      if (engine_.quick_drives() >= before + 5) return true;
    }
    return false;
  }

  Fd signal_{::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)};
  ProgressEngine engine_;
  FramePoller poller_{ProgressEngine::Poller::Laziness::kAfterSmallReceives};
};

TEST_F(QuickLaneTest, AConversationTakesTheQuickLaneAndItsPollerIsArmedOnceItEnds) {
  ASSERT_TRUE(ConverseOnTheQuickLane()) << "no drive of a steady conversation took the lane";
  int arms_before = poller_.arms();
  std::uint64_t quick_before = engine_.quick_drives();
  Converse(300);
  // A slow machine closes the lane now and then, at a window's end; most drives still take it.
  EXPECT_GE(engine_.quick_drives() - quick_before, 100u);
  EXPECT_LT(poller_.arms() - arms_before, 200) << "armed after each message";
  EXPECT_TRUE(Eventually([&] { return poller_.armed(); }))
      << "the receives counted on the quick lane kept the window open for good";
  Completion later;
  poller_.Arrive(&later);  // nobody polls: the progress thread must hear it
  EXPECT_TRUE(later.WaitFor(std::chrono::seconds(10))) << "a frame went unheard";
}

TEST_F(QuickLaneTest, ADriveTheLaneDoesNotFitArmsThePollerAtOnce) {
  engine_.SetDriveBudget(20000);  // long windows: only the drive itself may arm the poller
  ASSERT_TRUE(ConverseOnTheQuickLane());
  ASSERT_FALSE(poller_.armed());
  WaitFor(/*in_bursts=*/false);  // a request's answer: the program computes on
  EXPECT_TRUE(poller_.armed()) << "a request to this node would go unheard while it computes";

  ASSERT_TRUE(ConverseOnTheQuickLane());
  ASSERT_FALSE(poller_.armed());
  WaitFor(/*in_bursts=*/true, Completion::kSmallTransferBytes + 1);
  EXPECT_TRUE(poller_.armed()) << "left disarmed after a large receive";
}

// A second thread drives through the conversation: the lane admits one driver at a time, and
// whichever ends last decides, as through the lock (the waiter whose budget ran out arms the
// poller at once; the conversation's last receive leaves it to the window).
TEST_F(QuickLaneTest, OverlappingDriversLeaveThePollerArmedOnceTheyAreDone) {
  std::atomic<bool> stop{false};
  std::thread other([&] {
    while (!stop.load()) {
      Completion never;
      never.SetWaitsInBursts();
      engine_.DriveBriefly(never);  // its budget runs out: it arms everything as it leaves
    }
  });
  Converse(300);
  stop = true;
  other.join();
  EXPECT_TRUE(Eventually([&] { return poller_.armed(); }))
      << "the drivers left nothing to hear the next frame";
  Completion later;
  poller_.Arrive(&later);
  EXPECT_TRUE(later.WaitFor(std::chrono::seconds(10))) << "a frame went unheard";
}

// Counts how many threads are inside its calls at once: the engine promises that polls never
// overlap one another, nor armings and disarmings one another (ProgressEngine::Poller), and
// pollers such as the shm transport rely on it. A poll may overlap an arming.
class OverlapPoller : public ProgressEngine::Poller {
 public:
  explicit OverlapPoller(Laziness laziness) : laziness_(laziness) {}
  bool Poll() override {
    Enter(polling_, most_polling_);
    Linger();
    --polling_;
    ++polls_;
    return false;
  }
  bool Arm() override {
    Enter(arming_, most_arming_);
    Linger();
    --arming_;
    ++armings_;
    return false;
  }
  void Disarm() override {
    Enter(arming_, most_arming_);
    Linger();
    --arming_;
  }
  Laziness ArmsLazily() const override { return laziness_; }

  int most_polling() const { return most_polling_.load(); }
  int most_arming() const { return most_arming_.load(); }
  int polls() const { return polls_.load(); }
  int armings() const { return armings_.load(); }

 private:
  static void Enter(std::atomic<int>& inside, std::atomic<int>& most) {
    int now = ++inside;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
  }
  // A few hundred nanoseconds inside, so that a second thread would find the first still there.
  static void Linger() {
    auto until = steady_clock::now() + std::chrono::nanoseconds(300);
    while (steady_clock::now() < until) {
    }
  }

  const Laziness laziness_;
  std::atomic<int> polling_{0};
  std::atomic<int> arming_{0};
  std::atomic<int> most_polling_{0};
  std::atomic<int> most_arming_{0};
  std::atomic<int> polls_{0};
  std::atomic<int> armings_{0};
};

// Three threads wait at once, some satisfied at once (a conversation: pollers left lazy) and some
// not (their budget runs out: pollers armed), while posted tasks keep waking the progress thread,
// which polls in its dispatch and arms before it sleeps.
TEST(PollerContractTest, PollsNeverOverlapNorDoArmings) {
  ProgressEngine engine;
  OverlapPoller lazy(ProgressEngine::Poller::Laziness::kAfterSmallReceives);
  OverlapPoller eager(ProgressEngine::Poller::Laziness::kEager);
  engine.AddPoller(&lazy);
  engine.AddPoller(&eager);
  engine.SetDriveBudget(5);
  engine.Start();
  std::atomic<bool> stop{false};
  constexpr int kWaiters = 3;
  std::vector<std::thread> waiters;
  waiters.reserve(kWaiters);
  for (int waiter = 0; waiter < kWaiters; ++waiter) {
    waiters.emplace_back([&, waiter] {
      for (int round = 0; !stop.load(); ++round) {
        Completion completion;
        if ((round + waiter) % 2 == 0) {
          completion.SetWaitsInBursts();
          completion.Signal();
        }
        engine.DriveBriefly(completion);
        if (round % 8 == 0) engine.Post([] {});
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(300));
  stop = true;
  for (std::thread& waiter : waiters) waiter.join();
  engine.Stop();
  engine.RemovePoller(&lazy);
  engine.RemovePoller(&eager);
  for (const OverlapPoller* poller : {&lazy, &eager}) {
    EXPECT_GT(poller->polls(), 0);
    EXPECT_GT(poller->armings(), 0);
    EXPECT_EQ(poller->most_polling(), 1) << "two polls of one poller ran at once";
    EXPECT_EQ(poller->most_arming(), 1) << "two armings or disarmings of one poller ran at once";
  }
}

// A driver whose drive runs the callback that completes the waiter's own completion, as the
// engine does when a waiting thread takes its message. The waiter is the signaller then, and the
// signal takes a shorter way (no lock, no notification): the wait must still end, and a completion
// signalled by another thread meanwhile must still wake its sleeper.
class SignallingDriver : public CompletionDriver {
 public:
  void DriveBriefly(Completion& completion) override {
    ++drives;
    if (signal_own) completion.Signal();
  }
  std::atomic<int> drives{0};
  std::atomic<bool> signal_own{true};
};

// A timer wakes the progress thread only when it would otherwise sleep past it (PostAfter): a
// sooner timer posted behind a later one must still run long before it, and a later one posted
// behind a sooner one must still run once that one has woken the thread.
TEST(ProgressEngineAloneTest, TimersRunWhenDueWhateverOrderTheyCameIn) {
  ProgressEngine engine;
  engine.Start();
  std::mutex mutex;
  std::vector<std::pair<char, steady_clock::time_point>> ran;
  auto record = [&](char name) {
    return [&, name] {
      std::lock_guard lock(mutex);
      ran.emplace_back(name, steady_clock::now());
    };
  };
  auto ran_count = [&] {
    std::lock_guard lock(mutex);
    return ran.size();
  };
  // The thread sleeps with no timeout; the first timer must wake it to set one, and the sooner
  // second one must wake it again to shorten that sleep.
  engine.PostAfter(2000, record('C'));
  std::this_thread::sleep_for(milliseconds(20));  // the thread sleeps until C now
  engine.PostAfter(10, record('D'));
  ASSERT_TRUE(Eventually([&] { return ran_count() == 2; }));
  // The thread sleeps until E; F, due later, is found when E wakes it.
  engine.PostAfter(20, record('E'));
  std::this_thread::sleep_for(milliseconds(5));
  engine.PostAfter(60, record('F'));
  ASSERT_TRUE(Eventually([&] { return ran_count() == 4; })) << "a later timer never ran";
  engine.Stop();
  std::lock_guard lock(mutex);
  ASSERT_EQ(ran[0].first, 'D');
  EXPECT_GT(ran[1].second - ran[0].second, milliseconds(1000))
      << "the sooner timer waited for the later one";
  EXPECT_EQ(ran[2].first, 'E');
  EXPECT_EQ(ran[3].first, 'F');
}

TEST(CompletionTest, ASignalFromTheWaitersOwnDriveEndsItsWait) {
  SignallingDriver driver;
  Completion::SetDriver(&driver);
  for (int i = 0; i < 3; ++i) {
    Completion done;
    done.Wait();
    EXPECT_TRUE(done.done());
    EXPECT_TRUE(done.WaitFor(milliseconds(0)));
  }
  EXPECT_EQ(driver.drives.load(), 3);

  driver.signal_own = false;
  Completion later;
  std::thread signaller([&later] {
    std::this_thread::sleep_for(milliseconds(20));
    later.Signal();
  });
  later.Wait();
  signaller.join();
  EXPECT_TRUE(later.done());
  Completion::SetDriver(nullptr);
}

}  // namespace
}  // namespace lmdx::net

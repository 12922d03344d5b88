// User-level threads: many of them, yields, park and wake, join, and that a parked thread never
// holds up the others of its worker.
#include "threads/scheduler.h"
#include "net/completion.h"
#include "threads/stack_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace lmdx::threads {
namespace {

TEST(SchedulerTest, TenThousandThreadsEachRunOnceAndAreJoined) {
  Scheduler scheduler({.workers = 2, .stack_bytes = 64 * 1024});
  constexpr int kThreads = 10000;
  std::vector<int> ran(kThreads, 0);
  std::vector<std::shared_ptr<UserThread>> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.push_back(scheduler.Spawn([&ran, i] {
      ran[i] += 1;
      Scheduler::Yield();
      ran[i] += 10;
    }));
  }
  for (auto& thread : threads) thread->Join();
  for (int i = 0; i < kThreads; ++i) ASSERT_EQ(ran[i], 11) << i;
  EXPECT_EQ(scheduler.live(), 0u);
}

TEST(SchedulerTest, YieldInterleavesTheThreadsOfOneWorker) {
  Scheduler scheduler({.workers = 1});
  std::vector<int> order;
  std::mutex mutex;
  std::atomic<bool> both_spawned{false};
  auto record = [&](int who) {
    std::lock_guard lock(mutex);
    order.push_back(who);
  };
  // The worker may run the first thread before the second exists: both yield until it does.
  auto body = [&](int who) {
    while (!both_spawned.load()) Scheduler::Yield();
    for (int i = 0; i < 3; ++i) {
      record(who);
      Scheduler::Yield();
    }
  };
  auto a = scheduler.Spawn([&] { body(0); });
  auto b = scheduler.Spawn([&] { body(1); });
  both_spawned = true;
  a->Join();
  b->Join();
  ASSERT_EQ(order.size(), 6u);
  for (std::size_t i = 1; i < order.size(); ++i) {
    EXPECT_NE(order[i], order[i - 1]) << "two turns in a row at " << i;
  }
}

TEST(SchedulerTest, AParkedThreadLetsTheOthersOfItsWorkerRun) {
  Scheduler scheduler({.workers = 1});
  std::atomic<UserThread*> sleeper{nullptr};
  std::atomic<bool> woken{false};
  auto parked = scheduler.Spawn([&] {
    sleeper = Scheduler::Current();
    while (!woken.load()) Scheduler::Park();
  });
  std::atomic<int> others{0};
  std::vector<std::shared_ptr<UserThread>> busy;
  busy.reserve(100);
  for (int i = 0; i < 100; ++i) busy.push_back(scheduler.Spawn([&] { others.fetch_add(1); }));
  for (auto& thread : busy) thread->Join();  // all ran on the only worker, beside the parked one
  EXPECT_EQ(others.load(), 100);
  EXPECT_FALSE(parked->finished());
  while (sleeper.load() == nullptr) std::this_thread::yield();
  woken = true;
  Scheduler::Wake(sleeper.load());
  parked->Join();
  EXPECT_TRUE(parked->finished());
}

TEST(SchedulerTest, AWakeBeforeTheParkIsNotLost) {
  Scheduler scheduler({.workers = 2});
  for (int round = 0; round < 200; ++round) {
    std::atomic<bool> ready{false};
    std::atomic<UserThread*> self{nullptr};
    auto thread = scheduler.Spawn([&] {
      self = Scheduler::Current();
      while (!ready.load()) {
      }
      Scheduler::Park();  // the wake already came: returns at once
    });
    while (self.load() == nullptr) std::this_thread::yield();
    Scheduler::Wake(self.load());
    ready = true;
    thread->Join();
  }
}

TEST(SchedulerTest, ParkUntilReturnsAtTheDeadlineAndTheWorkerRunsOthersMeanwhile) {
  Scheduler scheduler({.workers = 1});
  using Clock = std::chrono::steady_clock;
  std::atomic<int> others_before_return{-1};
  std::atomic<int> others{0};
  Clock::duration slept{};
  const auto park = std::chrono::milliseconds(100);
  std::vector<std::shared_ptr<UserThread>> busy;
  auto sleeper = scheduler.Spawn([&] {
    // Spawned before the park, whatever the machine's speed: with one worker they can run only
    // while this thread is parked, and they are ahead of it in the ready queue at its deadline.
    for (int i = 0; i < 100; ++i) busy.push_back(scheduler.Spawn([&] { others.fetch_add(1); }));
    auto start = Clock::now();
    Scheduler::ParkUntil(start + park);
    slept = Clock::now() - start;
    others_before_return = others.load();
  });
  sleeper->Join();
  for (auto& thread : busy) thread->Join();
  EXPECT_GE(slept, park);
  EXPECT_EQ(others_before_return.load(), 100);  // the only worker ran them while it slept
}

TEST(SchedulerTest, ParkUntilReturnsEarlyOnAWake) {
  Scheduler scheduler({.workers = 2});
  using Clock = std::chrono::steady_clock;
  std::atomic<UserThread*> self{nullptr};
  std::atomic<bool> woken{false};
  auto start = Clock::now();
  auto thread = scheduler.Spawn([&] {
    self = Scheduler::Current();
    while (!woken.load()) Scheduler::ParkUntil(Clock::now() + std::chrono::seconds(60));
  });
  while (self.load() == nullptr) std::this_thread::yield();
  woken = true;
  Scheduler::Wake(self.load());
  thread->Join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(30));
}

TEST(SchedulerTest, ManyDeadlinesInAnyOrderEachReturnAfterItsOwn) {
  Scheduler scheduler({.workers = 2});
  using Clock = std::chrono::steady_clock;
  constexpr int kThreads = 60;
  std::vector<Clock::duration> late(kThreads);
  std::vector<std::shared_ptr<UserThread>> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.push_back(scheduler.Spawn([&late, i] {
      auto deadline = Clock::now() + std::chrono::milliseconds((i * 37) % 90 + 1);
      Scheduler::ParkUntil(deadline);
      late[i] = Clock::now() - deadline;
    }));
  }
  for (auto& thread : threads) thread->Join();
  for (int i = 0; i < kThreads; ++i) EXPECT_GE(late[i].count(), 0) << i;
  EXPECT_EQ(scheduler.live(), 0u);
}

// The threads layer's adapter, as threads/service.cc installs it.
class TestParking final : public net::Parking {
 public:
  void* Current() override { return Scheduler::Current(); }
  void Park() override { Scheduler::Park(); }
  void ParkUntil(std::chrono::steady_clock::time_point deadline) override {
    Scheduler::ParkUntil(deadline);
  }
  void Wake(void* thread) override { Scheduler::Wake(static_cast<UserThread*>(thread)); }
  bool Interrupted() override { return interrupted.load(); }
  std::atomic<bool> interrupted{false};
};

TEST(SchedulerTest, TimedRuntimeWaitsParkTheUserThread) {
  TestParking parking;
  net::Completion::SetParking(&parking);
  Scheduler scheduler({.workers = 1});
  std::atomic<int> others{0};
  std::atomic<int> others_during_timeout{-1};
  net::Completion never;
  net::Completion later;
  std::atomic<bool> timed_out{false}, completed{false};
  std::vector<std::shared_ptr<UserThread>> busy;
  auto waiter = scheduler.Spawn([&] {
    // As above: spawned first, they can run only while this thread waits.
    for (int i = 0; i < 50; ++i) busy.push_back(scheduler.Spawn([&] { others.fetch_add(1); }));
    timed_out = !never.WaitFor(std::chrono::milliseconds(100));
    others_during_timeout = others.load();
    completed = later.WaitFor(std::chrono::seconds(60));
  });
  while (others_during_timeout.load() < 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  later.Signal();
  waiter->Join();
  for (auto& thread : busy) thread->Join();
  net::Completion::SetParking(nullptr);
  EXPECT_TRUE(timed_out.load());
  EXPECT_EQ(others_during_timeout.load(), 50);  // one worker: they ran while the waiter was parked
  EXPECT_TRUE(completed.load());
}

TEST(SchedulerTest, AnInterruptedWaitStopsAndAnUninterruptedOneCompletes) {
  TestParking parking;
  net::Completion::SetParking(&parking);
  Scheduler scheduler({.workers = 1});
  net::Completion never;
  net::Completion signalled;
  std::atomic<UserThread*> self{nullptr};
  std::atomic<int> outcome{-1};
  auto waiter = scheduler.Spawn([&] {
    self = Scheduler::Current();
    outcome = never.WaitUnlessInterrupted() ? 1 : 0;
  });
  while (self.load() == nullptr) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it park
  EXPECT_EQ(outcome.load(), -1);
  parking.interrupted = true;  // the mark first, then the wake, as a kill does
  Scheduler::Wake(self.load());
  waiter->Join();
  EXPECT_EQ(outcome.load(), 0);

  parking.interrupted = false;
  auto second = scheduler.Spawn([&] { outcome = signalled.WaitUnlessInterrupted() ? 1 : 0; });
  signalled.Signal();
  second->Join();
  net::Completion::SetParking(nullptr);
  EXPECT_EQ(outcome.load(), 1);
}

TEST(SchedulerTest, JoinUnlessGivesUpWhenAskedAndTheJoinedThreadStillEnds) {
  Scheduler scheduler({.workers = 2});
  std::atomic<bool> release{false};
  auto sleeper = scheduler.Spawn([&] {
    while (!release.load())
      Scheduler::ParkUntil(std::chrono::steady_clock::now() + std::chrono::milliseconds(2));
  });
  std::atomic<bool> stop{false};
  std::atomic<UserThread*> joiner_self{nullptr};
  std::atomic<int> joined{-1};
  auto joiner = scheduler.Spawn([&] {
    joiner_self = Scheduler::Current();
    joined = sleeper->JoinUnless([&] { return stop.load(); }) ? 1 : 0;
  });
  while (joiner_self.load() == nullptr) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  Scheduler::Wake(joiner_self.load());
  joiner->Join();
  EXPECT_EQ(joined.load(), 0);
  joiner.reset();  // the joiner is gone; ending the sleeper must not touch it
  release = true;
  sleeper->Join();
  EXPECT_TRUE(sleeper->finished());
}

TEST(SchedulerTest, PingPongBetweenTwoUserThreadsOnTwoWorkers) {
  Scheduler scheduler({.workers = 2});
  constexpr int kRounds = 10000;
  std::atomic<UserThread*> ping_thread{nullptr}, pong_thread{nullptr};
  std::atomic<int> turn{0};  // even: ping's turn, odd: pong's
  auto ping = scheduler.Spawn([&] {
    ping_thread = Scheduler::Current();
    while (pong_thread.load() == nullptr) Scheduler::Yield();
    for (int i = 0; i < kRounds; ++i) {
      while (turn.load() % 2 != 0) Scheduler::Park();
      turn.fetch_add(1);
      Scheduler::Wake(pong_thread.load());
    }
  });
  auto pong = scheduler.Spawn([&] {
    pong_thread = Scheduler::Current();
    while (ping_thread.load() == nullptr) Scheduler::Yield();
    for (int i = 0; i < kRounds; ++i) {
      while (turn.load() % 2 != 1) Scheduler::Park();
      turn.fetch_add(1);
      Scheduler::Wake(ping_thread.load());
    }
  });
  ping->Join();
  pong->Join();
  EXPECT_EQ(turn.load(), 2 * kRounds);
}

TEST(SchedulerTest, AUserThreadJoinsAnotherByParking) {
  Scheduler scheduler({.workers = 1});
  std::atomic<bool> release{false};
  auto slow = scheduler.Spawn([&] {
    while (!release.load()) Scheduler::Yield();
  });
  std::atomic<bool> joined{false};
  auto joiner = scheduler.Spawn([&] {
    slow->Join();
    joined = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(joined.load());
  release = true;
  joiner->Join();
  EXPECT_TRUE(joined.load());
  EXPECT_TRUE(slow->finished());
}

TEST(SchedulerTest, AnExceptionEndsOnlyItsThread) {
  Scheduler scheduler({.workers = 1});
  auto failing = scheduler.Spawn([] { throw std::runtime_error("boom"); });
  std::atomic<bool> other{false};
  auto fine = scheduler.Spawn([&] { other = true; });
  failing->Join();
  fine->Join();
  EXPECT_TRUE(failing->finished());
  EXPECT_TRUE(other.load());
}

}  // namespace
}  // namespace lmdx::threads

namespace lmdx::threads {
namespace {

TEST(StackPoolTest, AReleasedStackIsReusedAndTheIdleCountIsCapped) {
  StackPool pool(64 * 1024, 2);
  auto first = pool.Allocate();
  void* first_top = first.sp;
  pool.Release(first);
  EXPECT_EQ(pool.idle(), 1u);
  auto again = pool.Allocate();
  EXPECT_EQ(again.sp, first_top);  // the same stack, no new mapping
  EXPECT_EQ(pool.idle(), 0u);
  auto a = pool.Allocate();
  auto b = pool.Allocate();
  pool.Release(again);
  pool.Release(a);
  pool.Release(b);  // beyond the cap: unmapped
  EXPECT_EQ(pool.idle(), 2u);
}

}  // namespace
}  // namespace lmdx::threads

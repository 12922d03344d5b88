// Named locks, barriers and semaphores in real jobs of real node processes, through the launcher.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

std::string Program(const char* variable) { return BinaryFromEnv(variable); }

TEST(LockTest, EightNodesTwoThreadsTenThousandIncrements) {
  JobResult job = RunJob(Program("MUTEX"), 8, {"2", "10000"}, {}, std::chrono::seconds(120));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("rank 0: counter 10000 of 10000, overlaps 0"), std::string::npos)
      << job.out;
}

class BarrierAllTest : public ::testing::TestWithParam<int> {};

TEST_P(BarrierAllTest, AThousandRoundsNobodyLeavesEarly) {
  int nodes = GetParam();
  JobResult job = RunJob(Program("BARRIER"), nodes, {"all", "1000"}, {}, std::chrono::seconds(120));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "passed 1000 rounds"), nodes) << job.out;
}

INSTANTIATE_TEST_SUITE_P(Nodes, BarrierAllTest, ::testing::Values(2, 4, 8, 16));

class NamedBarrierTest : public ::testing::TestWithParam<int> {};

TEST_P(NamedBarrierTest, AThousandRoundsTwoThreadsPerNode) {
  int nodes = GetParam();
  JobResult job =
      RunJob(Program("BARRIER"), nodes, {"named", "1000", "2"}, {}, std::chrono::seconds(120));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "passed 1000 rounds"), 2 * nodes) << job.out;
}

INSTANTIATE_TEST_SUITE_P(Nodes, NamedBarrierTest, ::testing::Values(2, 4, 8, 16));

TEST(SemaphoreTest, BoundedBufferMovesEveryItemOnce) {
  JobResult job =
      RunJob(Program("SEMAPHORE"), 5, {"buffer", "100000", "16"}, {}, std::chrono::seconds(120));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("rank 0: moved 100000 items, checksums match"), std::string::npos)
      << job.out;
}

TEST(SemaphoreTest, WaitersAreServedInArrivalOrder) {
  JobResult job = RunJob(Program("SEMAPHORE"), 4, {"fifo"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("rank 0: woke in order 1 2 3"), std::string::npos) << job.out;
}

TEST(ConsistencyHooksTest, PayloadsTravelFromReleaserToAcquirer) {
  JobResult job = RunJob(Program("HOOKS"), 4, {});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("rank 0: lock counter 400 of 400"), std::string::npos) << job.out;
  EXPECT_EQ(CountOf(job.out, "barrier payloads ok"), 4) << job.out;
  EXPECT_NE(job.out.find("rank 2: semaphore payloads ok"), std::string::npos) << job.out;
}

// Payloads of 20 MiB, past the 16 MiB a frame's body may hold, arrive whole through a lock, both
// kinds of barrier, a semaphore and a thread's start and join (they travel as the frames' raw
// payloads).
TEST(ConsistencyHooksTest, PayloadsLargerThanAFramesBodyArriveWhole) {
  JobResult job = RunJob(Program("LARGE_PAYLOADS"), 3, {}, {}, std::chrono::seconds(120));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  for (int rank = 0; rank < 3; ++rank) {
    std::string line = "rank " + std::to_string(rank) + ": large payloads ok (";
    std::size_t at = job.out.find(line);
    ASSERT_NE(at, std::string::npos) << job.out;
    // Every rank acquires at eight lmdx_barrier_all and one named barrier; ranks 1 and 2 also
    // take the lock after a release, rank 2 the semaphore's unit, rank 1 the start of the thread
    // and rank 0 its end.
    const long expected[] = {25, 26, 26};
    EXPECT_GE(std::atol(job.out.c_str() + at + line.size()), expected[rank]) << job.out;
  }
}

// A grant that reaches a node whose only waiter was killed after its request went out was
// trimmed for that node; the next holder, through a forward, a later lock or a trylock, must
// still see what was written before the release (programs/killed_waiter.cc).
using KilledWaiterCase = std::tuple<const char*, const char*>;  // protocol, variant

class KilledWaiterTest : public ::testing::TestWithParam<KilledWaiterCase> {};

TEST_P(KilledWaiterTest, TheNextHolderSeesTheWritesBeforeTheRelease) {
  const auto [protocol, variant] = GetParam();
  ScopedEnv protocol_env("LMDX_PROTOCOL", protocol);
  JobResult job = RunJob(Program("KILLED_WAITER"), 3, {variant}, {}, std::chrono::seconds(60));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find(std::string("rank 2: ") + variant + ": x seen as written"),
            std::string::npos)
      << job.out;
}

INSTANTIATE_TEST_SUITE_P(Grants, KilledWaiterTest,
                         ::testing::Combine(::testing::Values("hlrc", "lrc"),
                                            ::testing::Values("rest", "forward", "trylock")),
                         [](const ::testing::TestParamInfo<KilledWaiterCase>& info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

TEST(MisuseTest, EveryMisuseIsReportedWithObjectAndRank) {
  JobResult job = RunJob(Program("MISUSE"), 2, {"return"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("rank 0: 10 misuse cases reported"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("rank 1: 14 misuse cases reported"), std::string::npos) << job.out;
}

TEST(MisuseTest, FatalModeEndsTheJobWithOneClearLine) {
  JobResult job = RunJob(Program("MISUSE"), 3, {"fatal"}, {}, std::chrono::seconds(30));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("lmdx_unlock: lock \"never_locked\" is not held by rank 1"),
            std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("lmdx run: rank 1"), std::string::npos) << job.err;
  EXPECT_EQ(job.out.find("went unnoticed"), std::string::npos) << job.out;
}

class DeathTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DeathTest, ANodeDyingEndsTheJobNamingIt) {
  JobResult job = RunJob(Program("DIES"), 4, {GetParam()}, {}, std::chrono::seconds(30));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_LT(job.elapsed, std::chrono::seconds(5)) << job.err;
  EXPECT_NE(job.err.find("rank 1"), std::string::npos) << job.err;
  EXPECT_NE(job.err.find("SIGKILL"), std::string::npos) << job.err;
  EXPECT_EQ(job.out.find("went on"), std::string::npos) << job.out;
}

INSTANTIATE_TEST_SUITE_P(While, DeathTest, ::testing::Values("lock", "barrier"));

// In LMDX_ERRORS_RETURN mode a thread waiting on the lost node is woken with an error instead
// of waiting until the launcher stops its process.
TEST(DeathTest, AWaiterInReturnModeGetsPeerLost) {
  JobResult job = RunJob(Program("DIES"), 2, {"lock", "return"}, {}, std::chrono::seconds(30));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.out.find("rank 0: the wait failed with LMDX_ERR_PEER_LOST (lmdx_lock: rank 1 was "
                         "lost"),
            std::string::npos)
      << job.out << job.err;
  EXPECT_NE(job.err.find("SIGKILL"), std::string::npos) << job.err;
}

}  // namespace
}  // namespace lmdx::testing

// Real jobs of real node processes, started through the launcher users use.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string Program(const char* variable) { return BinaryFromEnv(variable); }

class ExchangeTest : public ::testing::TestWithParam<int> {};

TEST_P(ExchangeTest, EveryMessageArrivesIntact) {
  int nodes = GetParam();
  // 64 MiB around the ring on 2 and 4 nodes; 8 nodes keep to 8 MiB to spare the machine.
  std::string big = nodes <= 4 ? std::to_string(64 << 20) : std::to_string(8 << 20);
  JobResult job = RunJob(Program("EXCHANGE"), nodes, {big});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, " verified "), nodes) << job.out;
  // Per rank: 3 sizes from each peer, one any-source message from each, the ring, itself, and
  // the truncation check (which counts none).
  int expected = 4 * (nodes - 1) + 2;
  EXPECT_EQ(CountOf(job.out, "verified " + std::to_string(expected) + " messages"), nodes)
      << job.out;
}

INSTANTIATE_TEST_SUITE_P(Nodes, ExchangeTest, ::testing::Values(2, 4, 8));

class RequestsTest : public ::testing::TestWithParam<int> {};

// lmdx_isend, lmdx_irecv, lmdx_test and lmdx_wait_request between every pair of ranks
// (programs/requests.cc lists what each rank checks).
TEST_P(RequestsTest, NonBlockingMessagesArriveIntactAndInOrder) {
  int nodes = GetParam();
  JobResult job = RunJob(Program("REQUESTS"), nodes, {});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  int expected = 3 * (nodes - 1) + 5;
  EXPECT_EQ(CountOf(job.out, "verified " + std::to_string(expected) + " messages"), nodes)
      << job.out << job.err;
}

INSTANTIATE_TEST_SUITE_P(Nodes, RequestsTest, ::testing::Values(2, 3));

// The largest job `lmdx run` accepts starts, every rank reaches rank 0 (whose accept queue takes
// a thousand connections at once), and the job ends in order. Under a sanitizer a thousand
// instrumented processes would not fit the machine's memory.
TEST(MultiprocessTest, TheLargestJobStartsAndEveryRankReachesRankZero) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "1,024 sanitized processes do not fit in memory";
#endif
  JobResult job = RunJob(Program("HELLO"), 1024, {}, {}, std::chrono::seconds(240));
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_NE(job.out.find("rank 0 received 1023 of 1023 messages\n"), std::string::npos) << job.err;
  EXPECT_EQ(CountOf(job.out, "hello from rank "), 1024);
}

TEST(MultiprocessTest, ACrashingNodeEndsTheJobNamingItsRank) {
  // Under a sanitizer a SIGSEGV would become its report and exit status 1; the test is
  // about the launcher, so let the signal kill the process as it would without ASan.
  for (const char* variable : {"ASAN_OPTIONS", "TSAN_OPTIONS"}) {
    const char* options = std::getenv(variable);
    std::string value = std::string(options != nullptr ? options : "") + ":handle_segv=0";
    ::setenv(variable, value.c_str(), 1);
  }
  JobResult job = RunJob(Program("CRASH"), 4, {"2"}, {}, std::chrono::seconds(30));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_LT(job.elapsed, std::chrono::seconds(5)) << job.err;
  EXPECT_NE(job.err.find("rank 2"), std::string::npos) << job.err;
  EXPECT_NE(job.err.find("SIGSEGV"), std::string::npos) << job.err;
  EXPECT_EQ(CountOf(job.err, "lmdx run:"), 1) << job.err;
}

TEST(MultiprocessTest, ANodeLeavingMidJobEndsTheJobNamingIt) {
  JobResult job = RunJob(Program("EARLY_EXIT"), 4, {"mid-job", "1"}, {}, std::chrono::seconds(30));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_LT(job.elapsed, std::chrono::seconds(5)) << job.err;
  EXPECT_NE(job.err.find("lmdx run: rank 1 exited with status 0 before the job ended"),
            std::string::npos)
      << job.err;
  EXPECT_EQ(CountOf(job.err, "lmdx run:"), 1) << job.err;
  // The rank itself says what it missed.
  EXPECT_NE(job.err.find("[rank 1]: the program ended without calling lmdx_finalize"),
            std::string::npos)
      << job.err;
  EXPECT_EQ(CountOf(job.err, "without calling lmdx_finalize"), 1) << job.err;
}

TEST(MultiprocessTest, ANodeEndingBeforeItJoinsStopsTheOthersWaiting) {
  JobResult job =
      RunJob(Program("EARLY_EXIT"), 4, {"before-init", "2"}, {}, std::chrono::seconds(30));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_LT(job.elapsed, std::chrono::seconds(5)) << job.err;
  EXPECT_NE(job.err.find("rank 2 ended before it joined the job"), std::string::npos) << job.err;
  EXPECT_EQ(CountOf(job.err, "lmdx run:"), 1) << job.err;
}

TEST(MultiprocessTest, StrangersAreRefusedAndTheJobGoesOn) {
  JobResult job = RunJob(Program("INTRUDER"), 2, {}, {}, std::chrono::seconds(90));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "verified after the intrusions"), 2) << job.out;
  EXPECT_NE(job.err.find("failed the job-secret proof"), std::string::npos) << job.err;
  EXPECT_NE(job.err.find("wire version"), std::string::npos) << job.err;
  EXPECT_NE(job.err.find("rendezvous: refused"), std::string::npos) << job.err;
  // Floods: the TCP port refuses beyond its bound at once; round trips stay quick meanwhile.
  EXPECT_NE(job.out.find("flooding TCP connections were refused at once"), std::string::npos)
      << job.out;
  EXPECT_NE(job.out.find("during a flood of 150 TCP connections"), std::string::npos) << job.out;
  // A flood costs a few lines a second, and says how many it left out.
  EXPECT_NE(job.err.find("more refused TCP connections were not logged"), std::string::npos)
      << job.err;
  if (std::getenv("LMDX_TRANSPORT") != nullptr &&
      std::string(std::getenv("LMDX_TRANSPORT")) == "shm") {
    EXPECT_NE(job.out.find("during a flood of 40 shm connections"), std::string::npos) << job.out;
    // Only when the test could become another user (as root): then refused, and said once.
    if (job.out.find("a connection from another user was refused") != std::string::npos) {
      EXPECT_EQ(CountOf(job.err, "not this job's user"), 1) << job.err;
    }
  }
}

TEST(MultiprocessTest, ThreadsStyleJobEndsWithRankZerosStatus) {
  for (int status : {0, 3}) {
    JobResult job = RunJob(Program("THREADS_STYLE"), 4, {std::to_string(status)});
    EXPECT_EQ(job.exit_code, status) << job.out << job.err;
    // Only rank 0 runs main; the other ranks serve and leave when it returns.
    EXPECT_EQ(CountOf(job.out, "main runs on rank 0 of 4"), 1) << job.out;
    EXPECT_EQ(CountOf(job.out, "main runs on rank"), 1) << job.out;
  }
}

}  // namespace
}  // namespace lmdx::testing

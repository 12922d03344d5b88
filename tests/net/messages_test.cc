// Typed ports, tags and network hints between real node processes, started through the launcher.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

std::string Ports() { return BinaryFromEnv("PORTS"); }
std::string Tagged() { return BinaryFromEnv("TAGGED"); }

// The network settings of one test; the previous ones come back after it.
class Networks {
 public:
  explicit Networks(const char* job, const char* pairs = "") {
    ::setenv("LMDX_TRANSPORT", job, 1);
    ::setenv("LMDX_TRANSPORT_PAIRS", pairs, 1);
  }
  ~Networks() {
    ::unsetenv("LMDX_TRANSPORT");
    ::unsetenv("LMDX_TRANSPORT_PAIRS");
  }
  Networks(const Networks&) = delete;
  Networks& operator=(const Networks&) = delete;
};

// Ports over each network a pair can use.
class PortsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PortsTest, SeveralTypesOnSeveralPortsFromEverySource) {
  Networks networks(GetParam());
  JobResult job = RunJob(Ports(), 4, {"types"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "rank 0 ports verified: 3 results, 3 notes, 1 late, 1 self\n"), 1)
      << job.out;
  for (int rank = 1; rank < 4; ++rank) {
    EXPECT_EQ(CountOf(job.out, "rank " + std::to_string(rank) + " worked\n"), 1) << job.out;
  }
}

TEST_P(PortsTest, TryRecvAndRecvForTimeOutThenReceive) {
  Networks networks(GetParam());
  JobResult job = RunJob(Ports(), 2, {"timeouts"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "rank 1 timed out after at least 200 ms\n"), 1) << job.out;
  EXPECT_EQ(CountOf(job.out, "rank 1 timeouts verified\n"), 1) << job.out;
}

TEST_P(PortsTest, AsynchronousSendsComplete) {
  Networks networks(GetParam());
  JobResult job = RunJob(Ports(), 2, {"async"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "rank 0 async sends completed\n"), 1) << job.out;
  EXPECT_EQ(CountOf(job.out, "rank 1 async verified 12 messages\n"), 1) << job.out;
}

TEST_P(PortsTest, BadMessagesAreErrorsNamingPortAndSenderAndThePortGoesOn) {
  Networks networks(GetParam());
  JobResult job = RunJob(Ports(), 2, {"malformed"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("rank 1 error -13: lmdx_port_recv: port \"work\" on rank 1: the message "
                         "from rank 0 (2 bytes) does not parse as lmdx.test.Work; dropped\n"
                         "rank 1 error -13: lmdx_port_recv: port \"work\" on rank 1: the message "
                         "from rank 0 is a lmdx.test.Note, not a lmdx.test.Work; dropped\n"
                         "rank 1 the port goes on: work 4 from rank 0\n"),
            std::string::npos)
      << job.out;
}

INSTANTIATE_TEST_SUITE_P(Networks, PortsTest, ::testing::Values("tcp", "shm"),
                         [](const auto& info) { return std::string(info.param); });

TEST(PortsFatalTest, ABadMessageEndsTheJobWithOneLineByDefault) {
  JobResult job = RunJob(Ports(), 2, {"malformed-fatal"}, {}, std::chrono::seconds(30));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("lmdx[rank 1]: lmdx_port_recv: port \"work\" on rank 1: the message from "
                         "rank 0 (2 bytes) does not parse as lmdx.test.Work; dropped\n"),
            std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("lmdx run: rank 1 exited with status 1"), std::string::npos) << job.err;
  EXPECT_EQ(CountOf(job.out, "the port goes on"), 0) << job.out;
}

TEST(TagsTest, TagsMatchOutOfOrderAnyTagAndAnySource) {
  JobResult job = RunJob(Tagged(), 3, {"tags"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "rank 1 tags verified\n"), 1) << job.out;
}

// The frames rank 1 got from rank 0 over network, as its traffic summary says ("" when none).
std::string FramesOver(const std::string& out, const std::string& network) {
  std::smatch found;
  std::regex pattern("rank 1 hinted messages verified; frames received:[^\n]* from 0 over " +
                     network + " ([0-9]+);");
  return std::regex_search(out, found, pattern) ? found[1].str() : "";
}

// Rank 0 sends 5 messages hinted tcp, 4 shm, 3 any, 2 udp, 1 fabric (programs/tagged.cc).
TEST(HintsTest, TcpHintOnAShmPairTakesTcp) {
  Networks networks("any");
  JobResult job = RunJob(Tagged(), 2, {"hints"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(FramesOver(job.out, "tcp"), "5") << job.out;
  // udp is offered by every node of a job, so its hints take it.
  EXPECT_EQ(FramesOver(job.out, "udp"), "2") << job.out;
  // shm: its own 4, the 3 unhinted and the fabric one that fell back (fabric runs only when a
  // pair is configured to use it).
  EXPECT_EQ(FramesOver(job.out, "shm"), "8") << job.out;
  EXPECT_EQ(CountOf(job.out, "rank 0 hint fallbacks 1\n"), 1) << job.out;
}

TEST(HintsTest, ShmHintOnATcpPairTakesShm) {
  Networks networks("any", "0-1:tcp");
  JobResult job = RunJob(Tagged(), 2, {"hints"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(FramesOver(job.out, "shm"), "4") << job.out;
  EXPECT_EQ(FramesOver(job.out, "udp"), "2") << job.out;
  EXPECT_EQ(FramesOver(job.out, "tcp"), "9") << job.out;
  EXPECT_EQ(CountOf(job.out, "rank 0 hint fallbacks 1\n"), 1) << job.out;
}

TEST(HintsTest, HintsForNetworksThePairLacksFallBackAndAreCounted) {
  // With the job on TCP no node offers shared memory: the shm hints fall back too.
  Networks networks("tcp");
  ::setenv("LMDX_TRANSPORT_STATS", "1", 1);
  JobResult job = RunJob(Tagged(), 2, {"hints"});
  ::unsetenv("LMDX_TRANSPORT_STATS");
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(FramesOver(job.out, "tcp"), "13") << job.out;
  EXPECT_EQ(FramesOver(job.out, "udp"), "2") << job.out;
  EXPECT_EQ(FramesOver(job.out, "shm"), "") << job.out;
  EXPECT_EQ(CountOf(job.out, "rank 0 hint fallbacks 5\n"), 1) << job.out;
  // The counter is in the node's traffic summary at its end, for statistics.
  EXPECT_NE(job.err.find("lmdx[rank 0]: frames received:"), std::string::npos) << job.err;
  std::smatch found;
  ASSERT_TRUE(
      std::regex_search(job.err, found, std::regex("lmdx\\[rank 0\\]: frames received:[^\n]*")))
      << job.err;
  EXPECT_NE(found[0].str().find(" network hints that fell back: 5;"), std::string::npos)
      << found[0];
}

// The order program: 300 messages whose hints cycle through tcp, shm, none and udp; rank 1
// checks that they come in the order they were sent, each with its tag.
void ExpectOrderHolds() {
  JobResult job = RunJob(Tagged(), 2, {"order"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "rank 1 order verified over 300 messages\n"), 1) << job.out;
}

TEST(HintsTest, OrderHoldsAcrossNetworks) {
  Networks networks("any");
  ExpectOrderHolds();
}

// Over udp alone, with segments so small that frames sent in a burst straddle them: a small
// raw frame whole in its segment is handed over as a small message, one cut across two is
// gathered into a frame, and both keep their order, tags and bytes.
TEST(HintsTest, OrderHoldsOverUdpWhoseSegmentsCutFrames) {
  Networks networks("udp");
  ScopedEnv segment("LMDX_UDP_SEGMENT", "300");
  ExpectOrderHolds();
}

// The unhinted quarter goes over fabric, whose small messages a polling receiver takes inside
// UCX's callback: one that overtook an earlier message of another network must still wait.
TEST(HintsTest, OrderHoldsAcrossNetworksWhenThePairIsOnFabric) {
  Networks networks("any", "0-1:fabric");
  ExpectOrderHolds();
}

}  // namespace
}  // namespace lmdx::testing

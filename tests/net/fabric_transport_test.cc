// The fabric transport (net/fabric/fabric_transport.h) in real jobs, once over UCX's TCP transport and
// once over its shared-memory transports (UCX_TLS), and when it is started at all.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

std::string Program(const char* variable) { return BinaryFromEnv(variable); }

class FabricTest : public ::testing::TestWithParam<const char*> {
 protected:
  ScopedEnv transport_{"LMDX_TRANSPORT", "fabric"};
  ScopedEnv tls_{"UCX_TLS", GetParam()};
};

TEST_P(FabricTest, EveryPairUsesFabricAndEveryByteArrives) {
  ScopedEnv stats("LMDX_TRANSPORT_STATS", "1");
  // 0 B, 1 B and 4 KiB between every pair, 8 MiB around the ring, any-source receives.
  JobResult job = RunJob(Program("EXCHANGE"), 4, {"8388608"}, {"--show-transports"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("      0      - fabric fabric fabric\n"
                         "      1 fabric      - fabric fabric\n"
                         "      2 fabric fabric      - fabric\n"
                         "      3 fabric fabric fabric      -\n"),
            std::string::npos)
      << job.out;
  EXPECT_EQ(CountOf(job.out, " verified "), 4) << job.out << job.err;
  for (int rank = 0; rank < 4; ++rank) {
    std::regex line("lmdx\\[rank " + std::to_string(rank) + "\\]: frames received:([^\n]*)");
    std::smatch found;
    ASSERT_TRUE(std::regex_search(job.err, found, line)) << job.err;
    std::string counts = found[1];
    EXPECT_EQ(CountOf(counts, " over fabric "), 3) << rank << ": " << counts;
    EXPECT_EQ(counts.find(" over shm "), std::string::npos) << rank << ": " << counts;
    EXPECT_EQ(counts.find(" over tcp "), std::string::npos) << rank << ": " << counts;
  }
}

// An odd size, so that no fragment or rendezvous boundary falls on a round number.
TEST_P(FabricTest, ALargePayloadOfAnOddSizeArrivesWhole) {
  JobResult job = RunJob(Program("EXCHANGE"), 2, {"5000011"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, " verified "), 2) << job.out << job.err;
}

// Eager messages around rendezvous ones, both ways: each pair's order holds.
TEST_P(FabricTest, MixedSizesKeepThePairsOrder) {
  JobResult job = RunJob(Program("MESSAGE_ORDER"), 2, {});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, " verified 120 messages"), 2) << job.out << job.err;
}

TEST_P(FabricTest, JacobiUnderHomeBasedLazyReleaseIsVerified) {
  JobResult job = RunJob(Program("JACOBI"), 4, {"--size", "256", "--iterations", "20"},
                         {"--protocol", "hlrc", "--show-transports"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("      1 fabric      - fabric fabric\n"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("on 4 nodes, protocol hlrc"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("verified"), std::string::npos) << job.out << job.err;
}

TEST_P(FabricTest, AStrangersMessagesAreRefusedAndTheJobGoesOn) {
  JobResult job = RunJob(Program("FABRIC_STRANGER"), 2, {});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, " verified"), 2) << job.out << job.err;
  EXPECT_NE(job.err.find("lmdx[rank 0]: fabric: refused a message: its header has 8 bytes"),
            std::string::npos)
      << job.err;
  // The small and the rendezvous-sized forgery, and the small-message form's.
  EXPECT_EQ(CountOf(job.err, "claims to come from rank 1 but its pair token is wrong"), 3)
      << job.err;
  for (const char* refusal : {
           "refused a message: it has no header and 5 bytes of data",
           // The small-message form large enough for UCX's rendezvous: its data is not at hand.
           "refused a message: it has no header and 4194332 bytes of data",
           "refused a message: its small-message header came as UCX's header",
           "claims to come from rank 7, which is not another rank of this job",
       }) {
    EXPECT_NE(job.err.find(refusal), std::string::npos) << refusal << "\n" << job.err;
  }
}

TEST_P(FabricTest, ANodeThatDiesEndsTheJobNamingIt) {
  JobResult job = RunJob(Program("CRASH"), 3, {"1"}, {}, std::chrono::seconds(60));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("rank 1 died (killed by signal SIGSEGV)"), std::string::npos) << job.err;
}

INSTANTIATE_TEST_SUITE_P(UcxTransports, FabricTest, ::testing::Values("tcp", "sm"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "tcp" ? "Tcp" : "SharedMemory";
                         });

// UCX starts only in jobs that ask for fabric: with a UCX_TLS that would make it fail, a job that
// does not ask never says so.
TEST(FabricStartTest, UcxIsNotStartedUnlessFabricIsAskedFor) {
  ScopedEnv tls("UCX_TLS", "no-such-transport");
  ScopedEnv transport("LMDX_TRANSPORT", "any");
  JobResult job = RunJob(Program("EXCHANGE"), 2, {"1000"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(job.err.find("fabric"), std::string::npos) << job.err;
}

// A pair entry starts it too; the other pairs keep the best network they share.
TEST(FabricStartTest, APairEntryNamingFabricStartsIt) {
  ScopedEnv tls("UCX_TLS", "tcp");
  ScopedEnv transport("LMDX_TRANSPORT", "any");
  ScopedEnv pairs("LMDX_TRANSPORT_PAIRS", "0-1:fabric");
  JobResult job = RunJob(Program("EXCHANGE"), 3, {"100000"}, {"--show-transports"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("      0      - fabric    shm\n"
                         "      1 fabric      -    shm\n"
                         "      2    shm    shm      -\n"),
            std::string::npos)
      << job.out;
}

// UCX that cannot start (here: a transport it does not have) costs the job nothing but fabric.
TEST(FabricStartTest, WhenUcxCannotStartTheNodeGoesOnWithoutIt) {
  ScopedEnv tls("UCX_TLS", "no-such-transport");
  ScopedEnv transport("LMDX_TRANSPORT", "fabric");
  JobResult job = RunJob(Program("EXCHANGE"), 2, {"1000"}, {"--show-transports"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.err.find("lmdx[rank 0]: going without the fabric transport: UCX cannot start: "
                         "ucp_init: "),
            std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("UCX_TLS is \"no-such-transport\""), std::string::npos) << job.err;
  EXPECT_NE(job.out.find("      0      -    shm\n"), std::string::npos) << job.out;
}

}  // namespace
}  // namespace lmdx::testing

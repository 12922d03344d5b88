// Groups in real jobs of real node processes, through the launcher.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string Program(const char* variable) { return BinaryFromEnv(variable); }

// Every call, every size up to 1 MiB (4 KiB on 16 nodes: the machine has 2 cores), in the whole
// job, in the whole job in reverse order, and in the even and odd halves at the same time.
class GroupPatternsTest : public ::testing::TestWithParam<int> {};

TEST_P(GroupPatternsTest, EveryByteIsWhatItsSenderWrote) {
  int nodes = GetParam();
  std::string max = nodes >= 16 ? "4096" : "1048576";
  JobResult job = RunJob(Program("PATTERNS"), nodes, {max}, {}, std::chrono::seconds(300));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "patterns ok"), nodes) << job.out;
  EXPECT_EQ(job.err.find("dropped"), std::string::npos) << job.err;
}

INSTANTIATE_TEST_SUITE_P(Nodes, GroupPatternsTest, ::testing::Values(2, 3, 4, 8, 16));

// Over TCP, payloads of more than 16 KiB are read from the socket straight into the caller's
// buffer: the placed path, with the shared-memory rings out of the way.
TEST(GroupPatternsTest, OverTcp) {
  ::setenv("LMDX_TRANSPORT", "tcp", 1);
  JobResult job = RunJob(Program("PATTERNS"), 5, {"1048576"}, {}, std::chrono::seconds(300));
  ::unsetenv("LMDX_TRANSPORT");
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "patterns ok"), 5) << job.out;
}

class GroupSequenceTest : public ::testing::TestWithParam<int> {};

TEST_P(GroupSequenceTest, AThousandCollectivesNeverMix) {
  int nodes = GetParam();
  JobResult job = RunJob(Program("MANY"), nodes, {"1000"}, {}, std::chrono::seconds(300));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "1000 collectives in order"), nodes) << job.out;
}

INSTANTIATE_TEST_SUITE_P(Nodes, GroupSequenceTest, ::testing::Values(3, 4, 8));

// The root of a 16-node broadcast sends ceil(log2 16) = 4 frames; nobody sends one per member.
TEST(GroupTrafficTest, SixteenNodesTreesNotFanOut) {
  JobResult job = RunJob(Program("TRAFFIC"), 16, {}, {}, std::chrono::seconds(300));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("rank 0: bcast of 4 KiB from rank 0: the root sent 4 frames (ceil(log2 "
                         "16) = 4), at most 4 at any member, every other member received 1, 15 "
                         "in all"),
            std::string::npos)
      << job.out;
  EXPECT_NE(job.out.find("rank 0: bcast of 4 KiB from rank 9: the root sent 4 frames (ceil(log2 "
                         "16) = 4), at most 4 at any member, every other member received 1, 15 "
                         "in all"),
            std::string::npos)
      << job.out;
  EXPECT_NE(job.out.find("rank 0: gather of 4 KiB to rank 0: the root received 4 frames, every "
                         "other member sent 1, 15 in all"),
            std::string::npos)
      << job.out;
  EXPECT_NE(job.out.find("rank 0: alltoall of 4 KiB blocks: every member sent 15 frames and "
                         "received 15"),
            std::string::npos)
      << job.out;
  EXPECT_NE(job.out.find("rank 0: group send of 4 KiB from rank 3: the root sent 4 frames "
                         "(ceil(log2 16) = 4), at most 4 at any member, every other member "
                         "received 1, 15 in all"),
            std::string::npos)
      << job.out;
}

TEST(GroupMisuseTest, EveryMisuseIsReportedWithGroupAndRank) {
  JobResult job = RunJob(Program("MISUSE"), 4, {"return"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("rank 0: 11 misuse cases reported"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("rank 1: 15 misuse cases reported"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("rank 2: 9 misuse cases reported"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("rank 3: 11 misuse cases reported"), std::string::npos) << job.out;
}

TEST(GroupMisuseTest, FatalModeEndsTheJobWithOneClearLine) {
  JobResult job = RunJob(Program("MISUSE"), 3, {"fatal"}, {}, std::chrono::seconds(30));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("lmdx_group_create: group \"mixed\": rank "), std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("[0, 1]"), std::string::npos) << job.err;
  EXPECT_NE(job.err.find("[1, 0]"), std::string::npos) << job.err;
  EXPECT_EQ(job.out.find("went unnoticed"), std::string::npos) << job.out;
}

}  // namespace
}  // namespace lmdx::testing

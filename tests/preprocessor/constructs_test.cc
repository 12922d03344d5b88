// Programs written in lmdxpp's dialect, built with lmdx_cc_binary, run as jobs: each checks its
// shared data, threads and synchronisation itself and prints "constructs ok".
#include <gtest/gtest.h>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

class ConstructsTest : public ::testing::TestWithParam<int> {};

TEST_P(ConstructsTest, CProgram) {
  JobResult job = RunJob(BinaryFromEnv("CONSTRUCTS"), GetParam(), {});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(job.out, "constructs ok on " + std::to_string(GetParam()) + " nodes\n") << job.err;
}

TEST_P(ConstructsTest, CxxProgram) {
  JobResult job = RunJob(BinaryFromEnv("CONSTRUCTS_CXX"), GetParam(), {"--check"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(job.out, "constructs ok on " + std::to_string(GetParam()) + " nodes\n") << job.err;
}

// Rank 0 ends the job while the others may still be creating the variables: a node whose answer
// cannot go out any more, or that learns of the end while it starts, must leave quietly.
TEST(EarlyExitTest, MainEndingAtOnceEndsTheJobWithItsStatusAndNothingElse) {
  for (int round = 0; round < 8; ++round) {
    JobResult job = RunJob(BinaryFromEnv("EARLY_EXIT"), 4, {});
    ASSERT_EQ(job.exit_code, 2) << job.out << job.err;
    EXPECT_EQ(job.err, "leaving with status 2\nlmdx run: rank 0 exited with status 2\n")
        << "round " << round;
  }
}

INSTANTIATE_TEST_SUITE_P(Nodes, ConstructsTest, ::testing::Values(1, 3));

}  // namespace
}  // namespace lmdx::testing

// lrc in a program that never passes a barrier (programs/lock_only.cc): a million intervals of
// one writer, a reader that checks every word now and then, and a home that never touches its
// pages. The fetches' diffs stay few (homes hear what fetched copies hold) and no answer passes
// the wire's bounds, even the one fetch that needs every diff of the run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/stats_table.h"

namespace lmdx::testing {
namespace {

TEST(LockOnlyTest, AMillionIntervalsWithoutABarrierUnderLrc) {
  ScopedEnv protocol("LMDX_PROTOCOL", "lrc");
  JobResult job = RunJob(BinaryFromEnv("LOCK_ONLY"), 3, {"1000000", "20"}, {"--stats"},
                         std::chrono::seconds(600));
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified: 1000000 intervals"), std::string::npos) << job.out << job.err;
  // The reader described its copies to the home, which took them in: each fetch gathered the
  // diffs since the last one, so the reader applied each diff about once.
  const std::string stats = job.out + job.err;
  EXPECT_GT(StatsColumnSum(stats, "home-upd-out"), 10u) << stats;
  EXPECT_GT(StatsColumnSum(stats, "home-upd-in"), 10u) << stats;
  EXPECT_LT(StatsColumnSum(stats, "applied"), 6000000u) << stats;
}

// With coherence units of the four pages, the reader's one fault asks the writer for all four
// million diffs in one request: more than one answer may carry.
TEST(LockOnlyTest, OneFetchOfEveryDiffOfTheRunComesInBoundedAnswers) {
  ScopedEnv protocol("LMDX_PROTOCOL", "lrc");
  const char* scratch = std::getenv("TEST_TMPDIR");
  const std::string conf = std::string(scratch != nullptr ? scratch : "/tmp") + "/unit4.conf";
  std::ofstream(conf) << "dsm { unit: 4 }\n";
  JobResult job = RunJob(BinaryFromEnv("LOCK_ONLY"), 3, {"1000000", "0"}, {"--config", conf},
                         std::chrono::seconds(600));
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified: 1000000 intervals"), std::string::npos) << job.out << job.err;
  EXPECT_NE(job.out.find("the reader checked 1 times"), std::string::npos) << job.out;
}

TEST(LockOnlyTest, OtherProtocolsRunItToo) {
  for (const char* protocol : {"sc", "update", "rc", "hlrc"}) {
    ScopedEnv chosen("LMDX_PROTOCOL", protocol);
    JobResult job = RunJob(BinaryFromEnv("LOCK_ONLY"), 3, {"20000", "5"});
    EXPECT_EQ(job.exit_code, 0) << protocol << job.out << job.err;
    EXPECT_NE(job.out.find("verified: 20000 intervals"), std::string::npos) << protocol << job.out;
  }
}

}  // namespace
}  // namespace lmdx::testing

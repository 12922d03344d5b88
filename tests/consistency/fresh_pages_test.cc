// Fresh pages opened at their home while another node fetches them (programs/fresh_pages.cc),
// under every home-based protocol and both ways of catching faults, with the opening held open
// on purpose (LMDX_DSM_FAULTS=open-pause) so that the fetch and a second thread's write fall in it.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

class FreshPagesTest : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(FreshPagesTest, ASecondThreadsWriteDuringTheOpeningReachesTheNodeThatFetched) {
  ScopedEnv protocol("LMDX_PROTOCOL", std::get<0>(GetParam()));
  ScopedEnv access("LMDX_DSM_ACCESS", std::get<1>(GetParam()));
  ScopedEnv pause("LMDX_DSM_FAULTS", "open-pause=300");
  const char* scratch = std::getenv("TEST_TMPDIR");
  const std::string conf = std::string(scratch != nullptr ? scratch : "/tmp") + "/unit2.conf";
  std::ofstream(conf) << "dsm { unit: 2 }\n";
  JobResult job = RunJob(BinaryFromEnv("FRESH_PAGES"), 2, {}, {"--config", conf});
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified"), std::string::npos) << job.out << job.err;
}

INSTANTIATE_TEST_SUITE_P(Protocols, FreshPagesTest,
                         ::testing::Combine(::testing::Values("update", "rc", "lrc", "hlrc"),
                                            ::testing::Values("auto", "mprotect")));

TEST(FreshPagesTest, ABadFaultSettingIsRefusedByName) {
  ScopedEnv pause("LMDX_DSM_FAULTS", "open-pause=soon");
  ScopedEnv protocol("LMDX_PROTOCOL", "hlrc");
  JobResult job = RunJob(BinaryFromEnv("FRESH_PAGES"), 2, {});
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("LMDX_DSM_FAULTS: \"open-pause=soon\""), std::string::npos) << job.err;
}

}  // namespace
}  // namespace lmdx::testing

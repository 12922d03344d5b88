// The DSM in real jobs of real node processes, through the launcher: every scenario of
// programs/dsm_checks.cc compares shared memory with what a sequential run computes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string Checks() { return BinaryFromEnv("DSM_CHECKS"); }

// A file in the test's scratch directory (Bazel's TEST_TMPDIR, /tmp elsewhere).
std::string ScratchFile(const std::string& name) {
  const char* directory = std::getenv("TEST_TMPDIR");
  return std::string(directory != nullptr ? directory : "/tmp") + "/" + name;
}

void ExpectVerified(const JobResult& job, const std::string& scenario, int nodes) {
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified: " + scenario + " on " + std::to_string(nodes) + " nodes"),
            std::string::npos)
      << job.out << job.err;
}

class ScenarioTest : public ::testing::TestWithParam<int> {};

TEST_P(ScenarioTest, WritesAreSeenAfterBarriersAndLockHandoffs) {
  ExpectVerified(RunJob(Checks(), GetParam(), {"visibility"}), "visibility", GetParam());
}

TEST_P(ScenarioTest, NodesWritingDisjointWordsOfOnePageKeepEveryWord) {
  ExpectVerified(RunJob(Checks(), GetParam(), {"false_sharing", "200"}), "false_sharing",
                 GetParam());
}

TEST_P(ScenarioTest, NamedVariablesCreatedInARaceAreOne) {
  JobResult job = RunJob(Checks(), GetParam(), {"names"});
  ExpectVerified(job, "names", GetParam());
  EXPECT_NE(job.out.find("size mismatch: lmdx_shared_var: shared variable \"raced\" exists with "
                         "12345 bytes; this call asked for 100 bytes"),
            std::string::npos)
      << job.out;
}

TEST_P(ScenarioTest, GetAndPutAgreeWithLoadsAndStores) {
  ExpectVerified(RunJob(Checks(), GetParam(), {"getput"}), "getput", GetParam());
}

TEST_P(ScenarioTest, CppSharedAndAllocator) {
  ExpectVerified(RunJob(Checks(), GetParam(), {"cpp"}), "cpp", GetParam());
}

INSTANTIATE_TEST_SUITE_P(Nodes, ScenarioTest, ::testing::Values(2, 4, 8));

TEST(CounterTest, FourNodesTwoThreadsTenThousandIncrementsUnderALock) {
  ExpectVerified(RunJob(Checks(), 4, {"counter", "2", "10000"}, {}, std::chrono::seconds(240)),
                 "counter", 4);
}

TEST(HeapTest, AHundredThousandAllocationsAndFreesFromEveryNode) {
  ExpectVerified(RunJob(Checks(), 4, {"heap", "100000"}, {}, std::chrono::seconds(240)), "heap", 4);
}

TEST(HeapTest, EightNodes) { ExpectVerified(RunJob(Checks(), 8, {"heap", "40000"}), "heap", 8); }

class CrashTest : public ::testing::TestWithParam<const char*> {};

// A fault outside shared data is the program's own crash: the node dies of SIGSEGV and the
// launcher names it, as it would without LMDX.
TEST_P(CrashTest, AWildAccessStillKillsTheNodeWithSigsegv) {
  JobResult job = RunJob(Checks(), 3, {"crash", GetParam()}, {}, std::chrono::seconds(30));
  EXPECT_EQ(job.exit_code, 128 + 11) << job.out << job.err;
  EXPECT_NE(job.err.find("rank 2 died (killed by signal SIGSEGV)"), std::string::npos) << job.err;
  EXPECT_EQ(job.out.find("verified"), std::string::npos) << job.out;
}

INSTANTIATE_TEST_SUITE_P(Where, CrashTest, ::testing::Values("null", "unmapped_variable_area"));

TEST(StatsTest, LmdxStatsPrintsATablePerNodeAndWritesJson) {
  std::string json_path = ScratchFile("stats.json");
  ::setenv("LMDX_STATS", "1", 1);
  ::setenv("LMDX_STATS_JSON", json_path.c_str(), 1);
  JobResult job = RunJob(Checks(), 3, {"visibility"});
  ::unsetenv("LMDX_STATS");
  ::unsetenv("LMDX_STATS_JSON");
  ExpectVerified(job, "visibility", 3);
  EXPECT_NE(job.err.find("lmdx statistics (protocol sc)"), std::string::npos) << job.err;
  for (const char* row : {"\n   0 ", "\n   1 ", "\n   2 "}) {
    EXPECT_NE(job.err.find(row), std::string::npos) << row << job.err;
  }
  EXPECT_NE(job.err.find("sc-acquire"), std::string::npos) << job.err;
  std::ifstream file(json_path);
  std::stringstream json;
  json << file.rdbuf();
  EXPECT_EQ(CountOf(json.str(), "\"rank\":"), 3) << json.str();
  EXPECT_NE(json.str().find("\"read_faults\""), std::string::npos) << json.str();
  EXPECT_NE(json.str().find("\"sc-fetch\""), std::string::npos) << json.str();
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The figure `field` of `rank` in a JSON statistics report.
long long StatOf(const std::string& json, int rank, const std::string& field) {
  std::size_t at = json.find("\"rank\": " + std::to_string(rank) + ",");
  if (at == std::string::npos) return -1;
  at = json.find("\"" + field + "\": \"", at);
  if (at == std::string::npos) return -1;
  return std::atoll(json.c_str() + at + field.size() + 5);
}

// Threads of one node faulting on the same page wait for one fetch instead of each fetching.
TEST(FaultTest, ThreadsOfANodeFaultingOnOnePageShareOneFetch) {
  std::string json_path = ScratchFile("one_fetch.json");
  ::setenv("LMDX_STATS", "1", 1);
  ::setenv("LMDX_STATS_JSON", json_path.c_str(), 1);
  JobResult job = RunJob(Checks(), 2, {"one_fetch", "200", "4"});
  ::unsetenv("LMDX_STATS");
  ::unsetenv("LMDX_STATS_JSON");
  ExpectVerified(job, "one_fetch", 2);
  std::string json = ReadFile(json_path);
  long long fetched = StatOf(json, 1, "pages_fetched");
  // 200 pages and the page holding the pointer to them; 4 threads fetching each would be 800.
  EXPECT_GE(fetched, 200) << json;
  EXPECT_LE(fetched, 205) << json;
  EXPECT_GE(StatOf(json, 1, "read_faults"), 200) << json;
}

// Every home distribution keeps the data right.
class HomeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(HomeTest, VisibilityAndFalseSharingUnderEachHomePolicy) {
  ::setenv("LMDX_DSM_HOME", GetParam(), 1);
  JobResult visibility = RunJob(Checks(), 3, {"visibility"});
  JobResult false_sharing = RunJob(Checks(), 3, {"false_sharing", "100"});
  JobResult getput = RunJob(Checks(), 3, {"getput"});
  ::unsetenv("LMDX_DSM_HOME");
  ExpectVerified(visibility, "visibility", 3);
  ExpectVerified(false_sharing, "false_sharing", 3);
  ExpectVerified(getput, "getput", 3);
}

INSTANTIATE_TEST_SUITE_P(Policies, HomeTest, ::testing::Values("block", "cyclic", "first_touch"));

TEST(RangeTest, ANodeThatCannotReserveTheRangeRefusesToStartAndSaysWhy) {
  ::setenv("LMDX_DSM_BASE", "0x7ff000000000", 1);  // overlaps the stacks and libraries
  ::setenv("LMDX_DSM_SIZE", "64G", 1);
  JobResult job = RunJob(Checks(), 2, {"visibility"}, {}, std::chrono::seconds(30));
  ::unsetenv("LMDX_DSM_BASE");
  ::unsetenv("LMDX_DSM_SIZE");
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("cannot reserve the global range 0x7ff000000000"), std::string::npos)
      << job.err;
}

}  // namespace
}  // namespace lmdx::testing

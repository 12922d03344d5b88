// Under mprotect every run of pages with one protection is a memory mapping, and the kernel allows
// a process vm.max_map_count of them (65,530 by default). A 140,000-page variable with cyclic
// homes on 2 nodes makes every page a run of its own on each node: the job died there, before the
// view's runs were kept within a budget by closing pages (docs/dsm.md). Through the real launcher,
// every page is written by its home and read by both nodes, and every value checked against the
// same writes made one after another in private memory.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

std::string ScratchFile(const std::string& name) {
  const char* directory = std::getenv("TEST_TMPDIR");
  return std::string(directory != nullptr ? directory : "/tmp") + "/" + name;
}

// Two rounds: in the second, pages closed in the first are written again (an upgrade under sc, a
// twin under hlrc) and invalidated at the other node.
void RunEveryPage(const char* protocol) {
  ScopedEnv home("LMDX_DSM_HOME", "cyclic");
  ScopedEnv access("LMDX_DSM_ACCESS", "mprotect");
  ScopedEnv protocol_env("LMDX_PROTOCOL", protocol);
  ScopedEnv stats("LMDX_STATS", "1");
  ScopedEnv json("LMDX_STATS_JSON", ScratchFile(std::string("every_page_") + protocol + ".json"));
  JobResult job = RunJob(BinaryFromEnv("DSM_CHECKS"), 2, {"every_page", "140000", "2"}, {},
                         std::chrono::seconds(180));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified: every_page on 2 nodes"), std::string::npos) << job.out;
  // The job ran under mprotect and reached the budget: pages were closed and opened again.
  EXPECT_NE(job.err.find("pages protected by mprotect"), std::string::npos) << job.err;
  EXPECT_NE(job.err.find("pages-closed"), std::string::npos) << job.err;
}

// Single writer: pages move whole between the nodes.
TEST(MappingLimitTest, ACyclicVariableOf140000PagesOnTwoNodesUnderSc) { RunEveryPage("sc"); }

// Multiple writers: releases protect every written page again, in runs.
TEST(MappingLimitTest, ACyclicVariableOf140000PagesOnTwoNodesUnderHlrc) { RunEveryPage("hlrc"); }

}  // namespace
}  // namespace lmdx::testing

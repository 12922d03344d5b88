// samples/jacobi_mdx through the launcher: MDX's Jacobi program, translated by lmdxpp, on 2 and 4
// nodes over each network; the sample checks every element of the shared grid against the same
// sweeps computed sequentially, and a wrong element must be caught.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <tuple>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string JacobiMdx() { return BinaryFromEnv("JACOBI_MDX"); }

// The first line of a run: sizes, sweeps, workers and nodes, then the time it took.
std::regex SummaryLine(int sweeps, int workers, int nodes) {
  return std::regex("jacobi_mdx: 1024x1024 grid, " + std::to_string(sweeps) +
                    " sweeps \\(a fixed count\\), " + std::to_string(workers) + " workers on " +
                    std::to_string(nodes) + " nodes: [0-9]+\\.[0-9]{2} s\n");
}

class JacobiMdxTest : public ::testing::TestWithParam<std::tuple<int, const char*>> {
 protected:
  void SetUp() override { ::setenv("LMDX_TRANSPORT", std::get<1>(GetParam()), 1); }
  void TearDown() override { ::unsetenv("LMDX_TRANSPORT"); }
};

TEST_P(JacobiMdxTest, OneWorkerPerNodeMatchesTheSequentialSweepsExactly) {
  const int nodes = std::get<0>(GetParam());
  JobResult job = RunJob(JacobiMdx(), nodes, {});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  std::string first_line = job.out.substr(0, job.out.find('\n') + 1);
  EXPECT_TRUE(std::regex_match(first_line, SummaryLine(100, nodes, nodes))) << job.out;
  EXPECT_EQ(job.out.substr(first_line.size()), "verified\n");
}

INSTANTIATE_TEST_SUITE_P(NodesAndNetworks, JacobiMdxTest,
                         ::testing::Combine(::testing::Values(2, 4),
                                            ::testing::Values("tcp", "shm")),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "_nodes_" +
                                  std::get<1>(info.param);
                         });

// Three workers on two nodes: uneven bands, and two workers share one node's scratch matrix.
TEST(JacobiMdxBandsTest, MoreWorkersThanNodes) {
  JobResult job = RunJob(JacobiMdx(), 2, {"--workers", "3", "--sweeps", "40"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  std::string first_line = job.out.substr(0, job.out.find('\n') + 1);
  EXPECT_TRUE(std::regex_match(first_line, SummaryLine(40, 3, 2))) << job.out;
  EXPECT_EQ(job.out.substr(first_line.size()), "verified\n");
}

// --wrong-result makes worker 0 add 1 to one element in its last sweep: the check names that
// element, with the value it found and the one it expected, and the job fails.
TEST(JacobiMdxCheckTest, AWrongElementIsReportedAndTheJobFails) {
  JobResult job = RunJob(JacobiMdx(), 4, {"--wrong-result"});
  EXPECT_EQ(job.exit_code, 1) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "verified"), 0) << job.out;
  std::smatch found;
  ASSERT_TRUE(std::regex_search(
      job.out, found,
      std::regex("\njacobi_mdx: grid\\[1\\]\\[512\\] = ([0-9.e+-]+), expected ([0-9.e+-]+)\n$")))
      << job.out;
  const float got = std::strtof(found[1].str().c_str(), nullptr);
  const float expected = std::strtof(found[2].str().c_str(), nullptr);
  EXPECT_GT(expected, 0.0f);
  EXPECT_EQ(got, expected + 1.0f);
}

TEST(JacobiMdxCheckTest, ABadArgumentStopsTheJobWithItsUsage) {
  JobResult job = RunJob(JacobiMdx(), 2, {"--sweeps", "0"});
  EXPECT_EQ(job.exit_code, 2) << job.out << job.err;
  EXPECT_EQ(job.out, "");
  EXPECT_NE(job.err.find("jacobi_mdx: bad argument '--sweeps'; usage: jacobi_mdx [--sweeps "
                         "1-100000] [--workers 1-64] [--wrong-result]\n"),
            std::string::npos)
      << job.err;
}

}  // namespace
}  // namespace lmdx::testing

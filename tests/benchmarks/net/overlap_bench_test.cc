// `lmdx bench overlap --quick` end to end over shm: real LMDX and OpenMPI jobs, a row with both
// sides' figures for each size, and the report files (the figures themselves are the benchmark's
// to report, not this test's to judge).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(OverlapBenchTest, QuickRunOverShmPrintsBothSidesForEverySize) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string out = std::string(tmp != nullptr ? tmp : "/tmp") + "/overlap";
  JobResult run = RunCommand({BinaryFromEnv("OVERLAP_BENCH"), "--quick", "--networks", "shm",
                              "--out", out, "--lmdx-tool", BinaryFromEnv("LMDX_TOOL")},
                             {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"},
                             std::chrono::seconds(300));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::string number = R"([0-9]+\.[0-9])";
  const std::string both = number + " / " + number;
  for (const char* size : {"8 B", "8 KiB", "1 MiB"}) {
    std::regex row("\\| " + std::string(size) + " \\| " + both + " \\| " + both + " \\| " + both +
                   " \\| " + both + " \\| [0-9]+ / [0-9]+ \\|");
    EXPECT_TRUE(std::regex_search(run.out, row)) << size << "\n" << run.out;
  }
  EXPECT_TRUE(std::regex_search(run.out, std::regex("G \\(per byte, between the two largest "
                                                    "sizes\\): LMDX [0-9.]+ ns/B")))
      << run.out;
  std::string csv = Read(out + "/overlap.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7) << csv;  // a header, 3 sizes x 2 sides
  EXPECT_NE(Read(out + "/overlap.md").find("## shm"), std::string::npos);
}

}  // namespace
}  // namespace lmdx::testing

// `lmdx bench tasks --quick` end to end: real jobs on 1 and 2 nodes, and a table with a number in
// every row (the figures themselves are the benchmark's to report, not this test's to judge).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

TEST(TasksBenchTest, QuickRunPrintsEveryFigure) {
  JobResult run = RunCommand({BinaryFromEnv("TASKS_BENCH"), "--quick", "--runs", "1", "--lmdx-tool",
                              BinaryFromEnv("LMDX_TOOL")},
                             {}, std::chrono::seconds(300));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  for (const char* row :
       {R"(spawn \+ run of an empty task, 1 node +[0-9.]+ ns)",
        R"(fib\(25\) per call \(spawn, run, wait\), 1 node +[0-9.]+ ns)",
        R"(one-way latency, 8 B message, 2 nodes +[0-9.]+ µs)",
        R"(steal: spawn to start on the other node +[0-9.]+ µs +[0-9.]+ latencies)",
        R"(METG\(50%\), 1 node: )", R"(METG\(50%\), 2 nodes: )",
        R"(fib --n 20 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x)",
        R"(uts --depth 6 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x)",
        R"(mandelbrot --width 128 --height 96 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x)",
        R"(quicksort --keys 100000 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x)"}) {
    EXPECT_TRUE(std::regex_search(run.out, std::regex(row))) << row << "\n" << run.out;
  }
}

}  // namespace
}  // namespace lmdx::testing

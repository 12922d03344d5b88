// The task samples (docs/tasks.md) through the launcher as users run them, at small sizes: each
// under every scheduler on 1 to 3 nodes, those that share memory under every protocol, and each
// one's self-check (--wrong-result must be reported). Every sample checks its own result against
// a sequential computation and prints `verified`.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

struct Sample {
  const char* name;
  const char* binary_variable;
  std::vector<std::string> small_args;
  bool shares_memory;
};

const std::vector<Sample>& Samples() {
  static const std::vector<Sample> samples = {
      {"fib", "FIB", {"--n", "20"}, false},
      {"nqueens", "NQUEENS", {"--n", "9", "--task-rows", "3"}, false},
      {"uts", "UTS", {"--depth", "7", "--work", "100"}, false},
      {"mandelbrot",
       "MANDELBROT",
       {"--width", "96", "--height", "64", "--iterations", "200"},
       true},
      {"quicksort", "QUICKSORT", {"--keys", "60000", "--cutoff", "2000"}, true},
  };
  return samples;
}

void ExpectVerified(const JobResult& job) {
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "\nverified\n"), 1) << job.out << job.err;
}

using SchedulerCase = std::tuple<int, std::string, int>;  // sample, scheduler, nodes

class TaskSampleUnderSchedulerTest : public ::testing::TestWithParam<SchedulerCase> {};

TEST_P(TaskSampleUnderSchedulerTest, VerifiesItsResult) {
  const auto& [index, scheduler, nodes] = GetParam();
  const Sample& sample = Samples()[index];
  ScopedEnv chosen("LMDX_TASK_SCHEDULER", scheduler);
  JobResult job = RunJob(BinaryFromEnv(sample.binary_variable), nodes, sample.small_args,
                         {"--protocol", "hlrc"});
  ExpectVerified(job);
  EXPECT_NE(job.out.find(std::to_string(nodes) + " nodes"), std::string::npos) << job.out;
}

std::vector<SchedulerCase> SchedulerCases() {
  std::vector<SchedulerCase> cases;
  for (int index = 0; index < static_cast<int>(Samples().size()); ++index) {
    for (const char* scheduler : {"steal", "share", "least_loaded"}) {
      for (int nodes : {1, 2, 3}) cases.emplace_back(index, scheduler, nodes);
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Matrix, TaskSampleUnderSchedulerTest,
                         ::testing::ValuesIn(SchedulerCases()), [](const auto& info) {
                           return std::string(Samples()[std::get<0>(info.param)].name) + "_" +
                                  std::get<1>(info.param) + "_" +
                                  std::to_string(std::get<2>(info.param)) + "_nodes";
                         });

TEST(TaskSamplesTest, ThoseThatShareMemoryVerifyUnderEveryProtocol) {
  for (const Sample& sample : Samples()) {
    if (!sample.shares_memory) continue;
    for (const char* protocol : {"sc", "update", "rc", "lrc", "hlrc"}) {
      SCOPED_TRACE(std::string(sample.name) + " under " + protocol);
      JobResult job = RunJob(BinaryFromEnv(sample.binary_variable), 3, sample.small_args,
                             {"--protocol", protocol});
      ExpectVerified(job);
      EXPECT_NE(job.out.find(std::string("(") + protocol + ")"), std::string::npos) << job.out;
    }
  }
}

TEST(TaskSamplesTest, EachReportsAWrongResult) {
  for (const Sample& sample : Samples()) {
    SCOPED_TRACE(sample.name);
    std::vector<std::string> args = sample.small_args;
    args.push_back("--wrong-result");
    JobResult job = RunJob(BinaryFromEnv(sample.binary_variable), 2, args);
    EXPECT_EQ(job.exit_code, 1) << job.out << job.err;
    EXPECT_EQ(job.out.find("verified"), std::string::npos) << job.out;
    EXPECT_NE(job.out.find(std::string(sample.name) + ": "), std::string::npos) << job.out;
  }
}

}  // namespace
}  // namespace lmdx::testing

// The DRF fuzzer in CI: a fixed sample of seeds, one job each, over every configuration the
// driver cycles through (protocols and their mix, one-sided access on and off, userfaultfd and
// mprotect, shm and tcp); and the check itself, which must fail a job whose oracle disagrees with
// shared memory and name where.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/consistency/drf/oracle.h"
#include "tests/consistency/drf/program.h"
#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

TEST(DrfFuzzTest, AFixedSampleOfSeedsReadsOnlyRightValuesInEveryConfiguration) {
  // 48 configurations: every one twice.
  JobResult run = RunCommand({BinaryFromEnv("DRF_CHECK"), "--first-seed", "1", "--jobs", "96",
                              "--programs", "10", "--keep-going"},
                             {}, std::chrono::seconds(1500));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("960 programs in 96 jobs, 0 jobs failed"), std::string::npos)
      << run.out << run.err;
}

TEST(DrfFuzzTest, AReadThatDisagreesWithTheOracleFailsTheJobAndSaysWhere) {
  constexpr std::uint64_t kSeed = 5;
  const drf::Layout layout = drf::MakeLayout(kSeed, "hlrc", 2);
  std::size_t bytes = 0;
  for (const drf::Variable& variable : layout.variables) bytes += variable.pages * drf::kPageBytes;
  const char* scratch = std::getenv("TEST_TMPDIR");
  const std::string oracle = std::string(scratch != nullptr ? scratch : "/tmp") + "/wrong.oracle";
  drf::Oracle::Create(oracle, bytes);
  {
    // The oracle claims every byte was written as 0x5a before the job: no shared byte is.
    drf::Oracle image(oracle, bytes);
    std::string claimed(bytes, '\x5a');
    image.Write(0, claimed.data(), bytes, {0, 0, 0, 0, true});
  }
  const std::string conf = std::string(scratch != nullptr ? scratch : "/tmp") + "/wrong.conf";
  std::ofstream(conf) << layout.ConfigText();
  JobResult job = RunJob(BinaryFromEnv("DRF_FUZZ"), layout.nodes,
                         {"--seed", std::to_string(kSeed), "--protocol", "hlrc", "--programs", "2",
                          "--oracle", oracle},
                         {"--config", conf});
  EXPECT_NE(job.exit_code, 0) << job.out << job.err;
  const std::string all = job.out + job.err;
  for (const char* part : {"seed 5", "WRONG VALUE in program 0", "step", "thread", "node", "fz_v",
                           "under hlrc", "expected 0x5a"}) {
    EXPECT_NE(all.find(part), std::string::npos) << part << "\n" << all;
  }
}

}  // namespace
}  // namespace lmdx::testing

// Every sample under every protocol, on 2 and 4 nodes, at a small size: each checks its own
// result against a sequential computation and must print `verified`; the statistics must name the
// protocol asked for, so that a run that silently fell back to another protocol fails.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

struct Sample {
  const char* name;
  const char* binary_variable;  // the environment variable that holds its path
  std::vector<std::string> small_args;
};

const std::vector<Sample>& Samples() {
  static const std::vector<Sample> samples = {
      {"jacobi", "JACOBI", {"--size", "256", "--iterations", "20"}},
      {"matmul", "MATMUL", {"--size", "128"}},
      {"fft", "FFT", {"--log2-points", "12"}},
      {"radix", "RADIX", {"--keys", "65536"}},
      {"prodcons", "PRODCONS", {"--items", "300", "--producers", "2", "--consumers", "2"}},
      {"lu", "LU", {"--size", "128", "--block", "16"}},
  };
  return samples;
}

const Sample& Named(const std::string& name) {
  for (const Sample& sample : Samples()) {
    if (name == sample.name) return sample;
  }
  throw std::invalid_argument("no sample " + name);
}

using Case = std::tuple<std::string, std::string, int>;  // sample, protocol, nodes

class SampleUnderProtocolTest : public ::testing::TestWithParam<Case> {};

TEST_P(SampleUnderProtocolTest, VerifiesItsResult) {
  const auto& [name, protocol, nodes] = GetParam();
  const Sample& sample = Named(name);
  JobResult job = RunJob(BinaryFromEnv(sample.binary_variable), nodes, sample.small_args,
                         {"--protocol", protocol, "--stats"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "\nverified\n"), 1) << job.out;
  EXPECT_NE(job.err.find("lmdx statistics (protocol " + protocol + ")"), std::string::npos)
      << job.err;
  EXPECT_NE(job.out.find(std::to_string(nodes) + " nodes"), std::string::npos) << job.out;
  if (name != "prodcons") {  // the MDX sample does not name the protocol
    EXPECT_NE(job.out.find("protocol " + protocol + ":"), std::string::npos) << job.out;
  }
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const Sample& sample : Samples()) {
    for (const char* protocol : {"sc", "update", "rc", "lrc", "hlrc"}) {
      for (int nodes : {2, 4}) cases.emplace_back(sample.name, protocol, nodes);
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Matrix, SampleUnderProtocolTest, ::testing::ValuesIn(AllCases()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" +
                                  std::to_string(std::get<2>(info.param)) + "_nodes";
                         });

// The explicit-message versions, on 1 to 4 nodes (3: uneven bands): each checks its result as the
// shared version does.
TEST(MessageVersionsTest, VerifyTheirResults) {
  const std::vector<std::pair<const char*, const char*>> versions = {
      {"jacobi", "JACOBI_MSG"}, {"matmul", "MATMUL_MSG"},     {"fft", "FFT_MSG"},
      {"radix", "RADIX_MSG"},   {"prodcons", "PRODCONS_MSG"}, {"lu", "LU_MSG"},
  };
  for (const auto& [name, variable] : versions) {
    for (int nodes : {1, 3, 4}) {
      JobResult job = RunJob(BinaryFromEnv(variable), nodes, Named(name).small_args);
      EXPECT_EQ(job.exit_code, 0) << variable << " on " << nodes << "\n" << job.out << job.err;
      EXPECT_EQ(CountOf(job.out, "\nverified\n"), 1) << job.out;
      EXPECT_NE(job.out.find(std::string(name) + "_msg: "), std::string::npos) << job.out;
    }
  }
}

// More workers than nodes, under every protocol: uneven bands, and two workers of one node share
// its copy of a page.
TEST(SampleWorkersTest, MoreWorkersThanNodes) {
  for (const char* name : {"jacobi", "matmul", "fft", "radix", "lu"}) {
    for (const char* protocol : {"sc", "update", "rc", "lrc", "hlrc"}) {
      std::vector<std::string> args = Named(name).small_args;
      args.insert(args.end(), {"--workers", "3"});
      JobResult job =
          RunJob(BinaryFromEnv(Named(name).binary_variable), 2, args, {"--protocol", protocol});
      ASSERT_EQ(job.exit_code, 0) << name << " under " << protocol << "\n" << job.out << job.err;
      EXPECT_NE(job.out.find("3 workers on 2 nodes"), std::string::npos) << job.out;
      EXPECT_EQ(CountOf(job.out, "\nverified\n"), 1) << job.out;
    }
  }
}

// --wrong-result spoils one element on purpose: the check must name it and the job fail.
TEST(SampleCheckTest, ASpoiledResultIsReportedAndTheJobFails) {
  const std::vector<std::pair<const char*, std::regex>> expected = {
      {"jacobi", std::regex("\njacobi: grid\\[1\\]\\[128\\] = [0-9.e+-]+, expected [0-9.e+-]+\n$")},
      {"matmul", std::regex("\nmatmul: C\\[0\\]\\[64\\] = [0-9.e+-]+, expected [0-9.e+-]+\n$")},
      {"fft",
       std::regex(
           "\nfft: X\\[32\\] = [0-9.e+-]+[+-][0-9.e+-]+i, expected [0-9.e+-]+[+-][0-9.e+-]+i\n$")},
      {"radix", std::regex("\nradix: key\\[32768\\] = [0-9]+, expected [0-9]+\n$")},
      {"lu", std::regex("\nlu: LU\\[1\\]\\[64\\] = [0-9.e+-]+, expected [0-9.e+-]+\n$")},
  };
  for (const auto& [name, line] : expected) {
    std::vector<std::string> args = Named(name).small_args;
    args.push_back("--wrong-result");
    JobResult job =
        RunJob(BinaryFromEnv(Named(name).binary_variable), 2, args, {"--protocol", "lrc"});
    EXPECT_EQ(job.exit_code, 1) << name << "\n" << job.out << job.err;
    EXPECT_EQ(CountOf(job.out, "verified"), 0) << job.out;
    EXPECT_TRUE(std::regex_search(job.out, line)) << job.out;
  }
}

TEST(SampleCheckTest, ABadFlagStopsTheJobNamingIt) {
  for (const Sample& sample : Samples()) {
    if (std::string(sample.name) == "prodcons") continue;  // tested in prodcons_test
    JobResult job = RunJob(BinaryFromEnv(sample.binary_variable), 2, {"--workers", "0"});
    EXPECT_EQ(job.exit_code, 2) << sample.name << "\n" << job.out << job.err;
    EXPECT_NE(job.err.find(std::string(sample.name) +
                           ": --workers needs a whole number from 1 to 1024, not '0'"),
              std::string::npos)
        << job.err;
  }
}

}  // namespace
}  // namespace lmdx::testing

// samples/prodcons through the launcher: MDX's producer-consumer, translated by lmdxpp, on 2 and 4
// nodes over each network, with several producers and consumers, and with a wrong item that the
// checks must catch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <tuple>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string Prodcons() { return BinaryFromEnv("PRODCONS"); }

// The first line of a run: what went through the queue, then the time it took.
std::string FirstLine(const std::string& out) { return out.substr(0, out.find('\n') + 1); }

std::regex SummaryLine(const std::string& what, int nodes) {
  return std::regex("prodcons: " + what + " through a 10-slot buffer on " + std::to_string(nodes) +
                    " nodes: [0-9]+\\.[0-9]{3} s\n");
}

class ProdconsTest : public ::testing::TestWithParam<std::tuple<int, const char*>> {
 protected:
  void SetUp() override { ::setenv("LMDX_TRANSPORT", std::get<1>(GetParam()), 1); }
  void TearDown() override { ::unsetenv("LMDX_TRANSPORT"); }
};

TEST_P(ProdconsTest, EveryItemArrivesOnceAndInOrder) {
  const int nodes = std::get<0>(GetParam());
  JobResult job = RunJob(Prodcons(), nodes, {"--items", "2000"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_TRUE(std::regex_match(FirstLine(job.out),
                               SummaryLine("2000 items from 1 producer to 1 consumer", nodes)))
      << job.out;
  EXPECT_EQ(job.out.substr(FirstLine(job.out).size()), "verified\n");
}

INSTANTIATE_TEST_SUITE_P(NodesAndNetworks, ProdconsTest,
                         ::testing::Combine(::testing::Values(2, 4),
                                            ::testing::Values("tcp", "shm")),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "_nodes_" +
                                  std::get<1>(info.param);
                         });

// `./lmdx run prodcons -n 4` as the README shows it: 10,000 items.
TEST(ProdconsRunTest, TheDefaultRun) {
  JobResult job = RunJob(Prodcons(), 4, {});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_TRUE(std::regex_match(FirstLine(job.out),
                               SummaryLine("10000 items from 1 producer to 1 consumer", 4)))
      << job.out;
  EXPECT_EQ(job.out.substr(FirstLine(job.out).size()), "verified\n");
}

// Several producers share the rear of the queue, several consumers its front, in shared memory.
TEST(ProdconsRunTest, ThreeProducersAndTwoConsumers) {
  JobResult job = RunJob(Prodcons(), 4, {"--producers", "3", "--consumers", "2", "--items", "600"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_TRUE(std::regex_match(FirstLine(job.out),
                               SummaryLine("1800 items from 3 producers to 2 consumers", 4)))
      << job.out;
  EXPECT_EQ(job.out.substr(FirstLine(job.out).size()), "verified\n");
}

// With one consumer, each producer's items must arrive exactly in sequence, interleaved.
TEST(ProdconsRunTest, TwoProducersAndOneConsumer) {
  JobResult job = RunJob(Prodcons(), 3, {"--producers", "2", "--items", "800"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_TRUE(std::regex_match(FirstLine(job.out),
                               SummaryLine("1600 items from 2 producers to 1 consumer", 3)))
      << job.out;
  EXPECT_EQ(job.out.substr(FirstLine(job.out).size()), "verified\n");
}

// --wrong-result makes the producer put item 1001 where 1000 belongs: the consumer sees it out of
// sequence (and the real 1001 after it), main reports it and the job fails.
TEST(ProdconsCheckTest, AWrongItemIsReportedAndTheJobFails) {
  JobResult job = RunJob(Prodcons(), 4, {"--items", "2000", "--wrong-result"});
  EXPECT_EQ(job.exit_code, 1) << job.out << job.err;
  EXPECT_TRUE(std::regex_match(FirstLine(job.out),
                               SummaryLine("2000 items from 1 producer to 1 consumer", 4)))
      << job.out;
  EXPECT_EQ(job.out.substr(FirstLine(job.out).size()),
            "prodcons: consumer 0's item 1000 is 1001, expected 1000\n"
            "prodcons: consumer 0 found 2 items out of order\n");
}

// With two consumers the duplicate may reach both, each in increasing order: the check that
// every item was taken exactly once catches it then.
TEST(ProdconsCheckTest, AWrongItemIsCaughtWithSeveralConsumers) {
  JobResult job = RunJob(
      Prodcons(), 4, {"--producers", "2", "--consumers", "2", "--items", "500", "--wrong-result"});
  EXPECT_EQ(job.exit_code, 1) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "verified"), 0) << job.out;
  EXPECT_TRUE(std::regex_search(job.out, std::regex("\nprodcons: (consumer [01]'s item [0-9]+ is "
                                                    "251, after 251|item 251 was taken twice)\n")))
      << job.out;
}

TEST(ProdconsCheckTest, ABadArgumentStopsTheJobWithItsUsage) {
  JobResult job = RunJob(Prodcons(), 2, {"--producers", "9"});
  EXPECT_EQ(job.exit_code, 2) << job.out << job.err;
  EXPECT_EQ(job.out, "");
  EXPECT_NE(job.err.find("prodcons: bad argument '--producers'; usage: prodcons [--items N] "
                         "[--producers 1-8] [--consumers 1-8] [--wrong-result]\n"),
            std::string::npos)
      << job.err;
}

}  // namespace
}  // namespace lmdx::testing

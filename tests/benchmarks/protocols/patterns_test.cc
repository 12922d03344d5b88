// benchmarks/protocols/patterns through the launcher: each sharing pattern of the protocol report
// under each protocol on 2 nodes at a tiny size, verified against its sequential run, and a
// spoiled value that each pattern's check must name.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <tuple>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string Patterns() { return BinaryFromEnv("PATTERNS"); }

struct Size {
  const char* pattern;
  const char* iterations;  // a few rounds of the pattern; read-mostly's 30 hold one update
};

const Size kSizes[] = {
    {"prodcons", "20"},    {"migratory", "10"}, {"false-sharing", "10"},
    {"read-mostly", "30"}, {"neighbour", "10"},
};

const char* const kProtocols[] = {"sc", "update", "rc", "lrc", "hlrc"};

std::string Name(const std::string& text) {
  std::string name;
  for (char c : text) name += c == '-' ? '_' : c;
  return name;
}

class PatternsTest : public ::testing::TestWithParam<std::tuple<Size, const char*>> {};

TEST_P(PatternsTest, MatchesTheSequentialRun) {
  const auto& [size, protocol] = GetParam();
  JobResult job = RunJob(Patterns(), 2, {size.pattern, size.iterations}, {"--protocol", protocol});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  const std::string first_line = job.out.substr(0, job.out.find('\n'));
  EXPECT_TRUE(std::regex_match(
      first_line, std::regex(std::string("patterns: ") + size.pattern + ", " + size.iterations +
                             " iterations on 2 nodes, protocol " + protocol +
                             ": [0-9]+\\.[0-9]{4} s \\([0-9]+\\.[0-9]{4} ms per iteration\\)")))
      << job.out;
  EXPECT_TRUE(job.out.ends_with("\nverified\n")) << job.out;
}

INSTANTIATE_TEST_SUITE_P(EveryPatternAndProtocol, PatternsTest,
                         ::testing::Combine(::testing::ValuesIn(kSizes),
                                            ::testing::ValuesIn(kProtocols)),
                         [](const auto& info) {
                           return Name(std::get<0>(info.param).pattern) + "_" +
                                  std::get<1>(info.param);
                         });

// The ring of turns makes every turn but the first take the record from another node.
TEST(PatternsShapeTest, EveryMigratoryTurnChangesNode) {
  JobResult job = RunJob(Patterns(), 3, {"migratory", "10"}, {"--protocol", "hlrc"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("\n  the record changed node at 29 of 30 turns\n"), std::string::npos)
      << job.out;
}

// --wrong-result spoils one shared value; the check names it, nothing is verified, the job fails.
class PatternsCheckTest : public ::testing::TestWithParam<Size> {};

TEST_P(PatternsCheckTest, ASpoiledValueIsNamedAndTheJobFails) {
  const Size& size = GetParam();
  JobResult job = RunJob(Patterns(), 2, {size.pattern, size.iterations, "--wrong-result"},
                         {"--protocol", "hlrc"});
  EXPECT_EQ(job.exit_code, 1) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "verified"), 0) << job.out;
  EXPECT_TRUE(std::regex_search(
      job.out, std::regex(std::string("(^|\n)patterns: ") + size.pattern +
                          ": rank [01]: [^\n]+: expected [0-9.e+-]+, got [0-9.e+-]+\n")))
      << job.out;
}

INSTANTIATE_TEST_SUITE_P(EveryPattern, PatternsCheckTest, ::testing::ValuesIn(kSizes),
                         [](const auto& info) { return Name(info.param.pattern); });

TEST(PatternsUsageTest, AnUnknownPatternStopsTheJobWithItsUsage) {
  JobResult job = RunJob(Patterns(), 2, {"ping-pong"});
  EXPECT_EQ(job.exit_code, 2) << job.out << job.err;
  EXPECT_NE(job.err.find("patterns: no pattern 'ping-pong'; usage: patterns "
                         "prodcons|migratory|false-sharing|read-mostly|neighbour"),
            std::string::npos)
      << job.err;
}

}  // namespace
}  // namespace lmdx::testing

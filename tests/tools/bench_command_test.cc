#include "tools/bench_command.h"

#include <gtest/gtest.h>

#include "tests/tools/subprocess.h"
#include "tests/tools/test_binaries.h"

namespace lmdx::tools {
namespace {

using testing::Outcome;
using testing::RunProcess;

TEST(BenchCommandTest, PingpongIsKnown) {
  ASSERT_FALSE(Benchmarks().empty());
  EXPECT_STREQ(Benchmarks()[0].name, "pingpong");
  EXPECT_STREQ(Benchmarks()[0].driver, "benchmarks/net/pingpong_bench");
}

TEST(BenchCommandTest, UnknownNameListsTheKnownOnes) {
  Outcome outcome = RunProcess({testing::TestBinary("LMDX_TOOL_BIN"), "bench", "nosuch"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_NE(outcome.err.find("lmdx bench: no benchmark named 'nosuch'; known:"), std::string::npos)
      << outcome.err;
  EXPECT_NE(outcome.err.find("pingpong"), std::string::npos);
  Outcome no_name = RunProcess({testing::TestBinary("LMDX_TOOL_BIN"), "bench"});
  EXPECT_EQ(no_name.code, 2);
  EXPECT_NE(no_name.err.find("name a benchmark"), std::string::npos) << no_name.err;
}

}  // namespace
}  // namespace lmdx::tools

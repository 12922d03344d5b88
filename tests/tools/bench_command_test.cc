#include "tools/bench_command.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

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

// The driver replaces the tool with the benchmark's arguments and learns where the tool is.
TEST(BenchCommandTest, RunsTheDriverWithItsArgumentsAndTheToolsPath) {
  namespace fs = std::filesystem;
  std::string pattern = (fs::temp_directory_path() / "lmdx-bench-test-XXXXXX").string();
  fs::path home = ::mkdtemp(pattern.data());
  fs::path driver = home / "bazel-bin" / "benchmarks" / "net" / "pingpong_bench";
  fs::create_directories(driver.parent_path());
  std::ofstream(driver) << "#!/bin/sh\necho \"tool=$LMDX_TOOL home=$LMDX_HOME args=$*\"\nexit 5\n";
  fs::permissions(driver, fs::perms::owner_all);

  std::string tool = testing::TestBinary("LMDX_TOOL_BIN");
  Outcome outcome =
      RunProcess({tool, "bench", "pingpong", "--reps", "3"}, {"LMDX_HOME=" + home.string()});
  EXPECT_EQ(outcome.code, 5);
  EXPECT_EQ(outcome.out,
            "tool=" + fs::canonical(tool).string() + " home=" + home.string() + " args=--reps 3\n");
  fs::remove_all(home);
}

}  // namespace
}  // namespace lmdx::tools

#include "tools/run_command.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "tools/usage_error.h"

namespace lmdx::tools {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

TEST(RunCommandTest, NodeCount) {
  EXPECT_EQ(ParseNodeCount("1"), 1);
  EXPECT_EQ(ParseNodeCount("64"), 64);
  for (const char* bad : {"0", "-1", "abc", "", "4x", " 4", "1025", "99999999999"}) {
    EXPECT_THROW(ParseNodeCount(bad), UsageError) << bad;
  }
}

TEST(RunCommandTest, Timeout) {
  EXPECT_EQ(ParseTimeout("2"), milliseconds(2000));
  EXPECT_EQ(ParseTimeout("0.25"), milliseconds(250));
  for (const char* bad : {"0", "-3", "x", "", "1s", "inf", "nan"}) {
    EXPECT_THROW(ParseTimeout(bad), UsageError) << bad;
  }
}

class ResolveProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "lmdx-run-test-XXXXXX").string();
    home_ = ::mkdtemp(pattern.data());
    fs::create_directories(home_ / "samples" / "hello");
    fs::create_directories(home_ / "samples" / "ring");
    fs::create_directories(home_ / "bazel-bin" / "samples" / "hello");
    MakeExecutable(home_ / "bazel-bin" / "samples" / "hello" / "hello");
  }
  void TearDown() override { fs::remove_all(home_); }

  static void MakeExecutable(const fs::path& path) {
    std::ofstream(path) << "#!/bin/sh\n";
    fs::permissions(path, fs::perms::owner_all);
  }

  Paths paths() const { return Paths(home_, home_ / "bazel-bin"); }
  fs::path home_;
};

TEST_F(ResolveProgramTest, SampleByName) {
  EXPECT_EQ(ResolveProgram("hello", paths()), home_ / "bazel-bin" / "samples" / "hello" / "hello");
}

TEST_F(ResolveProgramTest, PathWithASlash) {
  fs::path prog = home_ / "prog";
  MakeExecutable(prog);
  EXPECT_EQ(ResolveProgram(prog.string(), paths()), prog);
}

TEST_F(ResolveProgramTest, ListsSamples) {
  EXPECT_EQ(AvailableSamples(paths()), (std::vector<std::string>{"hello", "ring"}));
  try {
    ResolveProgram("nope", paths());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("available: hello, ring"), std::string::npos);
  }
  EXPECT_THROW(ResolveProgram("ring", paths()), UsageError);  // in the repository, not built
}

TEST_F(ResolveProgramTest, MissingOrNotExecutable) {
  EXPECT_THROW(ResolveProgram((home_ / "missing").string(), paths()), UsageError);
  std::ofstream(home_ / "data") << "x";
  EXPECT_THROW(ResolveProgram((home_ / "data").string(), paths()), UsageError);
  EXPECT_THROW(ResolveProgram((home_ / "samples").string(), paths()), UsageError);  // a folder
}

}  // namespace
}  // namespace lmdx::tools

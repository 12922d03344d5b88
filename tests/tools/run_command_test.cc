#include "tools/run_command.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/tools/subprocess.h"
#include "tests/tools/test_binaries.h"
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

TEST(RunCommandTest, NodeCountWithoutDashN) {
  int nodes = 0;
  EXPECT_EQ(CheckConfiguration("", &nodes), "");
  EXPECT_EQ(nodes, kDefaultNodes);

  // A configuration whose modules name ranks 0 to 2 implies 3 nodes; -n beats it, and a job too
  // small for its modules is refused.
  fs::path file =
      fs::temp_directory_path() / ("lmdx-run-test-" + std::to_string(::getpid()) + ".conf");
  std::ofstream(file) << "module { name: \"master\" ranks: \"0\" shares_memory: false }\n"
                         "module { name: \"workers\" ranks: \"1-2\" }\n";
  nodes = 0;
  EXPECT_EQ(CheckConfiguration(file.string(), &nodes), fs::absolute(file).string());
  EXPECT_EQ(nodes, 3);
  nodes = 5;
  EXPECT_THROW(CheckConfiguration(file.string(), &nodes), UsageError);  // rank 3 in no module
  nodes = 2;
  EXPECT_THROW(CheckConfiguration(file.string(), &nodes), UsageError);  // rank 2 beyond the job
  fs::remove(file);
}

TEST(RunCommandTest, Timeout) {
  EXPECT_EQ(ParseTimeout("2"), milliseconds(2000));
  EXPECT_EQ(ParseTimeout("0.25"), milliseconds(250));
  for (const char* bad : {"0", "-3", "x", "", "1s", "inf", "nan"}) {
    EXPECT_THROW(ParseTimeout(bad), UsageError) << bad;
  }
}

TEST(RunCommandTest, JoinTimeout) {
  EXPECT_EQ(ParseJoinTimeout("30", "--join-timeout"), milliseconds(30000));
  EXPECT_EQ(ParseJoinTimeout("0.5", "--join-timeout"), milliseconds(500));
  EXPECT_EQ(ParseJoinTimeout("0", "--join-timeout"), std::nullopt);
  for (const char* bad : {"-1", "x", "", "2s", "inf", "nan"}) {
    EXPECT_THROW(ParseJoinTimeout(bad, "LMDX_JOIN_TIMEOUT"), UsageError) << bad;
  }
}

class ResolveProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "lmdx-run-test-XXXXXX").string();
    home_ = ::mkdtemp(pattern.data());
    fs::create_directories(home_ / "samples" / "hello");
    fs::create_directories(home_ / "samples" / "ring");
    std::ofstream(home_ / "samples" / "hello" / "hello.c") << "int main(void) { return 0; }\n";
    std::ofstream(home_ / "samples" / "ring" / "ring.cc") << "int main() { return 0; }\n";
    // What the samples share is no sample.
    fs::create_directories(home_ / "samples" / "common");
    std::ofstream(home_ / "samples" / "common" / "sample.c") << "\n";
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

TEST_F(ResolveProgramTest, SampleConfiguration) {
  EXPECT_EQ(SampleConfiguration("hello", paths()), fs::path());  // no hello.conf
  std::ofstream(home_ / "samples" / "hello" / "hello.conf") << "";
  EXPECT_EQ(SampleConfiguration("hello", paths()), home_ / "samples" / "hello" / "hello.conf");
  EXPECT_EQ(SampleConfiguration("./hello", paths()), fs::path());  // a path, not a sample
  EXPECT_EQ(SampleConfiguration("ring", paths()), fs::path());
  EXPECT_EQ(SampleConfiguration("hello", Paths({}, home_ / "bazel-bin")), fs::path());
}

// `lmdx run --config FILE` and LMDX_CONFIG, through the real tool binary. The node is a shell
// script that leaves a file per rank and prints the LMDX_CONFIG it was given.
class RunConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "lmdx-run-config-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
    node_ = dir_ / "node.sh";
    std::ofstream(node_) << "#!/bin/sh\ntouch \"" << dir_.string()
                         << "/started.$LMDX_RANK\"\necho \"LMDX_CONFIG=$LMDX_CONFIG\"\n";
    fs::permissions(node_, fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  // How many nodes left their file.
  int Started() const {
    int started = 0;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      if (entry.path().filename().string().rfind("started.", 0) == 0) ++started;
    }
    return started;
  }
  static std::string Lmdx() { return testing::TestBinary("LMDX_TOOL_BIN"); }

  fs::path dir_;
  fs::path node_;
};

constexpr const char* kGood = "dsm { protocol: LRC }\n";
constexpr const char* kBad = "# a job\ndsm {\n  protocol: TSO\n}\n";
constexpr const char* kBadMessage =
    ":3:13: unknown value \"TSO\" for protocol (SC, UPDATE, RC, LRC or HLRC)\n";

TEST_F(RunConfigTest, BadFileIsOneErrorAndStartsNoNode) {
  std::string bad = Write("bad.conf", kBad);
  testing::Outcome outcome = testing::RunProcess(
      {Lmdx(), "run", node_.string(), "-n", "2", "--config", bad}, {"-LMDX_CONFIG"});
  ASSERT_FALSE(outcome.timed_out);
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err, "lmdx run: " + bad + kBadMessage);
  EXPECT_EQ(outcome.out, "");
  EXPECT_EQ(Started(), 0);
}

TEST_F(RunConfigTest, BadFileInLmdxConfigIsCheckedTheSameWay) {
  std::string bad = Write("bad.conf", "dsm {\n  size: \"64Q\"\n}\n");
  testing::Outcome outcome =
      testing::RunProcess({Lmdx(), "run", node_.string(), "-n", "2"}, {"LMDX_CONFIG=" + bad});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err, "lmdx run: " + bad +
                             ":2:3: dsm.size: \"64Q\" has an unknown unit \"Q\"; write a whole "
                             "number of bytes with an optional K, M, G or T, like \"64G\"\n");
  EXPECT_EQ(Started(), 0);
}

TEST_F(RunConfigTest, MissingFileOrBadOverride) {
  std::string missing = (dir_ / "missing.conf").string();
  testing::Outcome outcome = testing::RunProcess(
      {Lmdx(), "run", node_.string(), "-n", "1", "--config", missing}, {"-LMDX_CONFIG"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err, "lmdx run: " + missing +
                             ": cannot read the configuration file: No such file or directory\n");
  outcome = testing::RunProcess({Lmdx(), "run", node_.string(), "-n", "1"},
                                {"-LMDX_CONFIG", "LMDX_PROTOCOL=tso"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err,
            "lmdx run: LMDX_PROTOCOL: \"tso\" is not a protocol (sc, update, rc, lrc or hlrc)\n");
  outcome = testing::RunProcess(
      {Lmdx(), "run", node_.string(), "-n", "1", "--config", dir_.string()}, {"-LMDX_CONFIG"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err,
            "lmdx run: " + dir_.string() + ": the configuration file must be a regular file\n");
  EXPECT_EQ(Started(), 0);
}

TEST_F(RunConfigTest, NodesGetTheAbsolutePath) {
  Write("job.conf", kGood);
  // A relative --config, from the folder that holds it.
  testing::Outcome outcome = testing::RunProcess(
      {"/bin/sh", "-c",
       "cd '" + dir_.string() + "' && exec '" + Lmdx() + "' run ./node.sh -n 2 --config job.conf"},
      {"-LMDX_CONFIG"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  std::string line = "LMDX_CONFIG=" + (dir_ / "job.conf").string();
  EXPECT_EQ(testing::Lines(outcome.out), (std::vector<std::string>{line, line}));
  EXPECT_EQ(Started(), 2);
}

// A sample run by name takes samples/NAME/NAME.conf unless a file is given.
TEST_F(RunConfigTest, ASampleRunByNameTakesItsOwnConfiguration) {
  fs::create_directories(dir_ / "samples" / "demo");
  fs::create_directories(dir_ / "bazel-bin" / "samples" / "demo");
  fs::copy_file(node_, dir_ / "bazel-bin" / "samples" / "demo" / "demo");
  std::string own = Write("samples/demo/demo.conf", kGood);
  std::string good = Write("good.conf", kGood);
  const std::string home = "LMDX_HOME=" + dir_.string();
  testing::Outcome outcome =
      testing::RunProcess({Lmdx(), "run", "demo", "-n", "1"}, {"-LMDX_CONFIG", home});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(outcome.out, "LMDX_CONFIG=" + own + "\n");
  outcome = testing::RunProcess({Lmdx(), "run", "demo", "-n", "1", "--config", good},
                                {"-LMDX_CONFIG", home});
  EXPECT_EQ(outcome.out, "LMDX_CONFIG=" + good + "\n");
  outcome = testing::RunProcess({Lmdx(), "run", "demo", "-n", "1"}, {"LMDX_CONFIG=" + good, home});
  EXPECT_EQ(outcome.out, "LMDX_CONFIG=" + good + "\n");
  // The same program by path takes none.
  outcome = testing::RunProcess({Lmdx(), "run", node_.string(), "-n", "1"}, {"-LMDX_CONFIG", home});
  EXPECT_EQ(outcome.out, "LMDX_CONFIG=\n");
  // And a sample's file is checked like any other.
  Write("samples/demo/demo.conf", kBad);
  outcome = testing::RunProcess({Lmdx(), "run", "demo", "-n", "1"}, {"-LMDX_CONFIG", home});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err, "lmdx run: " + own + kBadMessage);
}

TEST_F(RunConfigTest, ModulesMustFitTheNodeCount) {
  std::string conf = Write("modules.conf", "module { name: \"all\" ranks: \"0-2\" }\n");
  testing::Outcome outcome = testing::RunProcess(
      {Lmdx(), "run", node_.string(), "-n", "2", "--config", conf}, {"-LMDX_CONFIG"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err, "lmdx run: " + conf +
                             ":1:22: module[0].ranks: rank 2 of module \"all\" (ranks \"0-2\") "
                             "is beyond the job's 2 ranks (0 to 1)\n");
  outcome = testing::RunProcess({Lmdx(), "run", node_.string(), "-n", "4", "--config", conf},
                                {"-LMDX_CONFIG"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err, "lmdx run: " + conf +
                             ": rank 3 of the job's 4 ranks (0 to 3) is in no module; when modules "
                             "are declared every rank runs one (modules: all 0-2)\n");
  EXPECT_EQ(Started(), 0);
  outcome = testing::RunProcess({Lmdx(), "run", node_.string(), "-n", "3", "--config", conf},
                                {"-LMDX_CONFIG"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(Started(), 3);
}

TEST_F(RunConfigTest, ConfigOptionBeatsLmdxConfig) {
  std::string good = Write("good.conf", kGood);
  std::string bad = Write("bad.conf", kBad);
  testing::Outcome outcome = testing::RunProcess(
      {Lmdx(), "run", node_.string(), "-n", "1", "--config", good}, {"LMDX_CONFIG=" + bad});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(outcome.out, "LMDX_CONFIG=" + good + "\n");
}

}  // namespace
}  // namespace lmdx::tools

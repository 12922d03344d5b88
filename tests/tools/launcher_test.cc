// The launcher as users run it: the real `lmdx` binary starting real node processes (small test
// programs that need no LMDX runtime), checked from the outside.

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "tests/tools/subprocess.h"
#include "tests/tools/test_binaries.h"

namespace lmdx::tools::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string Lmdx() { return TestBinary("LMDX_TOOL_BIN"); }
std::string PrintLines() { return TestBinary("PRINT_LINES_BIN"); }
std::string PrintEnv() { return TestBinary("PRINT_ENV_BIN"); }
std::string Misbehave() { return TestBinary("MISBEHAVE_BIN"); }
std::string LateJoin() { return TestBinary("LATE_JOIN_BIN"); }

// The launcher's own messages: stderr lines that start with "lmdx run:".
std::vector<std::string> LauncherLines(const Outcome& outcome) {
  std::vector<std::string> lines;
  for (const std::string& line : Lines(outcome.err)) {
    if (line.rfind("lmdx run:", 0) == 0) lines.push_back(line);
  }
  return lines;
}

// A folder where misbehave nodes leave their pids; removed at the end of the test.
class PidDir {
 public:
  PidDir() {
    std::string pattern = (fs::temp_directory_path() / "lmdx-launcher-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~PidDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

  // The pids written so far, by rank.
  std::map<int, pid_t> Pids() const {
    std::map<int, pid_t> pids;
    for (const auto& entry : fs::directory_iterator(path_)) {
      if (entry.path().extension() != ".pid") continue;
      std::ifstream in(entry.path());
      pid_t pid = 0;
      if (in >> pid) pids[std::stoi(entry.path().stem().string())] = pid;
    }
    return pids;
  }

  // Waits (polling a few times a second) until n nodes have written their pids.
  bool WaitFor(std::size_t n, milliseconds limit = seconds(10)) const {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (Pids().size() < n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return true;
  }

 private:
  std::string path_;
};

void ExpectAllGone(const std::map<int, pid_t>& pids) {
  for (auto [rank, pid] : pids) EXPECT_FALSE(ProcessExists(pid)) << "rank " << rank << " lives";
}

TEST(LauncherTest, ForwardsEveryLineOfEveryRankWithItsTag) {
  constexpr int kNodes = 4;
  constexpr int kLines = 150;
  Outcome outcome = RunProcess({Lmdx(), "run", PrintLines(), "-n", std::to_string(kNodes),
                                "--tag-output", "--", std::to_string(kLines), "0"});
  ASSERT_FALSE(outcome.timed_out);
  EXPECT_EQ(outcome.code, 0) << outcome.err;

  for (auto [text, stream] : {std::pair{&outcome.out, "out"}, std::pair{&outcome.err, "err"}}) {
    // Every line must be whole: "[R] rank R out I xxx...x", never a piece of another rank's line.
    std::regex whole(std::string(R"(\[(\d)\] rank (\d) )") + stream + R"( (\d+) x{40})");
    std::regex tail(R"(\[(\d)\] rank (\d) tail)");
    std::map<int, std::set<int>> seen;
    std::set<int> tails;
    for (const std::string& line : Lines(*text)) {
      std::smatch m;
      if (std::regex_match(line, m, whole)) {
        EXPECT_EQ(m[1], m[2]) << line;
        seen[std::stoi(m[1])].insert(std::stoi(m[3]));
      } else if (std::string(stream) == "out" && std::regex_match(line, m, tail)) {
        EXPECT_EQ(m[1], m[2]) << line;
        tails.insert(std::stoi(m[1]));  // the last line had no newline; it is flushed at the end
      } else {
        ADD_FAILURE() << "mixed or unexpected line on std" << stream << ": '" << line << "'";
      }
    }
    ASSERT_EQ(seen.size(), static_cast<std::size_t>(kNodes)) << stream;
    for (auto& [rank, numbers] : seen) EXPECT_EQ(numbers.size(), std::size_t{kLines}) << rank;
    if (std::string(stream) == "out") {
      EXPECT_EQ(tails.size(), static_cast<std::size_t>(kNodes));
    }
  }
}

TEST(LauncherTest, WithoutTagsLinesAreForwardedAsTheyAre) {
  Outcome outcome = RunProcess({Lmdx(), "run", PrintLines(), "-n", "2", "--", "2", "0"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  std::multiset<std::string> lines;
  for (const std::string& line : Lines(outcome.out)) lines.insert(line);
  std::string x(40, 'x');
  EXPECT_EQ(lines, (std::multiset<std::string>{"rank 0 out 0 " + x, "rank 0 out 1 " + x,
                                               "rank 1 out 0 " + x, "rank 1 out 1 " + x,
                                               "rank 0 tail", "rank 1 tail"}));
}

TEST(LauncherTest, EveryNodeGetsItsRankAndTheSameJob) {
  constexpr int kNodes = 4;
  Outcome outcome =
      RunProcess({Lmdx(), "run", PrintEnv(), "-n", std::to_string(kNodes), "--tag-output"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  std::map<int, std::map<std::string, std::string>> env;  // by the tag's rank
  std::regex line_re(R"(\[(\d+)\] (\w+)=(.*))");
  for (const std::string& line : Lines(outcome.out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, line_re)) << line;
    env[std::stoi(m[1])][m[2]] = m[3];
  }
  ASSERT_EQ(env.size(), static_cast<std::size_t>(kNodes));
  std::set<std::string> pids;
  for (auto& [rank, vars] : env) {
    EXPECT_EQ(vars["LMDX_RANK"], std::to_string(rank));
    EXPECT_EQ(vars["LMDX_SIZE"], std::to_string(kNodes));
    EXPECT_TRUE(std::regex_match(vars["LMDX_JOB_SECRET"], std::regex("[0-9a-f]{64}")))
        << vars["LMDX_JOB_SECRET"];
    EXPECT_TRUE(std::regex_match(vars["LMDX_JOB_ID"], std::regex("[0-9a-f]{16}")));
    EXPECT_TRUE(std::regex_match(vars["LMDX_RENDEZVOUS"], std::regex(R"(.+:\d+)")))
        << vars["LMDX_RENDEZVOUS"];
    for (const char* shared : {"LMDX_JOB_SECRET", "LMDX_JOB_ID", "LMDX_RENDEZVOUS"}) {
      EXPECT_EQ(vars[shared], env[0][shared]) << shared;
    }
    pids.insert(vars["PID"]);
  }
  EXPECT_EQ(pids.size(), static_cast<std::size_t>(kNodes));
}

// Without -n and without modules in a configuration, a job has 4 nodes.
TEST(LauncherTest, WithoutDashNAJobHasFourNodes) {
  Outcome outcome = RunProcess({Lmdx(), "run", PrintEnv(), "--tag-output"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  std::set<std::string> sizes;
  int ranks = 0;
  for (const std::string& line : Lines(outcome.out)) {
    if (line.find("] LMDX_SIZE=") != std::string::npos) sizes.insert(line.substr(line.find('=')));
    if (line.find("] LMDX_RANK=") != std::string::npos) ++ranks;
  }
  EXPECT_EQ(ranks, 4) << outcome.out;
  EXPECT_EQ(sizes, std::set<std::string>{"=4"}) << outcome.out;
}

TEST(LauncherTest, TwoJobsGetDifferentSecrets) {
  auto secret = [] {
    Outcome o = RunProcess({Lmdx(), "run", PrintEnv(), "-n", "1"});
    std::smatch m;
    std::regex_search(o.out, m, std::regex("LMDX_JOB_SECRET=(\\w+)"));
    return m[1].str();
  };
  EXPECT_NE(secret(), secret());
}

TEST(LauncherTest, CrashingNodeStopsTheJobAndIsNamed) {
  PidDir dir;
  Outcome outcome =
      RunProcess({Lmdx(), "run", Misbehave(), "-n", "4", "--", dir.path(), "2", "segv", "300"}, {},
                 seconds(20));
  ASSERT_FALSE(outcome.timed_out);
  EXPECT_LT(outcome.elapsed, seconds(5));
  EXPECT_FALSE(outcome.signaled);
  EXPECT_EQ(outcome.code, 128 + SIGSEGV);
  EXPECT_EQ(LauncherLines(outcome),
            std::vector<std::string>{
                "lmdx run: rank 2 died (killed by signal SIGSEGV); the job was stopped"});
  std::map<int, pid_t> pids = dir.Pids();
  EXPECT_EQ(pids.size(), 4u);
  ExpectAllGone(pids);
}

TEST(LauncherTest, NodesThatIgnoreSigtermAreKilled) {
  PidDir dir;
  Outcome outcome = RunProcess(
      {Lmdx(), "run", Misbehave(), "-n", "3", "--", dir.path(), "0", "segv", "200", "--stubborn"},
      {}, seconds(20));
  ASSERT_FALSE(outcome.timed_out);
  EXPECT_LT(outcome.elapsed, seconds(5));
  EXPECT_EQ(outcome.code, 128 + SIGSEGV);
  EXPECT_EQ(LauncherLines(outcome),
            std::vector<std::string>{
                "lmdx run: rank 0 died (killed by signal SIGSEGV); the job was stopped"});
  ExpectAllGone(dir.Pids());
}

TEST(LauncherTest, NonZeroExitOfOneNodeIsTheJobsStatus) {
  PidDir dir;
  Outcome outcome =
      RunProcess({Lmdx(), "run", Misbehave(), "-n", "3", "--", dir.path(), "1", "exit:3", "100"},
                 {}, seconds(20));
  ASSERT_FALSE(outcome.timed_out);
  EXPECT_LT(outcome.elapsed, seconds(5));
  EXPECT_EQ(outcome.code, 3);
  EXPECT_EQ(LauncherLines(outcome),
            std::vector<std::string>{"lmdx run: rank 1 exited with status 3; the job was stopped"});
  ExpectAllGone(dir.Pids());
}

// A node that exits with an error may only be reacting to a peer's death, which it sees (a
// closed socket) before the kernel tells the launcher; the node killed by a signal is named.
TEST(LauncherTest, ANodeKilledJustAfterAnotherExitedIsNamedAsTheCause) {
  PidDir dir;
  Outcome outcome = RunProcess({Lmdx(), "run", Misbehave(), "-n", "3", "--", dir.path(), "1",
                                "exit:3", "100", "--also", "2", "kill", "150"},
                               {}, seconds(20));
  ASSERT_FALSE(outcome.timed_out);
  EXPECT_LT(outcome.elapsed, seconds(5));
  EXPECT_EQ(outcome.code, 128 + SIGKILL);
  EXPECT_EQ(LauncherLines(outcome),
            std::vector<std::string>{
                "lmdx run: rank 2 died (killed by signal SIGKILL); the job was stopped"});
  ExpectAllGone(dir.Pids());
}

TEST(LauncherTest, WhenAllNodesExitRankZerosStatusIsTheJobs) {
  Outcome outcome = RunProcess({Lmdx(), "run", PrintLines(), "-n", "3", "--", "1", "7"});
  EXPECT_EQ(outcome.code, 7);
  EXPECT_EQ(LauncherLines(outcome),
            std::vector<std::string>{"lmdx run: rank 0 exited with status 7"});
}

TEST(LauncherTest, TimeoutStopsTheJob) {
  PidDir dir;
  Outcome outcome = RunProcess({Lmdx(), "run", Misbehave(), "-n", "2", "--timeout", "0.5", "--",
                                dir.path(), "-1", "none", "0"},
                               {}, seconds(20));
  ASSERT_FALSE(outcome.timed_out);
  EXPECT_GE(outcome.elapsed, milliseconds(500));
  EXPECT_LT(outcome.elapsed, seconds(4));
  EXPECT_EQ(outcome.code, 124);
  EXPECT_EQ(LauncherLines(outcome),
            std::vector<std::string>{"lmdx run: the job did not finish within 0.5 s; stopped"});
  ExpectAllGone(dir.Pids());
}

// Nodes that never call lmdx_init (here: no LMDX at all) are named once the join timeout passes.
TEST(LauncherTest, ANodeThatNeverJoinsIsNamedAtTheJoinTimeout) {
  PidDir dir;
  Outcome outcome = RunProcess({Lmdx(), "run", Misbehave(), "-n", "2", "--join-timeout", "0.5",
                                "--", dir.path(), "-1", "none", "0"},
                               {}, seconds(20));
  ASSERT_FALSE(outcome.timed_out);
  EXPECT_GE(outcome.elapsed, milliseconds(500));
  EXPECT_LT(outcome.elapsed, seconds(4));
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(LauncherLines(outcome),
            std::vector<std::string>{
                "lmdx run: rank 0 did not join the job within 0.5 s (it has not called "
                "lmdx_init; --join-timeout sets the limit, 0 waits for ever); the job was "
                "stopped"});
  ExpectAllGone(dir.Pids());
}

// LMDX nodes that joined wait at the rendezvous for the late one; it is the one named, and the
// others are stopped with it. One that joins within the limit is not.
TEST(LauncherTest, OnlyTheRankThatIsLateToJoinIsNamed) {
  Outcome late =
      RunProcess({Lmdx(), "run", LateJoin(), "-n", "3", "--join-timeout", "1", "--", "2", "60000"},
                 {}, seconds(30));
  ASSERT_FALSE(late.timed_out);
  EXPECT_LT(late.elapsed, seconds(6));
  EXPECT_EQ(late.code, 1);
  ASSERT_EQ(LauncherLines(late).size(), 1U) << late.err;
  EXPECT_EQ(LauncherLines(late)[0].rfind("lmdx run: rank 2 did not join the job within 1 s", 0), 0U)
      << late.err;
  Outcome in_time =
      RunProcess({Lmdx(), "run", LateJoin(), "-n", "3", "--join-timeout", "5", "--", "2", "300"},
                 {}, seconds(30));
  EXPECT_EQ(in_time.code, 0) << in_time.err;
  EXPECT_EQ(in_time.out, "joined\n");
  Outcome from_env = RunProcess({Lmdx(), "run", LateJoin(), "-n", "2", "--", "1", "60000"},
                                {"LMDX_JOIN_TIMEOUT=0.5"}, seconds(30));
  EXPECT_EQ(from_env.code, 1);
  EXPECT_NE(from_env.err.find("rank 1 did not join the job within 0.5 s"), std::string::npos)
      << from_env.err;
}

TEST(LauncherTest, SigintStopsEveryNode) {
  for (int sig : {SIGINT, SIGTERM}) {
    PidDir dir;
    Subprocess launcher(
        {Lmdx(), "run", Misbehave(), "-n", "3", "--", dir.path(), "-1", "none", "0"});
    ASSERT_TRUE(dir.WaitFor(3));
    ::kill(launcher.pid(), sig);
    Outcome outcome = launcher.Finish(seconds(10));
    ASSERT_FALSE(outcome.timed_out);
    EXPECT_EQ(outcome.code, 128 + sig);
    ExpectAllGone(dir.Pids());
  }
}

TEST(LauncherTest, KilledLauncherTakesItsNodesAlong) {
  PidDir dir;
  Subprocess launcher(
      {Lmdx(), "run", Misbehave(), "-n", "2", "--", dir.path(), "-1", "none", "0", "--stubborn"});
  ASSERT_TRUE(dir.WaitFor(2));
  ::kill(launcher.pid(), SIGKILL);
  launcher.Finish(seconds(10));
  // The kernel delivers the nodes' parent-death signal at once; allow it a moment to act.
  std::this_thread::sleep_for(milliseconds(200));
  ExpectAllGone(dir.Pids());
}

struct BadRun {
  std::vector<std::string> args;
  std::string message;
};

TEST(LauncherTest, BadArgumentsGiveClearErrors) {
  std::string bin = PrintEnv();
  PidDir dir;
  std::string data = dir.path() + "/data.txt";
  std::ofstream(data) << "not a program\n";
  fs::permissions(data, fs::perms::owner_read | fs::perms::owner_write);
  std::vector<BadRun> cases = {
      {{"run", bin, "-n", "0"}, "-n needs a whole number of nodes from 1 to 1024, not '0'"},
      {{"run", bin, "-n", "abc"}, "-n needs a whole number of nodes from 1 to 1024, not 'abc'"},
      {{"run", bin, "-n", "2x"}, "not '2x'"},
      {{"run", bin, "-n", "2", "--timeout", "-1"}, "--timeout needs a positive number"},
      {{"run", bin, "-n", "2", "--join-timeout", "soon"},
       "--join-timeout needs a number of seconds (0 for no limit), not 'soon'"},
      {{"run", "./no/such/program", "-n", "2"}, "no such program: ./no/such/program"},
      {{"run", data, "-n", "1"}, data + " is not an executable file"},
      {{"run", bin, "-n", "2", "--bogus"},
       "lmdx run: The following argument was not expected: --bogus\nRun lmdx run --help"},
      {{"run", "-n", "2"}, "lmdx run: program is required"},
  };
  for (const BadRun& c : cases) {
    std::vector<std::string> argv = {Lmdx()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Outcome outcome = RunProcess(argv);
    EXPECT_EQ(outcome.code, 2) << c.message;
    EXPECT_NE(outcome.err.find(c.message), std::string::npos) << outcome.err;
    EXPECT_EQ(outcome.out, "");
  }
}

TEST(LauncherTest, UnknownSampleListsTheSamplesThereAre) {
  PidDir home;  // a stand-in repository with two samples, neither built
  for (const char* name : {"ring", "hello"}) {
    fs::path folder = fs::path(home.path()) / "samples" / name;
    fs::create_directories(folder);
    std::ofstream(folder / (std::string(name) + ".c")) << "int main(void) { return 0; }\n";
  }
  Outcome unknown = RunProcess({Lmdx(), "run", "nosuch", "-n", "2"}, {"LMDX_HOME=" + home.path()});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("no sample named 'nosuch' (available: hello, ring)"),
            std::string::npos)
      << unknown.err;
  Outcome unbuilt = RunProcess({Lmdx(), "run", "ring", "-n", "2"}, {"LMDX_HOME=" + home.path()});
  EXPECT_EQ(unbuilt.code, 2);
  EXPECT_NE(unbuilt.err.find("the sample 'ring' is not built"), std::string::npos) << unbuilt.err;
}

TEST(LauncherTest, EverySubcommandHasHelp) {
  for (std::string sub : {"", "run", "cc", "bench"}) {
    std::vector<std::string> argv = {Lmdx()};
    if (!sub.empty()) argv.push_back(sub);
    argv.push_back("--help");
    Outcome outcome = RunProcess(argv);
    EXPECT_EQ(outcome.code, 0) << sub;
    EXPECT_NE(outcome.out.find("Usage: lmdx"), std::string::npos) << sub << outcome.out;
  }
}

}  // namespace
}  // namespace lmdx::tools::testing

// Tasks in real jobs through the launcher: every scenario of programs/task_checks.cc compares
// what the tasks computed with a sequential run, on 1 to 4 nodes, under every protocol and
// scheduler.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

std::string Checks() { return BinaryFromEnv("TASK_CHECKS"); }

void ExpectVerified(const JobResult& job, const std::string& scenario, int nodes) {
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified: " + scenario + " on " + std::to_string(nodes) + " nodes"),
            std::string::npos)
      << job.out << job.err;
}

// fib(22) with a task for every call down to fib(1): 57,313 tasks nested 21 deep, spawned by
// every node, stolen by the idle ones.
TEST(TasksTest, FibWithATaskPerCallOnOneToFourNodes) {
  for (int nodes : {1, 2, 4}) ExpectVerified(RunJob(Checks(), nodes, {"fib", "22"}), "fib", nodes);
}

// A million nested spawns in one job (fib(29): 1,664,079 tasks), as a deep recursion stresses
// the inline runs of waiting tasks.
// --stats adds a table of every node's tasks: fib(22) is 57,313 calls, each one task, each run
// once somewhere, and those stolen are those given.
TEST(TasksTest, StatisticsCountEveryTaskOnce) {
  JobResult job = RunJob(Checks(), 3, {"fib", "22"}, {"--stats"});
  ExpectVerified(job, "fib", 3);
  std::size_t at = job.err.find("lmdx task statistics (scheduler steal, 1 runner per node)");
  ASSERT_NE(at, std::string::npos) << job.err;
  std::istringstream table(job.err.substr(at));
  std::string line;
  std::getline(table, line);  // the title
  std::getline(table, line);  // the header
  long long spawned = 0, run = 0, stolen = 0, given = 0;
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(std::getline(table, line)) << job.err;
    std::istringstream row(line);
    long long r, s, n, st, g;
    row >> r >> s >> n >> st >> g;
    EXPECT_EQ(r, rank) << line;
    spawned += s;
    run += n;
    stolen += st;
    given += g;
  }
  EXPECT_EQ(spawned, 57313) << job.err;
  EXPECT_EQ(run, 57313) << job.err;
  EXPECT_EQ(stolen, given) << job.err;
  EXPECT_GT(stolen, 0) << job.err;
}

TEST(TasksTest, AMillionNestedSpawns) {
  ExpectVerified(RunJob(Checks(), 2, {"fib", "29"}, {}, std::chrono::seconds(180)), "fib", 2);
}

// Tasks read what the spawner wrote before the spawn and the waiter reads what they wrote, round
// after round, with pages written by tasks on different nodes, under every protocol.
TEST(TasksTest, SharedMemoryBetweenSpawnerTasksAndWaiterUnderEveryProtocol) {
  for (const char* protocol : {"sc", "update", "rc", "lrc", "hlrc"}) {
    for (int nodes : {2, 3}) {
      SCOPED_TRACE(std::string(protocol) + " on " + std::to_string(nodes) + " nodes");
      ExpectVerified(RunJob(Checks(), nodes, {"shared", "8"}, {"--protocol", protocol}), "shared",
                     nodes);
    }
  }
}

// Three LMDX threads per node spawn and wait at once (their waits park the user-level thread).
TEST(TasksTest, SeveralThreadsPerNodeSpawnAndWaitAtOnce) {
  for (const char* protocol : {"hlrc", "sc"}) {
    SCOPED_TRACE(protocol);
    ExpectVerified(RunJob(Checks(), 3, {"threads"}, {"--protocol", protocol}), "threads", 3);
  }
}

TEST(TasksTest, EveryRankSpawnsInSpmdStyle) {
  for (const char* protocol : {"lrc", "hlrc"}) {
    SCOPED_TRACE(protocol);
    ExpectVerified(RunJob(Checks(), 3, {"spmd"}, {"--protocol", protocol}), "spmd", 3);
  }
}

TEST(TasksTest, ArgumentsAreCopiedAtTheSpawnAndWrittenBackAtTheWait) {
  ExpectVerified(RunJob(Checks(), 2, {"args"}), "args", 2);
}

TEST(TasksTest, BadCallsSayWhatIsWrong) {
  ExpectVerified(RunJob(Checks(), 2, {"errors"}), "errors", 2);
}

TEST(TasksTest, IdleNodesGetWorkUnderEveryScheduler) {
  for (const char* scheduler : {"steal", "share", "least_loaded"}) {
    SCOPED_TRACE(scheduler);
    ScopedEnv chosen("LMDX_TASK_SCHEDULER", scheduler);
    ExpectVerified(RunJob(Checks(), 3, {"spread"}), "spread", 3);
  }
}

TEST(TasksTest, TwoRunnersPerNode) {
  ScopedEnv runners("LMDX_TASK_RUNNERS", "2");
  ExpectVerified(RunJob(Checks(), 2, {"fib", "20"}), "fib", 2);
}

// The placement is rank 0's own; the other node shares rather than steals, so that every task it
// runs is one the placement sent there.
TEST(TasksTest, AProgramPlacesTasksWithItsOwnScheduler) {
  ScopedEnv sharing("LMDX_TASK_SCHEDULER", "share");
  ExpectVerified(RunJob(Checks(), 2, {"user"}), "user", 2);
}

TEST(TasksTest, TheCppApiSpawnsClosuresAndTypedArguments) {
  ExpectVerified(RunJob(Checks(), 2, {"cpp"}), "cpp", 2);
}

TEST(TasksTest, ACrashingTaskEndsTheJobNamingTheTaskAndItsSpawner) {
  JobResult job = RunJob(Checks(), 2, {"crash"}, {}, std::chrono::seconds(60));
  EXPECT_NE(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.err.find("the task (anonymous namespace)::CrashingTask"), std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("spawned by a thread of node 0"), std::string::npos) << job.err;
  EXPECT_NE(job.err.find("rank 1"), std::string::npos) << job.err;
  EXPECT_EQ(job.out.find("verified"), std::string::npos) << job.out;
}

// One node, one runner: the child is still queued when its spawner returns.
TEST(TasksTest, ATaskThatReturnsBeforeItsCopiesComeBackEndsTheJobSayingWhy) {
  JobResult job = RunJob(Checks(), 1, {"frame"}, {}, std::chrono::seconds(60));
  EXPECT_NE(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.err.find("the task (anonymous namespace)::ReturnsTooEarly(void*) on node 0, "
                         "spawned by a thread of node 0, returned while tasks it spawned with "
                         "lmdx_spawn were still to write their copies back"),
            std::string::npos)
      << job.err;
  EXPECT_EQ(job.err.find("FAILED"), std::string::npos) << job.err;
}

TEST(TasksTest, ANodeThatDiesWithTasksEndsTheJobInsteadOfAHang) {
  JobResult job = RunJob(Checks(), 2, {"die"}, {}, std::chrono::seconds(60));
  EXPECT_NE(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.err.find("rank 1"), std::string::npos) << job.err;
  EXPECT_LT(job.elapsed, std::chrono::seconds(30)) << job.err;
}

}  // namespace
}  // namespace lmdx::testing

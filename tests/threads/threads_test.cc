// LMDX threads in real jobs through the launcher: every scenario of programs/threads_checks.cc
// compares what the threads returned with what a sequential run computes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string Checks() { return BinaryFromEnv("THREADS_CHECKS"); }

void ExpectVerified(const JobResult& job, const std::string& scenario, int nodes) {
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified: " + scenario + " on " + std::to_string(nodes) + " nodes"),
            std::string::npos)
      << job.out << job.err;
}

// 1,000 threads from rank 0 over 4 nodes, each counting itself in shared memory under a lock (so
// user-level threads of one node park in the lock and hand it over), all joined with results.
TEST(ThreadsTest, AThousandThreadsSpreadRoundRobinOverFourNodesAndAreJoined) {
  ExpectVerified(RunJob(Checks(), 4, {"many", "1000"}, {}, std::chrono::seconds(240)), "many", 4);
}

TEST(ThreadsTest, DetachedThreadsRunAndCannotBeJoined) {
  ExpectVerified(RunJob(Checks(), 3, {"detached", "200"}), "detached", 3);
}

TEST(ThreadsTest, AKilledThreadEndsAtItsNextCallWithLmdxKilled) {
  ExpectVerified(RunJob(Checks(), 3, {"kill"}), "kill", 3);
}

TEST(ThreadsTest, AKillEndsThreadsParkedInEveryKindOfWait) {
  ExpectVerified(RunJob(Checks(), 3, {"kill_waiting"}, {}, std::chrono::seconds(60)),
                 "kill_waiting", 3);
}

TEST(ThreadsTest, AThreadStartsAndJoinsThreadsOnEveryNode) {
  ExpectVerified(RunJob(Checks(), 4, {"nested"}), "nested", 4);
}

TEST(ThreadsTest, ExitFromDeepInsideAndAJoinFromAnotherNode) {
  ExpectVerified(RunJob(Checks(), 3, {"exit"}), "exit", 3);
}

TEST(ThreadsTest, LeastLoadedPlacementSpreadsBlockedThreadsEvenly) {
  ::setenv("LMDX_PLACEMENT", "least_loaded", 1);
  JobResult job = RunJob(Checks(), 4, {"least_loaded", "5"});
  ::unsetenv("LMDX_PLACEMENT");
  ExpectVerified(job, "least_loaded", 4);
}

}  // namespace
}  // namespace lmdx::testing

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

TEST(ThreadsTest, CxxThreadsRunClosuresOnEveryNodeAndJoin) {
  for (int nodes : {1, 3}) ExpectVerified(RunJob(Checks(), nodes, {"cpp"}), "cpp", nodes);
}

// An exception that leaves a thread ends the job, naming the thread, rather than leaving a joiner
// on another node waiting for ever.
TEST(ThreadsTest, AnExceptionEscapingAThreadEndsTheJobNamingIt) {
  JobResult job = RunJob(Checks(), 2, {"throw"});
  EXPECT_NE(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(
      job.err.find("an exception escaped the LMDX thread (anonymous namespace)::Throws(void*) "
                   "(thread 1:1): boom; the job ends"),
      std::string::npos)
      << job.err;
  EXPECT_EQ(job.err.find("the job went on"), std::string::npos) << job.err;
  JobResult an_int = RunJob(Checks(), 2, {"throw_int"});
  EXPECT_NE(an_int.exit_code, 0) << an_int.out << an_int.err;
  EXPECT_NE(an_int.err.find("ThrowsAnInt(void*) (thread 1:1): an exception of a type not derived "
                            "from std::exception; the job ends"),
            std::string::npos)
      << an_int.err;
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

// Main returns while threads on every node are parked in a semaphore or passing a lock around:
// the job ends with main's status, as a process with POSIX threads does, and no node tears a
// running or parked thread down under its worker (which used to abort a node at random).
TEST(ThreadsTest, ThreadsStillRunningWhenMainReturnsEndWithTheJob) {
  for (int run = 0; run < 5; ++run) {
    JobResult job = RunJob(Checks(), 4, {"left_running", "6"});
    ExpectVerified(job, "left_running", 4);
    EXPECT_EQ(job.err.find("terminate called"), std::string::npos) << job.err;
    EXPECT_EQ(job.err.find("after lmdx_finalize"), std::string::npos) << job.err;
  }
}

TEST(ThreadsTest, ExitFromDeepInsideAndAJoinFromAnotherNode) {
  ExpectVerified(RunJob(Checks(), 3, {"exit"}), "exit", 3);
}

TEST(ThreadsTest, ExitInAThreadOnAnotherNodeEndsTheJobWithItsStatusNamingTheRank) {
  for (int nodes : {2, 4}) {
    JobResult job = RunJob(Checks(), nodes, {"exit_in_thread", "1"});
    EXPECT_EQ(job.exit_code, 3) << job.out << job.err;
    EXPECT_NE(job.err.find("lmdx run: rank 1 exited with status 3"), std::string::npos) << job.err;
    EXPECT_EQ(job.err.find("terminate called"), std::string::npos) << job.err;
    EXPECT_EQ(job.err.find("lmdx_join_thread"), std::string::npos) << job.err;
  }
}

TEST(ThreadsTest, ExitInAThreadOnRankZeroEndsTheJobWithItsStatus) {
  JobResult job = RunJob(Checks(), 3, {"exit_in_thread", "0"});
  EXPECT_EQ(job.exit_code, 3) << job.out << job.err;
  EXPECT_NE(job.err.find("lmdx run: rank 0 exited with status 3"), std::string::npos) << job.err;
  EXPECT_EQ(job.err.find("lmdx_join_thread"), std::string::npos) << job.err;
  EXPECT_EQ(job.err.find("terminate called"), std::string::npos) << job.err;
}

TEST(ThreadsTest, WhatEveryNodePrintedBeforeACrashReachesTheOutput) {
  JobResult job = RunJob(Checks(), 3, {"print_then_crash"});
  EXPECT_NE(job.exit_code, 0);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_NE(job.out.find("a line from rank " + std::to_string(rank) + "\n"), std::string::npos)
        << "rank " << rank << ":\n"
        << job.out << job.err;
  }
  EXPECT_NE(job.err.find("lmdx run: rank 1 "), std::string::npos) << job.err;
  // What crashed, and where the access went.
  EXPECT_NE(job.err.find("lmdx: rank 1: the LMDX thread (anonymous namespace)::"
                         "CrashOutsideSharedMemory(void*) (thread 1:"),
            std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find(", started by node 0 with argument (nil)) crashed (Segmentation fault)"),
            std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("lmdx: rank 1: the fault was an access at 0x10, outside shared memory, "
                         "in no mapping of this process"),
            std::string::npos)
      << job.err;
  EXPECT_EQ(job.err.find("does not point into shared memory"), std::string::npos) << job.err;
}

// A pointer to main's stack given to a thread on another node: the crash names the argument as
// private memory of its starter, not only the signal.
TEST(ThreadsTest, AThreadOnAnotherNodeGivenAPointerToPrivateMemoryIsToldSoWhenItCrashes) {
  JobResult job = RunJob(Checks(), 2, {"private_argument"});
  EXPECT_NE(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.err.find("lmdx: rank 1: the LMDX thread (anonymous namespace)::"
                         "ReadThroughArgument(void*)"),
            std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("does not point into shared memory: node 0's private memory (its stack, "
                         "a global not declared LMDX_shared, its malloc) does not exist on this "
                         "node; a thread started on another node must be given a pointer into "
                         "shared memory"),
            std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("lmdx: rank 1: the fault was an access at 0x7ff"), std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("lmdx run: rank 1 "), std::string::npos) << job.err;
}

// SPMD ranks that called lmdx_finalize still run the threads rank 0 places on them.
TEST(ThreadsTest, ARankWaitingInFinalizeRunsTheThreadsPlacedOnIt) {
  for (int nodes : {2, 4}) {
    JobResult job = RunJob(BinaryFromEnv("THREADS_AFTER_FINALIZE"), nodes, {});
    EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
    EXPECT_NE(
        job.out.find("verified: threads after finalize on " + std::to_string(nodes) + " nodes"),
        std::string::npos)
        << job.out << job.err;
    EXPECT_EQ(job.err.find("called after lmdx_finalize"), std::string::npos) << job.err;
  }
}

TEST(ThreadsTest, LeastLoadedPlacementSpreadsBlockedThreadsEvenly) {
  ::setenv("LMDX_PLACEMENT", "least_loaded", 1);
  JobResult job = RunJob(Checks(), 4, {"least_loaded", "5"});
  ::unsetenv("LMDX_PLACEMENT");
  ExpectVerified(job, "least_loaded", 4);
}

}  // namespace
}  // namespace lmdx::testing

// Jobs that hang on purpose (programs/hangs.cc) must end with a report of what each thread waits
// for, instead of hanging silently; a job that only looks quiet must be left alone.
#include <gtest/gtest.h>

#include <string>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

using std::chrono::seconds;

std::string Hangs() { return BinaryFromEnv("HANGS"); }

void ExpectContains(const JobResult& job, const std::string& text) {
  EXPECT_NE(job.err.find(text), std::string::npos) << "missing: " << text << "\n" << job.err;
}

TEST(HangWatchTest, ABarrierThatCanNeverFillIsReportedAndEndsTheJob) {
  ScopedEnv after("LMDX_DEADLOCK_AFTER", "1");
  JobResult job = RunJob(Hangs(), 3, {"barrier_never"}, {}, seconds(60));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_LT(job.elapsed, seconds(20));
  ExpectContains(job, "lmdx: deadlock: every thread of every node has waited in LMDX for 1.0 s");
  ExpectContains(job, "rank 0 main thread: barrier \"never\" for ");
  // Each LMDX thread by its id: the node it runs on, then its number there.
  ExpectContains(job, "rank 1 thread 1:1: barrier \"never\" for ");
  ExpectContains(job, "rank 2 thread 2:1: barrier \"never\" for ");
  // The barrier's manager says how far it got, wherever the name hashed.
  ExpectContains(job, "manages barrier \"never\": 3 of 4 arrived (from ranks 0, 1, 2)");
  ExpectContains(job, "lmdx: deadlock: the job ends");
  EXPECT_EQ(job.out.find("done"), std::string::npos);
}

TEST(HangWatchTest, ALockHeldByAWaitingThreadIsNamedWithItsHolder) {
  ScopedEnv after("LMDX_DEADLOCK_AFTER", "1");
  JobResult job = RunJob(Hangs(), 2, {"lock_held"}, {}, seconds(60));
  EXPECT_NE(job.exit_code, 0);
  ExpectContains(job, "rank 0 main thread: lock \"L\" for ");
  ExpectContains(job, "rank 1 thread 1:1: semaphore \"nobody_posts\" for ");
  ExpectContains(job, "rank 1 holds lock \"L\" (thread 1:1)");
  ExpectContains(job,
                 "manages semaphore \"nobody_posts\": 1 waiting in lmdx_sema_p (from ranks 1)");
}

// A local join is a wait in LMDX too: main holds "L" and joins a thread that waits for it.
TEST(HangWatchTest, AJoinOfAThreadWaitingForTheJoinersLockIsReported) {
  ScopedEnv after("LMDX_DEADLOCK_AFTER", "1");
  JobResult job = RunJob(Hangs(), 2, {"join_cycle"}, {}, seconds(60));
  EXPECT_NE(job.exit_code, 0);
  ExpectContains(job, "rank 0 main thread: lmdx_join_thread of \"thread 0:1\" for ");
  ExpectContains(job, "rank 0 thread 0:1: lock \"L\" for ");
  ExpectContains(job, "rank 0 holds lock \"L\" (main thread)");
}

TEST(HangWatchTest, SpmdRanksWaitingInReceivesAndBarriersAreReported) {
  ScopedEnv after("LMDX_DEADLOCK_AFTER", "1");
  JobResult job = RunJob(Hangs(), 3, {"spmd_recv"}, {}, seconds(60));
  EXPECT_NE(job.exit_code, 0);
  ExpectContains(job, "rank 0 main thread: lmdx_barrier_all for ");
  ExpectContains(job, "rank 1 main thread: lmdx_recv from rank 0 for ");
  ExpectContains(job, "rank 2 main thread: lmdx_barrier_all for ");
}

// A thread that has not called LMDX yet is invisible to the watch: in warn mode the job is told
// once and goes on when the thread posts.
TEST(HangWatchTest, WarnModeOnlyWarnsAndTheJobGoesOn) {
  ScopedEnv after("LMDX_DEADLOCK_AFTER", "0.5");
  ScopedEnv action("LMDX_DEADLOCK_ACTION", "warn");
  JobResult job = RunJob(Hangs(), 2, {"late_pthread"}, {}, seconds(60));
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(job.out, "done\n");
  EXPECT_EQ(CountOf(job.err, "lmdx: deadlock: every thread"), 1) << job.err;
  ExpectContains(job, "rank 0 main thread: semaphore \"late\" for ");
  EXPECT_EQ(job.err.find("the job ends"), std::string::npos);
}

// Waiting for a thread that computes is not a deadlock, however long it takes; SIGQUIT to the
// launcher prints the state and the job goes on.
TEST(HangWatchTest, SigquitReportsWithoutEndingAndComputingIsNotADeadlock) {
  ScopedEnv after("LMDX_DEADLOCK_AFTER", "0.5");
  JobResult job = RunJob(Hangs(), 2, {"computing", "quit"}, {}, seconds(60));
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(job.out, "done\n");
  EXPECT_EQ(CountOf(job.err, "lmdx: what every thread of the job waits for (SIGQUIT"), 1)
      << job.err;
  ExpectContains(job, "rank 0 main thread: a reply to \"thread-join\" from rank 1 for ");
  ExpectContains(job, "rank 1: 1 thread(s) running");
  EXPECT_EQ(job.err.find("deadlock"), std::string::npos) << job.err;
}

TEST(HangWatchTest, ABadSettingIsNamed) {
  ScopedEnv after("LMDX_DEADLOCK_AFTER", "soon");
  JobResult job = RunJob(Hangs(), 2, {"computing"}, {}, seconds(60));
  EXPECT_NE(job.exit_code, 0);
  ExpectContains(job, "LMDX_DEADLOCK_AFTER needs a number of seconds (0 for never), not 'soon'");
}

}  // namespace
}  // namespace lmdx::testing

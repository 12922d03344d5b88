// What lies outside the DSM's guarantee, in real jobs through the launcher (programs/limits.cc):
// a child of fork() that touches shared memory or calls LMDX is stopped with a line that names
// fork, a child that exits or execs leaves the job alone, and a thread that blocks the signal
// carrying its faults is named before the kernel kills its node, or by the launcher after.
#include <signal.h>

#include <gtest/gtest.h>

#include <string>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string Limits() { return BinaryFromEnv("LIMITS"); }

JobResult RunScenario(const std::string& scenario) {
  return RunJob(Limits(), 2, {scenario}, {}, std::chrono::seconds(60));
}

void ExpectVerified(const JobResult& job, const std::string& scenario) {
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified: " + scenario + " on 2 nodes"), std::string::npos)
      << job.out << job.err;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Without a mapping of the range in the child (it used to have one: under userfaultfd plainly
// readable and writable, under mprotect served by the parent's protocol over its connections),
// the child's first touch ends it with one line, and the parent's data is untouched.
TEST(ForkTest, AChildOfForkThatTouchesSharedMemoryEndsWithALineNamingFork) {
  for (const char* scenario : {"fork_read", "fork_write"}) {
    JobResult job = RunScenario(scenario);
    ExpectVerified(job, scenario);  // the parent's word still reads 41 on every node
    EXPECT_TRUE(Has(job.err, "lmdx[rank 1]: a child of fork() (pid ")) << scenario << job.err;
    EXPECT_TRUE(Has(job.err, ") touched LMDX shared memory at 0x4")) << scenario << job.err;
    EXPECT_TRUE(Has(job.err, "exec a new program in the child")) << scenario << job.err;
    EXPECT_EQ(CountOf(job.err, "a child of fork()"), 1) << scenario << job.err;
    EXPECT_TRUE(Has(job.out, "rank 1: the child of fork() exited with status 1"))
        << scenario << job.out;
    EXPECT_FALSE(Has(job.out, "went on")) << scenario << job.out;
  }
}

// The child's calls fail naming fork, and none reaches the other nodes: the barriers the parent
// takes around the fork count right.
TEST(ForkTest, CallsFromAChildOfForkFailNamingFork) {
  JobResult job = RunScenario("fork_call");
  ExpectVerified(job, "fork_call");
  const std::string is_a_child =
      " is a child of fork() of the node; LMDX calls belong to the "
      "node's own process";
  for (const char* call : {"lmdx_barrier_all", "lmdx_send"}) {
    // lmdx_strerror(LMDX_ERR_MISUSE), then the message.
    std::string returned = std::string("child: ") + call +
                           " returned an LMDX object was used against its rules: " + call +
                           ": this process (pid ";
    EXPECT_TRUE(Has(job.out, returned)) << call << "\n" << job.out;
  }
  EXPECT_TRUE(Has(job.out, "child: lmdx_shared_var returned null: lmdx_shared_var: this process"))
      << job.out;
  EXPECT_EQ(CountOf(job.out, is_a_child), 3) << job.out;
  // The default error mode ends the child with the same words.
  EXPECT_TRUE(Has(job.err, "lmdx[rank 1]: lmdx_send: this process (pid ")) << job.err;
  EXPECT_TRUE(Has(job.err, is_a_child)) << job.err;
  EXPECT_FALSE(Has(job.out, "survived")) << job.out;
  EXPECT_TRUE(Has(job.out, "rank 1: the child of fork() exited with status 1")) << job.out;
}

// A child that leaves through exit() runs its exit handlers and destructors: LMDX's leave the
// node alone (they used to end the job in the threads style, and to destroy the node's copy in
// the child, which shut the parent's connections).
TEST(ForkTest, AChildOfForkThatCallsExitLeavesTheJobAlone) {
  for (const char* scenario : {"fork_exit", "fork_exit_threads"}) {
    JobResult job = RunScenario(scenario);
    ExpectVerified(job, scenario);
    EXPECT_TRUE(Has(job.out, "the child of fork() exited with status 0")) << scenario << job.out;
    EXPECT_FALSE(Has(job.err, "lmdx_finalize")) << scenario << job.err;
    EXPECT_FALSE(Has(job.err, "lost")) << scenario << job.err;
  }
}

TEST(ForkTest, ForkFollowedByExecKeepsWorking) {
  JobResult job = RunScenario("fork_exec");
  ExpectVerified(job, "fork_exec");
  for (const char* rank : {"rank 0: ", "rank 1: "}) {
    EXPECT_TRUE(Has(job.out, std::string(rank) + "system, popen, posix_spawn and fork+exec all "
                                                 "worked"))
        << job.out;
  }
}

// The signal named by the line that says a thread blocks it ("SIGSEGV" under mprotect, "SIGBUS"
// under userfaultfd), or "" when there is none.
std::string BlockedSignalIn(const std::string& err, const std::string& call) {
  const std::string said = call + ": this thread blocks ";
  std::size_t at = err.find(said);
  if (at == std::string::npos) return "";
  at += said.size();
  return err.substr(at, err.find(',', at) - at);
}

int SignalNumber(const std::string& name) { return name == "SIGBUS" ? SIGBUS : SIGSEGV; }

// The kernel kills the node at the thread's first fault, before any handler runs; the call the
// thread made with the signal blocked said so first.
TEST(BlockedSignalTest, AThreadThatBlocksItsFaultSignalIsNamedBeforeTheKernelKillsTheNode) {
  JobResult job = RunScenario("blocked_touch");
  std::string signal = BlockedSignalIn(job.err, "lmdx[rank 1]: lmdx_shared_var");
  ASSERT_TRUE(signal == "SIGSEGV" || signal == "SIGBUS") << job.err;
  EXPECT_TRUE(Has(job.err, "unblock " + signal +
                               " (pthread_sigmask) in every thread that touches "
                               "shared memory"))
      << job.err;
  EXPECT_EQ(job.exit_code, 128 + SignalNumber(signal)) << job.out << job.err;
  EXPECT_TRUE(Has(job.err, "lmdx run: rank 1 died (killed by signal " + signal + ")")) << job.err;
  EXPECT_EQ(CountOf(job.err, "this thread blocks"), 1) << job.err;
}

// With no call between the block and the touch, the launcher's line is all that can point at it.
TEST(BlockedSignalTest, TheLaunchersLineNamesABlockedFaultSignalAsACause) {
  JobResult job = RunScenario("blocked_touch_silently");
  EXPECT_TRUE(job.exit_code == 128 + SIGSEGV || job.exit_code == 128 + SIGBUS)
      << job.exit_code << job.out << job.err;
  std::string signal = job.exit_code == 128 + SIGBUS ? "SIGBUS" : "SIGSEGV";
  EXPECT_TRUE(Has(job.err, "lmdx run: rank 1 died (killed by signal " + signal +
                               "); the job was stopped (if nothing above says why: a thread that "
                               "blocks " +
                               signal + " is killed so when it touches LMDX shared memory"))
      << job.err;
}

// main blocks the fault signals before lmdx_init_spmd: the call says so, and LMDX threads, which
// run on the runtime's own OS threads (created from main, with its mask), still serve their faults.
TEST(BlockedSignalTest, LmdxThreadsServeFaultsWhenMainBlockedTheSignalsBeforeInit) {
  JobResult job = RunScenario("blocked_at_init");
  ExpectVerified(job, "blocked_at_init");
  EXPECT_FALSE(BlockedSignalIn(job.err, "lmdx[rank 0]: lmdx_init_spmd").empty()) << job.err;
  EXPECT_FALSE(BlockedSignalIn(job.err, "lmdx[rank 1]: lmdx_init_spmd").empty()) << job.err;
}

}  // namespace
}  // namespace lmdx::testing

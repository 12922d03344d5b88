// The heartbeat over the rendezvous connection (net/heartbeat.h): a node whose process lives but
// sends nothing ends the job, named, whoever hosts the rendezvous; time this process itself was
// stopped is not a peer's silence.
#include "net/heartbeat.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

using net::HeartbeatSettings;
using net::SilenceWatch;
using std::chrono::seconds;

HeartbeatSettings Settings(int period_ms, int timeout_ms) {
  HeartbeatSettings settings;
  settings.period_ms = period_ms;
  settings.timeout_ms = timeout_ms;
  return settings;
}

TEST(SilenceWatchTest, APeerSilentForTheTimeoutIsReportedOnce) {
  SilenceWatch watch(3, Settings(100, 500), 0);
  for (int peer = 0; peer < 3; ++peer) watch.Watch(peer, true, 0);
  std::vector<int> reported;
  for (std::int64_t now = 100; now <= 1000; now += 100) {
    watch.Heard(0, now);  // peer 0 speaks every period; peer 1 never; peer 2 is not watched
    if (now == 300) watch.Watch(2, false, now);
    for (int peer : watch.Tick(now)) reported.push_back(peer);
  }
  EXPECT_EQ(reported, std::vector<int>{1});
  EXPECT_EQ(watch.SilentForMs(1, 1000), 1000);
}

TEST(SilenceWatchTest, TimeThisProcessDidNotRunIsNoPeersSilence) {
  SilenceWatch watch(1, Settings(100, 500), 0);
  watch.Watch(0, true, 0);
  EXPECT_TRUE(watch.Tick(100).empty());
  // The next tick comes 10 s late (the whole job was stopped, then continued): a fresh start.
  EXPECT_TRUE(watch.Tick(10100).empty());
  EXPECT_TRUE(watch.Tick(10400).empty());
  EXPECT_EQ(watch.Tick(10600), std::vector<int>{0});
}

TEST(SilenceWatchTest, ZeroTurnsTheHeartbeatOff) {
  SilenceWatch watch(1, Settings(100, 0), 0);
  watch.Watch(0, true, 0);
  for (std::int64_t now = 100; now <= 2000; now += 100) EXPECT_TRUE(watch.Tick(now).empty());
}

void ExpectTheStoppedRankNamed(const JobResult& job) {
  EXPECT_NE(job.exit_code, 0) << job.out << job.err;
  EXPECT_LT(job.elapsed, seconds(30)) << job.err;
  EXPECT_NE(job.err.find("rank 2 (host "), std::string::npos) << job.err;
  EXPECT_NE(job.err.find("has sent nothing, not even a heartbeat, for 2."), std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("the job ends"), std::string::npos) << job.err;
}

// `lmdx run` hosts the rendezvous in the launcher.
TEST(HeartbeatTest, AStoppedNodeEndsTheJobNamedUnderLmdxRun) {
  ScopedEnv heartbeat("LMDX_HEARTBEAT", "2");
  ExpectTheStoppedRankNamed(RunJob(BinaryFromEnv("HANGS"), 3, {"stopped"}, {}, seconds(60)));
}

// Under mpirun, rank 0 hosts the rendezvous.
TEST(HeartbeatTest, AStoppedNodeEndsTheJobNamedUnderMpirun) {
  ScopedEnv heartbeat("LMDX_HEARTBEAT", "2");
  ExpectTheStoppedRankNamed(
      RunCommand({"mpirun", "-n", "3", "--oversubscribe", "-x", "LMDX_HEARTBEAT",
                  BinaryFromEnv("HANGS"), "stopped"},
                 {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"}, seconds(60)));
}

TEST(HeartbeatTest, ABadSettingIsNamed) {
  ScopedEnv heartbeat("LMDX_HEARTBEAT", "often");
  JobResult job = RunJob(BinaryFromEnv("HANGS"), 2, {"stopped"}, {}, seconds(60));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("LMDX_HEARTBEAT needs the seconds of silence after which a node is "
                         "taken for hung (2 or more; 0 turns the heartbeat off), not 'often'"),
            std::string::npos)
      << job.err;
}

}  // namespace
}  // namespace lmdx::testing

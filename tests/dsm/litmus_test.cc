// Litmus tests of every consistency protocol in real jobs through the launcher: each scenario of
// programs/litmus.cc under sc, update, rc and hlrc (LMDX_PROTOCOL) on 2, 4 and 8 nodes. The
// program compares shared memory with a sequential reference and names the first difference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/stats_table.h"

namespace lmdx::testing {
namespace {

std::string Litmus() { return BinaryFromEnv("LITMUS"); }

std::string ScratchFile(const std::string& name) {
  const char* directory = std::getenv("TEST_TMPDIR");
  return std::string(directory != nullptr ? directory : "/tmp") + "/" + name;
}

JobResult ExpectVerified(const std::string& scenario, int nodes, int iterations,
                         const std::vector<std::string>& launcher_flags = {}) {
  JobResult job = RunJob(Litmus(), nodes, {scenario, std::to_string(iterations)}, launcher_flags);
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified: " + scenario + " on " + std::to_string(nodes) + " nodes"),
            std::string::npos)
      << job.out << job.err;
  EXPECT_EQ(job.err.find("FAILED"), std::string::npos) << job.err;
  return job;
}

// The protocols every data-race-free scenario runs under.
const char* const kProtocols[] = {"sc", "update", "rc", "lrc", "hlrc"};

using Case = std::tuple<const char*, int>;  // protocol, nodes

const auto kCases = ::testing::Combine(::testing::ValuesIn(kProtocols), ::testing::Values(2, 4, 8));

class LitmusTest : public ::testing::TestWithParam<Case> {
 protected:
  const char* protocol() const { return std::get<0>(GetParam()); }
  int nodes() const { return std::get<1>(GetParam()); }
  // Iterations for this many nodes: each iteration of 8 nodes costs about four of 2 nodes here
  // (2 cores), so the count shrinks with the nodes and every case takes about a second.
  int Iterations(int on_two_nodes) const { return on_two_nodes * 2 / nodes() + 2; }
  void Verify(const std::string& scenario, int on_two_nodes) {
    ExpectVerified(scenario, nodes(), Iterations(on_two_nodes));
  }

 private:
  ScopedEnv protocol_{"LMDX_PROTOCOL", std::get<0>(GetParam())};
};

// "hlrc_4_nodes".
std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return std::string(std::get<0>(info.param)) + "_" + std::to_string(std::get<1>(info.param)) +
         "_nodes";
}

// One suite per scenario, so that a failure names the scenario, the protocol and the nodes.
#define LMDX_LITMUS_SUITE(Suite, scenario) \
  class Suite : public LitmusTest {};      \
  INSTANTIATE_TEST_SUITE_P(Protocols, Suite, kCases, CaseName)

// The writer writes data, then a flag under a lock; a reader that sees the flag under the lock
// sees the data, whether the writer wrote it inside the critical section or before it.
LMDX_LITMUS_SUITE(MessagePassingThroughALock, "mp_lock");
TEST_P(MessagePassingThroughALock, ReadersSeeTheData) { Verify("mp_lock", 600); }

LMDX_LITMUS_SUITE(MessagePassingThroughASemaphore, "mp_sema");
TEST_P(MessagePassingThroughASemaphore, ReadersSeeTheData) { Verify("mp_sema", 600); }

LMDX_LITMUS_SUITE(MessagePassingThroughABarrier, "mp_barrier");
TEST_P(MessagePassingThroughABarrier, ReadersSeeTheData) { Verify("mp_barrier", 600); }

// A releases to B, B to C through another lock: C sees A's writes.
LMDX_LITMUS_SUITE(Transitivity, "transitivity");
TEST_P(Transitivity, TheEndOfAChainOfLocksSeesEveryWrite) { Verify("transitivity", 100); }

// Every node writes its own bytes of the same pages, down to neighbouring bytes of one word.
LMDX_LITMUS_SUITE(SeveralWritersOfOnePage, "false_sharing");
TEST_P(SeveralWritersOfOnePage, EveryByteSurvivesTheBarrier) { Verify("false_sharing", 600); }

LMDX_LITMUS_SUITE(MigratoryData, "migratory");
TEST_P(MigratoryData, APageHandedFromWriterToWriterUnderALockStaysWhole) {
  Verify("migratory", 600);
}

LMDX_LITMUS_SUITE(ReadMostlyData, "read_mostly");
TEST_P(ReadMostlyData, ReadersSeeEveryChangeOfOneWriter) { Verify("read_mostly", 900); }

// Threads of a node write one page without synchronisation while other nodes' releases,
// invalidations and updates for it arrive; each locked area moves between the nodes.
LMDX_LITMUS_SUITE(ThreadsOfANode, "threads");
TEST_P(ThreadsOfANode, KeepTheirOwnWritesAndSeeTheLockedOnes) { Verify("threads", 300); }

LMDX_LITMUS_SUITE(LmdxThreadsOfANode, "lmdx_threads");
TEST_P(LmdxThreadsOfANode, KeepTheirOwnWritesAndSeeTheLockedOnes) { Verify("lmdx_threads", 300); }

// The same with one lock for every thread: threads of one node also hand it to each other.
LMDX_LITMUS_SUITE(ThreadsOfANodeSharingOneLock, "threads_one_lock");
TEST_P(ThreadsOfANodeSharingOneLock, KeepTheirOwnWritesAndSeeTheLockedOnes) {
  Verify("threads_one_lock", 200);
}

LMDX_LITMUS_SUITE(LmdxThreadsOfANodeSharingOneLock, "lmdx_threads_one_lock");
TEST_P(LmdxThreadsOfANodeSharingOneLock, KeepTheirOwnWritesAndSeeTheLockedOnes) {
  Verify("lmdx_threads_one_lock", 200);
}

// Walks over large variables: a sweep, a column walk backwards and a band written word by word,
// whose faults fetch (or open for writing) the pages ahead of the walk.
LMDX_LITMUS_SUITE(Walks, "walks");
TEST_P(Walks, ReadersSeeEveryWordOfEveryWalk) { Verify("walks", 4); }

// The protocol `steps` after `protocol` in kProtocols' order.
std::string NextProtocol(const std::string& protocol, int steps) {
  for (std::size_t i = 0; i < std::size(kProtocols); ++i) {
    if (protocol == kProtocols[i]) return kProtocols[(i + steps) % std::size(kProtocols)];
  }
  return "?";
}

// The line of a job's statistics that shows a protocol moved a page between nodes (whole, so
// that "rc-fetch" does not match "hlrc-fetch").
std::string TrafficOf(const std::string& protocol) {
  return "\n  " + (protocol == "sc" ? std::string("sc-acquire") : protocol + "-fetch") + " ";
}

// The protocols that the statistics' "by protocol" table shows faulting or fetching on any rank.
std::vector<std::string> ProtocolsThatWorked(const std::string& err) {
  std::vector<std::string> worked;
  std::size_t at = err.find("\nby protocol\n");
  if (at == std::string::npos) return worked;
  std::istringstream lines(err.substr(at + 13));
  std::string line;
  std::getline(lines, line);  // the heading
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    int rank = -1;
    std::string name;
    unsigned long long read_faults = 0, write_faults = 0, fetched = 0;
    if (!(fields >> rank >> name >> read_faults >> write_faults >> fetched)) break;
    if (read_faults + write_faults + fetched > 0 &&
        std::find(worked.begin(), worked.end(), name) == worked.end()) {
      worked.push_back(name);
    }
  }
  return worked;
}

std::string Upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// Three variables under three protocols in one program, synchronised by the same locks and
// barriers: the job's default (LMDX_PROTOCOL) for two_b, and the configuration file's regions for
// two_a (its exact name) and two_c1 (a prefix).
LMDX_LITMUS_SUITE(VariablesUnderDifferentProtocols, "two_protocols");
TEST_P(VariablesUnderDifferentProtocols, SynchroniseTogether) {
  const std::string by_name = NextProtocol(protocol(), 1);
  const std::string by_prefix = NextProtocol(protocol(), 2);
  const std::string config = ScratchFile("two_protocols.conf");
  {
    std::ofstream file(config);
    file << "dsm {\n"
         << "  region { name: \"two_a\" protocol: " << Upper(by_name) << " }\n"
         << "  region { name: \"two_c*\" protocol: " << Upper(by_prefix) << " }\n"
         << "  region { name: \"tow_a\" protocol: SC }\n"
         << "}\n";
  }
  ScopedEnv stats("LMDX_STATS", "1");
  ScopedEnv json("LMDX_STATS_JSON", ScratchFile("two_protocols.json"));
  JobResult job = ExpectVerified("two_protocols", nodes(), Iterations(300), {"--config", config});
  // The header names the job's protocol and those of the regions that did work.
  const std::size_t header =
      job.err.find("lmdx statistics (protocol " + std::string(protocol()) + "; regions under ");
  ASSERT_NE(header, std::string::npos) << job.err;
  const std::string header_line = job.err.substr(header, job.err.find('\n', header) - header);
  // A whole name ("rc" is in "hlrc"): after a space, before ",", ";" or ")".
  auto names = [&header_line](const std::string& name) {
    for (const char* after : {",", ";", ")"}) {
      if (header_line.find(" " + name + after) != std::string::npos) return true;
    }
    return false;
  };
  for (const std::string& region_protocol : {by_name, by_prefix}) {
    EXPECT_TRUE(names(region_protocol)) << region_protocol << ": " << header_line;
  }
  EXPECT_FALSE(names(NextProtocol(protocol(), 3))) << header_line;
  // Each of the three moved pages, so the regions really run under them; the fourth moved none.
  // hlrc reads its pages from their homes' memory where the network allows (one-sided, no
  // message): the statistics' table below shows that it worked.
  for (const std::string& used : {std::string(protocol()), by_name, by_prefix}) {
    if (used == "hlrc") continue;
    EXPECT_NE(job.err.find(TrafficOf(used)), std::string::npos) << used << "\n" << job.err;
  }
  const std::string unused = NextProtocol(protocol(), 3);
  EXPECT_EQ(job.err.find(TrafficOf(unused)), std::string::npos) << unused << "\n" << job.err;
  // A region no variable took is named once, at the end, and only it.
  EXPECT_NE(job.err.find("warning: dsm.region \"tow_a\" in " + config +
                         " was taken by no shared variable of this run"),
            std::string::npos)
      << job.err;
  EXPECT_EQ(job.err.find("\"two_a\" in"), std::string::npos) << job.err;
  // The statistics split each node's figures by protocol: the three did work, the fourth none.
  std::vector<std::string> worked = ProtocolsThatWorked(job.err);
  for (const std::string& used : {std::string(protocol()), by_name, by_prefix}) {
    EXPECT_NE(std::find(worked.begin(), worked.end(), used), worked.end()) << used << "\n"
                                                                           << job.err;
  }
  EXPECT_EQ(std::find(worked.begin(), worked.end(), unused), worked.end()) << unused << "\n"
                                                                           << job.err;
}

// Racy programs keep sequential consistency's guarantees under sc only: a flag spun on without
// synchronisation shows the writes made before it, and a counter never goes back.
class ScRacyTest : public ::testing::TestWithParam<int> {
 private:
  ScopedEnv protocol_{"LMDX_PROTOCOL", "sc"};
};

TEST_P(ScRacyTest, AFlagSpunOnWithoutSynchronisationShowsTheWritesBeforeIt) {
  ExpectVerified("racy_sc", GetParam(), 100 * 2 / GetParam() + 2);
}

INSTANTIATE_TEST_SUITE_P(Nodes, ScRacyTest, ::testing::Values(2, 4, 8));

// The checks can fail: a reference that disagrees with shared memory in one word ends the job,
// naming the rank, the word, both values and where the value read came from.
TEST(LitmusSelfTest, ADifferenceFailsTheJobAndNamesRankIndexAndValues) {
  JobResult job = RunJob(Litmus(), 3, {"self_test", "1"});
  EXPECT_NE(job.exit_code, 0);
  const std::string all = job.out + job.err;
  EXPECT_NE(all.find("rank 2: FAILED: self_test: mp_barrier_data after the barrier of iteration 0 "
                     "differs: [index 5 (page +0): expected "),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("(written in iteration 0)] (1 words on 1 pages differ)"), std::string::npos)
      << all;
  EXPECT_EQ(job.out.find("verified"), std::string::npos) << job.out;
}

TEST(LitmusSelfTest, AnUnknownScenarioFailsTheJob) {
  JobResult job = RunJob(Litmus(), 2, {"no_such_scenario", "1"});
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE((job.out + job.err).find("FAILED: no_such_scenario: unknown scenario"),
            std::string::npos)
      << job.out << job.err;
}

// The two programs that once read stale values under hlrc and lrc (programs/lazy_scenarios.h), on
// 3 nodes under every protocol: a home that writes back the value its twin holds after another
// node's diff landed in its memory (with one-sided access, the default here, and without), and
// notices that a barrier carried reaching a second thread of a node that has not yet taken the
// barrier's departure in.
class StaleReadPrograms : public ::testing::TestWithParam<const char*> {
 private:
  ScopedEnv protocol_{"LMDX_PROTOCOL", GetParam()};
};

TEST_P(StaleReadPrograms, AHomesWriteBackOfItsTwinsValueReachesTheReader) {
  ExpectVerified("home_writes_back", 3, 40);
  ScopedEnv off("LMDX_DSM_ONE_SIDED", "off");
  ExpectVerified("home_writes_back", 3, 10);
}

TEST_P(StaleReadPrograms, ABarriersNoticesReachASecondThreadAheadOfItsNode) {
  ExpectVerified("notices_across_a_barrier", 3, 300);
}

// A copy taken from a home while it wrote a word it then took back, before its release.
TEST_P(StaleReadPrograms, ACopyTakenWhileTheHomeWroteSeesItsWriteBack) {
  ExpectVerified("home_served_while_writing", 3, 6);
  ScopedEnv off("LMDX_DSM_ONE_SIDED", "off");
  ExpectVerified("home_served_while_writing", 3, 6);
}

INSTANTIATE_TEST_SUITE_P(Protocols, StaleReadPrograms, ::testing::ValuesIn(kProtocols));

// With coherence units of 4 pages (dsm.unit), a read fault under the multiple-writer protocols
// brings the missing pages of its unit in the same message; results stay the reference's.
class CoherenceUnits : public ::testing::TestWithParam<const char*> {};

TEST_P(CoherenceUnits, AReadFaultBringsItsUnitAndReadersSeeTheData) {
  ScopedEnv protocol("LMDX_PROTOCOL", GetParam());
  const std::string conf = ScratchFile(std::string("unit_") + GetParam() + ".conf");
  std::ofstream(conf) << "dsm { unit: 4 }\n";
  JobResult units = ExpectVerified("read_mostly", 2, 4, {"--config", conf, "--stats"});
  EXPECT_GT(StatsColumnSum(units.out + units.err, "prefetch"), 0u) << units.out << units.err;
  JobResult pages = ExpectVerified("read_mostly", 2, 4, {"--stats"});
  EXPECT_EQ(StatsColumnSum(pages.out + pages.err, "prefetch"), 0u) << pages.out << pages.err;
  ExpectVerified("mp_barrier", 4, 4, {"--config", conf});
}

INSTANTIATE_TEST_SUITE_P(Protocols, CoherenceUnits,
                         ::testing::Values("update", "rc", "lrc", "hlrc"));

// The multiple-writer protocols fetch the pages ahead of a walk with its faults, and open those
// ahead of a walk that writes over copies the node holds: with LMDX_DSM_FETCH_AHEAD=off each page
// faults alone. Under userfaultfd the first touches of a band map the untouched pages after them.
class FetchAhead : public ::testing::TestWithParam<const char*> {};

TEST_P(FetchAhead, AWalkTakesAFractionOfThePageFaultsAndReadsTheSameData) {
  ScopedEnv protocol("LMDX_PROTOCOL", GetParam());
  JobResult ahead = ExpectVerified("walks", 2, 2, {"--stats"});
  const std::string with = ahead.out + ahead.err;
  JobResult alone = [] {
    ScopedEnv off("LMDX_DSM_FETCH_AHEAD", "off");
    return ExpectVerified("walks", 2, 2, {"--stats"});
  }();
  const std::string without = alone.out + alone.err;
  EXPECT_GT(StatsColumnSum(with, "streamed"), 128u) << with;
  EXPECT_GT(StatsColumnSum(with, "strm-used"), 0u) << with;
  EXPECT_EQ(StatsColumnSum(without, "streamed"), 0u) << without;
  // Each node walks the other's band of 128 pages at least once reading and once writing.
  EXPECT_GE(StatsColumnSum(without, "rfault"), 2 * 128u) << without;
  EXPECT_GE(StatsColumnSum(without, "wfault"), 2 * 128u) << without;
  EXPECT_LT(4 * StatsColumnSum(with, "rfault"), StatsColumnSum(without, "rfault")) << with;
  EXPECT_LT(2 * StatsColumnSum(with, "wfault"), StatsColumnSum(without, "wfault")) << with;
  // Two bands of 128 fresh pages, touched first by their homes: a handful of local faults.
  EXPECT_LT(StatsColumnSum(with, "local"), 2 * 128u / 4) << with;
}

INSTANTIATE_TEST_SUITE_P(Protocols, FetchAhead, ::testing::Values("update", "rc", "lrc", "hlrc"));

// One-sided access to home copies (process_vm_readv and _writev between the processes of this
// host): a fault that fetches again a page this node held before reads the home's copy from the
// home's memory under the protocols whose home copies hold every completed release, and hlrc's
// releases write their diffs into it (and its first fetches too read it, each registered in the
// home's memory first); the results stay the reference's. LMDX_DSM_ONE_SIDED=off
// asks the homes every time. lrc, whose home copies lack the diffs their writers keep, always
// asks; rc's homes must answer a release with the copies to invalidate, so its diffs go as
// messages. (update keeps every copy current, so it never fetches again.)
class OneSidedAccess : public ::testing::TestWithParam<const char*> {};

TEST_P(OneSidedAccess, RefetchesAndHlrcDiffsReachTheHomesMemoryAndReadersSeeTheData) {
  const std::string protocol = GetParam();
  ScopedEnv protocol_env("LMDX_PROTOCOL", protocol);
  for (const char* scenario : {"read_mostly", "mp_barrier", "false_sharing", "migratory"}) {
    JobResult job = ExpectVerified(scenario, 4, 6, {"--stats"});
    const std::string stats = job.out + job.err;
    if (protocol == "lrc") {
      EXPECT_EQ(StatsColumnSum(stats, "direct-rd"), 0u) << scenario << stats;
    } else {
      EXPECT_GT(StatsColumnSum(stats, "direct-rd"), 0u) << scenario << stats;
    }
    if (protocol == "hlrc") {
      EXPECT_GT(StatsColumnSum(stats, "direct-wr"), 0u) << scenario << stats;
      // First copies too are read from the homes' memory, registered there one-sidedly: a page
      // is asked for only when the node holds writes to it its home may lack.
      EXPECT_LT(2 * StatsFramesSent(stats, "hlrc-fetch"), StatsColumnSum(stats, "direct-rd"))
          << scenario << stats;
    } else {
      EXPECT_EQ(StatsColumnSum(stats, "direct-wr"), 0u) << scenario << stats;
    }
  }
  ScopedEnv off("LMDX_DSM_ONE_SIDED", "off");
  JobResult asked = ExpectVerified("false_sharing", 4, 6, {"--stats"});
  const std::string stats = asked.out + asked.err;
  EXPECT_EQ(StatsColumnSum(stats, "direct-rd"), 0u) << stats;
  EXPECT_EQ(StatsColumnSum(stats, "direct-wr"), 0u) << stats;
  if (protocol != "update") {
    EXPECT_GT(StatsFramesSent(stats, protocol + "-fetch"), 0u) << stats;
  }
}

INSTANTIATE_TEST_SUITE_P(Protocols, OneSidedAccess, ::testing::Values("rc", "hlrc", "lrc"));

// lrc keeps every diff at its writer until a garbage collection: with a limit of 16 KiB, the
// barriers gather them at the homes and discard them, the diffs kept stay within a few times the
// limit, and the data stays the reference's; without it they grow with the run.
TEST(LrcGarbageCollection, KeepsTheDiffsNearTheLimitAndTheDataRight) {
  ScopedEnv protocol("LMDX_PROTOCOL", "lrc");
  constexpr std::uint64_t kBound = 8 * 16 * 1024;
  {
    ScopedEnv limit("LMDX_LRC_DIFF_LIMIT", "16K");
    JobResult job = ExpectVerified("false_sharing", 4, 60, {"--stats"});
    const std::string stats = job.out + job.err;
    EXPECT_GT(StatsColumnSum(stats, "diffs-discarded"), 0u) << stats;
    EXPECT_GT(StatsColumnMax(stats, "kept-peak"), 0u) << stats;
    EXPECT_LT(StatsColumnMax(stats, "kept-peak"), kBound) << stats;
  }
  {
    // Threads of a node pass each round of a barrier together: the node collects once a round.
    ScopedEnv limit("LMDX_LRC_DIFF_LIMIT", "4K");
    JobResult job = ExpectVerified("lmdx_threads", 4, 30, {"--stats"});
    EXPECT_GT(StatsColumnSum(job.out + job.err, "diffs-discarded"), 0u) << job.out << job.err;
  }
  JobResult unlimited = ExpectVerified("false_sharing", 4, 60, {"--stats"});
  const std::string stats = unlimited.out + unlimited.err;
  EXPECT_EQ(StatsColumnSum(stats, "diffs-discarded"), 0u) << stats;
  EXPECT_GT(StatsColumnMax(stats, "kept-peak"), kBound) << stats;
}

}  // namespace
}  // namespace lmdx::testing

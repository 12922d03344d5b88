// Litmus tests of every consistency protocol in real jobs through the launcher: each scenario of
// programs/litmus.cc under sc, update, rc and hlrc (LMDX_PROTOCOL) on 2, 4 and 8 nodes. The
// program compares shared memory with a sequential reference and names the first difference.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

// Bugs these tests found. A (scenario, protocol) listed in kKnownBugs is still built and listed,
// as DISABLED_, so that the suite stays green until the bug is fixed; run the cases with
// --gtest_also_run_disabled_tests (they fail within seconds, most on every run).
//
// B1 rc: an invalidation that arrives while the page is held by the node's own release marks it
//    stale, and EndTransition (consistency/home_based/home_based_protocol.cc) drops the access
//    but keeps the page's twin. The page is fetched again later, the next write reuses the old
//    twin, and the diff then carries other nodes' bytes with the values of that fetch, which
//    overwrite their newer writes at the home (a writer's whole iteration reverts, or single
//    bytes of a word mix).
// B2 rc: Flush (consistency/home_based/release.cc) takes the `saved` diffs before it holds the
//    written pages; an invalidation in between turns the node's latest writes into a saved diff
//    that this release no longer sends: they are missing at the home when the release completes.
// B3 update, rc, hlrc: while a release holds a page (Flush) the page stays readable, and an
//    update or invalidation that arrives meanwhile is deferred to the end of the hold; a sibling
//    thread that has just acquired a lock reads the old value (a lost counter update).
// B4 hlrc: an acquire drops and refetches pages while a sibling thread's release still has their
//    diffs on the way to the home; the refetched copy lacks the node's own writes (a thread reads
//    its own byte back with an older value).
// B5 update, rc, hlrc: with several threads per node holding different locks at once, updates
//    and own writes are still lost after B1-B4 are fixed; not located yet.
// S1 sync (not a protocol): Service::Lock (sync/service.cc) decides that it cannot take the
//    token and enqueues the caller in two critical sections; a sibling's Unlock in between finds
//    no waiter and leaves the token at rest, the caller waits behind it, and a forwarded request
//    then waits for a release that never comes: every thread of the job hangs in lmdx_lock.
struct KnownBug {
  std::string_view scenario;
  std::string_view protocol;
  std::string_view bugs;
};

constexpr KnownBug kKnownBugs[] = {
    {"mp_barrier", "rc", "B1"},
    {"transitivity", "rc", "B1"},
    {"false_sharing", "rc", "B1 B2"},
    // The configuration gives one variable rc in these three.
    {"two_protocols", "sc", "B1 B2"},
    {"two_protocols", "update", "B1 B2"},
    {"two_protocols", "rc", "B1 B2"},
    {"threads", "update", "B3 B5"},
    {"threads", "rc", "B1 B2 B3 B5"},
    {"threads", "hlrc", "B3 B4 B5"},
    {"lmdx_threads", "update", "B3 B5"},
    {"lmdx_threads", "rc", "B1 B2 B3 B5"},
    {"lmdx_threads", "hlrc", "B3 B4 B5"},
    {"threads_one_lock", "sc", "S1"},
    {"threads_one_lock", "update", "S1 B3"},
    {"threads_one_lock", "rc", "S1 B1 B2 B3"},
    {"threads_one_lock", "hlrc", "S1 B3 B4"},
    {"lmdx_threads_one_lock", "sc", "S1"},
    {"lmdx_threads_one_lock", "update", "S1 B3"},
    {"lmdx_threads_one_lock", "rc", "S1 B1 B2 B3"},
    {"lmdx_threads_one_lock", "hlrc", "S1 B3 B4"},
};

bool KnownBroken(std::string_view scenario, std::string_view protocol) {
  for (const KnownBug& bug : kKnownBugs) {
    if (bug.scenario == scenario && bug.protocol == protocol) return true;
  }
  return false;
}

std::string Litmus() { return BinaryFromEnv("LITMUS"); }

std::string ScratchFile(const std::string& name) {
  const char* directory = std::getenv("TEST_TMPDIR");
  return std::string(directory != nullptr ? directory : "/tmp") + "/" + name;
}

// Sets an environment variable for the jobs a test starts, and restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

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
const char* const kProtocols[] = {"sc", "update", "rc", "hlrc"};

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

// "hlrc_4_nodes", or "DISABLED_rc_4_nodes" for a case of kKnownBugs.
auto NamesFor(std::string_view scenario) {
  return [scenario](const ::testing::TestParamInfo<Case>& info) {
    std::string name = std::string(std::get<0>(info.param)) + "_" +
                       std::to_string(std::get<1>(info.param)) + "_nodes";
    return KnownBroken(scenario, std::get<0>(info.param)) ? "DISABLED_" + name : name;
  };
}

// One suite per scenario, so that kKnownBugs can disable a scenario under one protocol.
#define LMDX_LITMUS_SUITE(Suite, scenario) \
  class Suite : public LitmusTest {};      \
  INSTANTIATE_TEST_SUITE_P(Protocols, Suite, kCases, NamesFor(scenario))

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
         << "}\n";
  }
  ScopedEnv stats("LMDX_STATS", "1");
  ScopedEnv json("LMDX_STATS_JSON", ScratchFile("two_protocols.json"));
  JobResult job = ExpectVerified("two_protocols", nodes(), Iterations(300), {"--config", config});
  EXPECT_NE(job.err.find("lmdx statistics (protocol " + std::string(protocol()) + ")"),
            std::string::npos)
      << job.err;
  // Each of the three moved pages, so the regions really run under them; the fourth moved none.
  for (const std::string& used : {std::string(protocol()), by_name, by_prefix}) {
    EXPECT_NE(job.err.find(TrafficOf(used)), std::string::npos) << used << "\n" << job.err;
  }
  const std::string unused = NextProtocol(protocol(), 3);
  EXPECT_EQ(job.err.find(TrafficOf(unused)), std::string::npos) << unused << "\n" << job.err;
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

}  // namespace
}  // namespace lmdx::testing

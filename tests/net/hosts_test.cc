// A cluster of clusters on one machine: two "hosts", each a network namespace with its own host
// name, joined by a virtual Ethernet pair, two nodes on each. Pairs on one host use shared
// memory and pairs across hosts TCP, chosen per pair; a DSM program runs across them; a host that
// falls off the network ends the job, named, through the heartbeat. Needs root (network
// namespaces); elsewhere the tests say why they were skipped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

using std::chrono::seconds;

// text with each run of spaces made one, so that a table's rows can be matched whatever their
// column widths.
std::string Squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

// Runs a command; true when it exits 0.
bool Run(const std::string& command) { return std::system(command.c_str()) == 0; }

// Two namespaces, <prefix>0 at <subnet>.1 and <prefix>1 at <subnet>.2, linked directly: nothing
// of the machine's own network (or its firewall) is between them. Removed at the end.
class TwoHosts {
 public:
  TwoHosts() {
    const int id = static_cast<int>(::getpid() % 100000);
    prefix_ = "lx" + std::to_string(id) + "h";
    subnet_ = "10.231." + std::to_string(id % 250);
    const std::string a = prefix_ + "0";
    const std::string b = prefix_ + "1";
    ready_ =
        ::geteuid() == 0 && Run("ip netns add " + a + " 2>/dev/null") && Run("ip netns add " + b) &&
        Run("ip link add " + a + "e netns " + a + " type veth peer name " + b + "e netns " + b) &&
        Run("ip -n " + a + " addr add " + subnet_ + ".1/24 dev " + a + "e") &&
        Run("ip -n " + b + " addr add " + subnet_ + ".2/24 dev " + b + "e") &&
        Run("ip -n " + a + " link set " + a + "e up") &&
        Run("ip -n " + b + " link set " + b + "e up") && Run("ip -n " + a + " link set lo up") &&
        Run("ip -n " + b + " link set lo up");
  }
  ~TwoHosts() {
    Run("ip netns del " + prefix_ + "0 2>/dev/null");
    Run("ip netns del " + prefix_ + "1 2>/dev/null");
  }
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  bool ready() const { return ready_; }
  // `lmdx run` of 4 nodes, launcher in host 0, each node in its host through in_host.sh.
  JobResult RunJob(const std::vector<std::string>& program_and_args,
                   const std::vector<std::string>& launcher_flags = {},
                   const std::vector<std::string>& env = {}) const {
    std::vector<std::string> command = {"ip",
                                        "netns",
                                        "exec",
                                        prefix_ + "0",
                                        BinaryFromEnv("LMDX_TOOL"),
                                        "run",
                                        BinaryFromEnv("IN_HOST"),
                                        "-n",
                                        "4",
                                        "--rendezvous-host",
                                        subnet_ + ".1"};
    command.insert(command.end(), launcher_flags.begin(), launcher_flags.end());
    command.push_back("--");
    command.push_back(prefix_);
    command.push_back(subnet_);
    command.insert(command.end(), program_and_args.begin(), program_and_args.end());
    return RunCommand(command, env, seconds(120));
  }
  // Takes host 1 off the network: its end of the link goes down.
  void Unplug() const { Run("ip -n " + prefix_ + "1 link set " + prefix_ + "1e down"); }

 private:
  std::string prefix_;
  std::string subnet_;
  bool ready_ = false;
};

TEST(HostsTest, EachPairUsesTheBestNetworkItSharesAndADsmProgramRunsAcrossThem) {
  TwoHosts hosts;
  if (!hosts.ready()) GTEST_SKIP() << "needs root and network namespaces (ip netns)";
  JobResult job = hosts.RunJob({BinaryFromEnv("JACOBI"), "--size", "256", "--iterations", "20"},
                               {"--show-transports"}, {"LMDX_PROTOCOL=hlrc"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("4 workers on 4 nodes, protocol hlrc"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("verified"), std::string::npos) << job.out << job.err;
  // Rank 0's matrix: shared memory within a host, TCP across.
  const std::string matrix = Squeezed(job.out + job.err);
  EXPECT_NE(matrix.find(" 0 - shm tcp tcp\n"), std::string::npos) << job.out << job.err;
  EXPECT_NE(matrix.find(" 2 tcp tcp - shm\n"), std::string::npos) << job.out << job.err;
}

// MDX-cc's clusters joined by a slower network, TreadMarks' way: pairs across the two hosts on
// udp, with 5% of its datagrams lost and some duplicated and reordered, while pairs within a host
// keep shared memory.
TEST(HostsTest, PairsAcrossHostsOnALossyUdpNetwork) {
  TwoHosts hosts;
  if (!hosts.ready()) GTEST_SKIP() << "needs root and network namespaces (ip netns)";
  JobResult job = hosts.RunJob(
      {BinaryFromEnv("JACOBI"), "--size", "256", "--iterations", "20"}, {"--show-transports"},
      {"LMDX_PROTOCOL=lrc", "LMDX_TRANSPORT_PAIRS=0-2:udp,0-3:udp,1-2:udp,1-3:udp",
       "LMDX_UDP_FAULTS=loss=5,duplicate=1,reorder=2"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("4 workers on 4 nodes, protocol lrc"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("verified"), std::string::npos) << job.out << job.err;
  const std::string matrix = Squeezed(job.out + job.err);
  EXPECT_NE(matrix.find(" 0 - shm udp udp\n"), std::string::npos) << job.out << job.err;
  EXPECT_NE(matrix.find(" 3 udp udp shm -\n"), std::string::npos) << job.out << job.err;
}

TEST(HostsTest, AHostThatFallsOffTheNetworkEndsTheJobNamed) {
  TwoHosts hosts;
  if (!hosts.ready()) GTEST_SKIP() << "needs root and network namespaces (ip netns)";
  // Every rank waits for ever (rank 1 for a message nobody sends, the others at a barrier); the
  // hang watch is off, so only the heartbeat can end the job.
  std::thread unplug([&hosts] {
    std::this_thread::sleep_for(seconds(3));
    hosts.Unplug();
  });
  JobResult job = hosts.RunJob({BinaryFromEnv("HANGS"), "spmd_recv"}, {},
                               {"LMDX_HEARTBEAT=3", "LMDX_DEADLOCK_AFTER=0"});
  unplug.join();
  EXPECT_NE(job.exit_code, 0) << job.out << job.err;
  EXPECT_LT(job.elapsed, seconds(30)) << job.err;
  // The launcher names the silent node, or a node of the lost host, which can still print through
  // the launcher's pipes, says that the rendezvous fell silent: whichever comes first ends the job.
  EXPECT_NE(job.err.find("has sent nothing, not even a heartbeat, for 3."), std::string::npos)
      << job.err;
  EXPECT_TRUE(job.err.find("rank 2") != std::string::npos ||
              job.err.find("rank 3") != std::string::npos)
      << job.err;
}

}  // namespace
}  // namespace lmdx::testing

// Which network each pair uses, and the shared-memory segments' lifetime.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string Program(const char* variable) { return BinaryFromEnv(variable); }

TEST(TransportsTest, ForcedPairsUseTcpAndTheMatrixSaysSo) {
  ::setenv("LMDX_TRANSPORT", "any", 1);
  ::setenv("LMDX_TRANSPORT_PAIRS", "0-1:tcp,3-2:tcp", 1);
  ::setenv("LMDX_TRANSPORT_STATS", "1", 1);
  JobResult job = RunJob(Program("EXCHANGE"), 4, {"100000"}, {"--show-transports"});
  ::unsetenv("LMDX_TRANSPORT_PAIRS");
  ::unsetenv("LMDX_TRANSPORT_STATS");
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("transports (row: rank, column: peer)\n"
                         "   rank      0      1      2      3\n"
                         "      0      -    tcp    shm    shm\n"
                         "      1    tcp      -    shm    shm\n"
                         "      2    shm    shm      -    tcp\n"
                         "      3    shm    shm    tcp      -\n"),
            std::string::npos)
      << job.out;
  EXPECT_EQ(CountOf(job.out, "transports (row"), 1) << job.out;
  // Every frame arrived over the network of its pair, counted by the transport that read it.
  for (int rank = 0; rank < 4; ++rank) {
    std::regex line("lmdx\\[rank " + std::to_string(rank) + "\\]: frames received:([^\n]*)");
    std::smatch found;
    ASSERT_TRUE(std::regex_search(job.err, found, line)) << job.err;
    std::string counts = found[1];
    for (int peer = 0; peer < 4; ++peer) {
      if (peer == rank) continue;
      bool tcp = (rank / 2 == peer / 2);
      std::string used = " from " + std::to_string(peer) + (tcp ? " over tcp " : " over shm ");
      std::string unused = " from " + std::to_string(peer) + (tcp ? " over shm " : " over tcp ");
      EXPECT_NE(counts.find(used), std::string::npos) << rank << ": " << counts;
      EXPECT_EQ(counts.find(unused), std::string::npos) << rank << ": " << counts;
    }
  }
}

// The configuration's network block takes effect as the variables do, and a variable wins.
TEST(TransportsTest, TheConfigurationsPairsTakeEffectAndVariablesOverrideThem) {
  std::string file = ::testing::TempDir() + "/network.conf";
  std::ofstream(file) << "network {\n  pair { a: 0 b: 1 transport: \"tcp\" }\n"
                         "  pair { a: 2 b: 3 transport: \"tcp\" }\n}\n";
  ::setenv("LMDX_TRANSPORT", "any", 1);
  JobResult job = RunJob(Program("EXCHANGE"), 4, {"1000"}, {"--show-transports", "--config", file});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("      0      -    tcp    shm    shm\n"
                         "      1    tcp      -    shm    shm\n"
                         "      2    shm    shm      -    tcp\n"),
            std::string::npos)
      << job.out;

  ::setenv("LMDX_TRANSPORT_PAIRS", "2-3:shm", 1);
  job = RunJob(Program("EXCHANGE"), 4, {"1000"}, {"--show-transports", "--config", file});
  ::unsetenv("LMDX_TRANSPORT_PAIRS");
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("      0      -    tcp    shm    shm\n"
                         "      1    tcp      -    shm    shm\n"
                         "      2    shm    shm      -    shm\n"),
            std::string::npos)
      << job.out;
}

// Fabric is asked for where UCX cannot start (it is given a transport it does not have).
TEST(TransportsTest, AForcedNetworkThePairLacksFallsBackWithALogLine) {
  ::setenv("LMDX_TRANSPORT", "fabric", 1);
  ::setenv("UCX_TLS", "no-such-transport", 1);
  JobResult job = RunJob(Program("EXCHANGE"), 2, {"1000"}, {"--show-transports"});
  ::unsetenv("UCX_TLS");
  ::setenv("LMDX_TRANSPORT", "any", 1);
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("      0      -    shm"), std::string::npos) << job.out;
  EXPECT_NE(job.err.find("fabric was asked for ranks 0 and 1, which do not share it; they use shm"),
            std::string::npos)
      << job.err;
}

TEST(TransportsTest, ABadTransportVariableIsAnError) {
  ::setenv("LMDX_TRANSPORT_PAIRS", "0-0:tcp", 1);
  JobResult job = RunJob(Program("EXCHANGE"), 2, {"1000"});
  ::unsetenv("LMDX_TRANSPORT_PAIRS");
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("LMDX_TRANSPORT_PAIRS: \"0-0:tcp\""), std::string::npos) << job.err;
}

// Every process's open descriptors and mappings that name the segments of a job.
int SegmentsStillHeld(const std::string& prefix) {
  int held = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  while (dirent* entry = ::readdir(proc)) {
    std::string pid = entry->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream maps("/proc/" + pid + "/maps");
    std::string line;
    while (std::getline(maps, line)) held += line.find("/memfd:" + prefix) != std::string::npos;
  }
  ::closedir(proc);
  return held;
}

TEST(TransportsTest, SegmentsVanishWhenANodeIsKilled) {
  for (const char* variable : {"ASAN_OPTIONS", "TSAN_OPTIONS"}) {
    const char* options = std::getenv(variable);
    std::string value = std::string(options != nullptr ? options : "") + ":handle_segv=0";
    ::setenv(variable, value.c_str(), 1);
  }
  ::setenv("LMDX_TRANSPORT", "shm", 1);
  ::setenv("LMDX_DEBUG", "1", 1);
  JobResult job = RunJob(Program("SEGMENT_CRASH"), 4, {"2"}, {}, std::chrono::seconds(30));
  ::unsetenv("LMDX_DEBUG");
  EXPECT_NE(job.exit_code, 0);
  EXPECT_EQ(CountOf(job.out, " connected"), 4) << job.out << job.err;
  EXPECT_NE(job.err.find("SIGSEGV"), std::string::npos) << job.err;
  std::smatch found;
  ASSERT_TRUE(std::regex_search(job.err, found, std::regex("shm: segment (lmdx-[0-9a-f]+-)")))
      << job.err;
  // Six pairs, each with a segment created by one side or by both at once.
  EXPECT_GE(CountOf(job.err, "shm: segment " + found[1].str()), 6) << job.err;
  // Nothing under /dev/shm, and no process maps a segment of the job any more.
  EXPECT_EQ(SegmentsStillHeld(found[1].str()), 0);
  DIR* dev_shm = ::opendir("/dev/shm");
  if (dev_shm != nullptr) {
    while (dirent* entry = ::readdir(dev_shm)) {
      EXPECT_EQ(std::string(entry->d_name).find("lmdx"), std::string::npos) << entry->d_name;
    }
    ::closedir(dev_shm);
  }
}

}  // namespace
}  // namespace lmdx::testing

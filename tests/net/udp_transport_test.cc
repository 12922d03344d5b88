// The udp transport in real jobs: real processes, real datagram sockets, and faults injected
// into every outgoing datagram (LMDX_UDP_FAULTS). Each program checks every byte it receives
// against what was sent; the DSM program checks its grid against a sequential reference.
#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

std::string Exchange() { return BinaryFromEnv("EXCHANGE"); }

// The number of segments each rank sent again, from the statistics line of each node's end.
std::vector<long> Resent(const std::string& err) {
  std::vector<long> counts;
  std::regex line("udp: [0-9]+ segments sent, ([0-9]+) sent again");
  for (std::sregex_iterator it(err.begin(), err.end(), line), end; it != end; ++it) {
    counts.push_back(std::stol((*it)[1].str()));
  }
  return counts;
}

TEST(UdpTransportTest, CarriesEveryMessageOfAJob) {
  ScopedEnv transport("LMDX_TRANSPORT", "udp");
  JobResult job = RunJob(Exchange(), 4, {"8000000"}, {"--show-transports"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("      0      -    udp    udp    udp\n"
                         "      1    udp      -    udp    udp\n"),
            std::string::npos)
      << job.out;
  EXPECT_EQ(CountOf(job.out, " verified 14 messages"), 4) << job.out;
}

// The issue's test: 5% of datagrams lost, and some duplicated and reordered, on every node.
TEST(UdpTransportTest, EveryFrameOnceAndInOrderUnderFivePercentLoss) {
  ScopedEnv transport("LMDX_TRANSPORT", "udp");
  ScopedEnv faults("LMDX_UDP_FAULTS", "loss=5,duplicate=1,reorder=2");
  ScopedEnv stats("LMDX_TRANSPORT_STATS", "1");
  JobResult job = RunJob(Exchange(), 4, {"16000000"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, " verified 14 messages"), 4) << job.out;
  EXPECT_EQ(CountOf(job.err,
                    "injecting faults into outgoing datagrams: loss 5.0%, duplicate 1.0%, "
                    "reorder 2.0%"),
            4)
      << job.err;
  // The faults really struck: every node had to send segments again.
  std::vector<long> resent = Resent(job.err);
  ASSERT_EQ(resent.size(), 4u) << job.err;
  for (long count : resent) EXPECT_GT(count, 0) << job.err;
}

// What rank 0's statistics line says of its sends from lent memory.
struct LentSends {
  long resent = 0;
  long refused = 0;
  long lent = 0;
  long spliced = 0;
  long from_slots = 0;  // spliced sends whose own bytes went from a slot
  long held = 0;        // slots kept unchanged at the end because their segment went twice
};
std::optional<LentSends> SenderStatistics(const std::string& err) {
  std::smatch line;
  if (!std::regex_search(
          err, line,
          std::regex(R"(\[rank 0\]: udp: [0-9]+ segments sent, ([0-9]+) sent again, ([0-9]+) )"
                     R"(refused by a full socket buffer, ([0-9]+) from lent memory, ([0-9]+) )"
                     R"(sends of lent memory spliced \(([0-9]+) with their own bytes from a )"
                     R"(slot; ([0-9]+) slots held after a resend\))"))) {
    return std::nullopt;
  }
  return LentSends{std::stol(line[1].str()), std::stol(line[2].str()), std::stol(line[3].str()),
                   std::stol(line[4].str()), std::stol(line[5].str()), std::stol(line[6].str())};
}

// REUSED_BUFFER over udp, statistics on: rank 0 sends `count` messages of `size` bytes from one
// buffer it rewrites as soon as lmdx_send returns, and rank 1 checks every byte.
struct LentRun {
  JobResult job;
  std::optional<LentSends> sender;  // rank 0's statistics line
  // A kernel that cannot splice into udp says so, and lent memory is copied as before.
  bool splicing_off() const {
    return job.err.find("lent memory is copied into the kernel from now on") != std::string::npos;
  }
};
LentRun RunLentSends(const std::string& size, int count) {
  ScopedEnv transport("LMDX_TRANSPORT", "udp");
  ScopedEnv stats("LMDX_TRANSPORT_STATS", "1");
  LentRun run{RunJob(BinaryFromEnv("REUSED_BUFFER"), 2, {size, std::to_string(count)}), {}};
  run.sender = SenderStatistics(run.job.err);
  return run;
}
// The job ended well, rank 1 verified every message, and rank 0 said its statistics.
::testing::AssertionResult AllVerified(const LentRun& run, int count) {
  const JobResult& job = run.job;
  if (job.exit_code != 0) {
    return ::testing::AssertionFailure() << "exit code " << job.exit_code << "\n"
                                         << job.out << job.err;
  }
  std::string verified = "rank 1 verified " + std::to_string(count) + " messages";
  if (job.out.find(verified) == std::string::npos) {
    return ::testing::AssertionFailure() << "no \"" << verified << "\"\n" << job.out;
  }
  if (!run.sender) return ::testing::AssertionFailure() << "no statistics line\n" << job.err;
  return ::testing::AssertionSuccess();
}

// A large message goes out from the sender's own buffer, which stays lent until the receiver
// has acknowledged all of it: lmdx_send returns only then, so a resend after a loss never reads
// the next message's bytes, which the program writes into the buffer at once. The kernel takes
// the buffer's pages without a copy and reads them only when the receiver reads the datagram,
// so a datagram read after the buffer was written again would carry the next message's bytes.
TEST(UdpTransportTest, ASendersBufferIsFreeOnceLmdxSendReturnsEvenUnderLoss) {
  ScopedEnv faults("LMDX_UDP_FAULTS", "loss=10,duplicate=1,reorder=2");
  LentRun run = RunLentSends("1048576", 16);
  ASSERT_TRUE(AllVerified(run, 16));
  EXPECT_GT(run.sender->resent, 0) << "rank 0 never sent a segment again\n" << run.job.err;
  // 16 frames of 1 MiB, each at least 16 segments of at most 64 KiB, went out of the buffer,
  // all but the last few bytes of each without a copy.
  EXPECT_GE(run.sender->lent, 16 * 16) << run.job.err;
  if (!run.splicing_off()) {
    EXPECT_GE(run.sender->spliced, 16 * 16) << run.job.err;
  }
}

// With LMDX_UDP_SPLICE=0 lent memory is copied into the kernel, and still not read after
// lmdx_send returns.
TEST(UdpTransportTest, LentMemoryIsCopiedWhenSplicingIsOff) {
  ScopedEnv splice("LMDX_UDP_SPLICE", "0");
  ScopedEnv faults("LMDX_UDP_FAULTS", "loss=5,reorder=2");
  LentRun run = RunLentSends("1048576", 8);
  ASSERT_TRUE(AllVerified(run, 8));
  EXPECT_GE(run.sender->lent, 8 * 16) << run.job.err;
  EXPECT_EQ(run.sender->spliced, 0) << run.job.err;
}

// Splices refused after the datagram's bytes went into the pipe, as a full socket buffer would
// refuse them (injected: a fifth of them): each such datagram counts as lost and is resent, and
// every message arrives whole. (A pipe left holding a refused datagram's bytes would not pass
// them on either: the next datagram's bytes find it full and it is dropped.)
TEST(UdpTransportTest, RefusedSplicesAreResentAndTheStreamStaysWhole) {
  ScopedEnv faults("LMDX_UDP_FAULTS", "splice=20");
  LentRun run = RunLentSends("1048576", 16);
  ASSERT_TRUE(AllVerified(run, 16));
  EXPECT_EQ(CountOf(run.job.err, "splices refused 20.0%"), 2) << run.job.err;
  EXPECT_GT(run.sender->refused, 0) << run.job.err;
  EXPECT_GT(run.sender->resent, 0) << run.job.err;
  if (!run.splicing_off()) {
    EXPECT_GE(run.sender->spliced, 16 * 8) << run.job.err;
  }
}

// Every spliced first send of a segment takes its own bytes (header and copied part) into the
// kernel from a slot rather than a page of the pipe's; only a resend writes them into the pipe.
// A slot is held at the end only for a segment that went twice.
::testing::AssertionResult SlotsUsedAsTheyShould(const LentSends& sender) {
  if (sender.from_slots + sender.resent < sender.spliced) {
    return ::testing::AssertionFailure()
           << sender.spliced << " spliced sends, " << sender.from_slots << " from slots and only "
           << sender.resent << " resends";
  }
  if (sender.held > sender.resent) {
    return ::testing::AssertionFailure()
           << sender.held << " slots held after only " << sender.resent << " resends";
  }
  return ::testing::AssertionSuccess();
}

// With no faults injected (a resend is rare, but a loaded machine may time one out), each
// slot is free again at its acknowledgement.
TEST(UdpTransportTest, EachLentSegmentsOwnBytesGoFromASlot) {
  LentRun run = RunLentSends("1048576", 16);
  ASSERT_TRUE(AllVerified(run, 16));
  if (run.splicing_off()) GTEST_SKIP() << "this kernel cannot splice into udp\n" << run.job.err;
  EXPECT_GE(run.sender->spliced, 16 * 16) << run.job.err;
  EXPECT_TRUE(SlotsUsedAsTheyShould(*run.sender)) << run.job.err;
}

// How many datagrams rank 1 read partly straight into the payload they continued.
std::optional<long> ReadIntoPlace(const std::string& err) {
  std::smatch line;
  if (!std::regex_search(
          err, line, std::regex(R"(\[rank 1\]: udp: .*, ([0-9]+) datagrams read into place)"))) {
    return std::nullopt;
  }
  return std::stol(line[1].str());
}

// While a large payload streams in, the receiver reads each datagram's bytes straight into the
// payload's memory (the receive's own buffer here) rather than into a buffer of its own first.
// How many depends on timing: the datagrams of a message that are already queued when its first
// one is read come in one batch, and are copied; so this asserts only that it happens.
TEST(UdpTransportTest, AStreamingPayloadIsReadStraightWhereItBelongs) {
  LentRun run = RunLentSends("1048576", 16);
  ASSERT_TRUE(AllVerified(run, 16));
  std::optional<long> placed = ReadIntoPlace(run.job.err);
  ASSERT_TRUE(placed) << run.job.err;
  EXPECT_GT(*placed, 0) << run.job.err;
}

// A segment whose datagram went twice (duplicated here) may have a copy still unread when the
// acknowledgement comes: its slot is held unchanged, not written with the next datagram's header.
TEST(UdpTransportTest, ASlotWhoseSegmentWentTwiceIsHeld) {
  ScopedEnv faults("LMDX_UDP_FAULTS", "duplicate=20");
  LentRun run = RunLentSends("1048576", 16);
  ASSERT_TRUE(AllVerified(run, 16));
  if (run.splicing_off()) GTEST_SKIP() << "this kernel cannot splice into udp\n" << run.job.err;
  EXPECT_GT(run.sender->from_slots, 16 * 8) << run.job.err;
  EXPECT_GT(run.sender->held, 0) << run.job.err;
  EXPECT_LT(run.sender->from_slots, run.sender->spliced) << run.job.err;
}

// A lent payload larger than the window (about 4 MiB in flight) is spliced too: its later
// segments wait for acknowledgements of the first, and take the slots those give back.
TEST(UdpTransportTest, ALentPayloadLargerThanTheWindowIsSplicedWhole) {
  LentRun run = RunLentSends("16777216", 2);
  ASSERT_TRUE(AllVerified(run, 2));
  if (run.splicing_off()) GTEST_SKIP() << "this kernel cannot splice into udp\n" << run.job.err;
  EXPECT_GE(run.sender->lent, 2 * 256) << run.job.err;
  EXPECT_GE(run.sender->spliced, 2 * 256) << run.job.err;
  EXPECT_TRUE(SlotsUsedAsTheyShould(*run.sender)) << run.job.err;
}

// The receiver dies while rank 0 is inside lent sends, waiting for acknowledgements that will
// never come: the job ends at once, naming it.
TEST(UdpTransportTest, AReceiverDyingDuringLentSendsEndsTheJobNamingIt) {
  ScopedEnv transport("LMDX_TRANSPORT", "udp");
  JobResult job = RunJob(BinaryFromEnv("REUSED_BUFFER"), 2, {"4194304", "64", "2"}, {},
                         std::chrono::seconds(30));
  EXPECT_NE(job.exit_code, 0) << job.out << job.err;
  EXPECT_LT(job.elapsed, std::chrono::seconds(10)) << job.err;
  EXPECT_NE(job.err.find("rank 1"), std::string::npos) << job.err;
  EXPECT_NE(job.err.find("SIGKILL"), std::string::npos) << job.err;
}

TEST(UdpTransportTest, SmallSegmentsCutLargeFramesIntoManyDatagrams) {
  ScopedEnv transport("LMDX_TRANSPORT", "udp");
  ScopedEnv segment("LMDX_UDP_SEGMENT", "1400");
  ScopedEnv faults("LMDX_UDP_FAULTS", "loss=2,reorder=2");
  JobResult job = RunJob(Exchange(), 3, {"3000000"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, " verified 10 messages"), 3) << job.out;
}

TEST(UdpTransportTest, ADsmProgramVerifiesOverALossyNetwork) {
  ScopedEnv transport("LMDX_TRANSPORT", "udp");
  ScopedEnv faults("LMDX_UDP_FAULTS", "loss=5,duplicate=1,reorder=2");
  for (const char* protocol : {"lrc", "hlrc"}) {
    JobResult job = RunJob(BinaryFromEnv("JACOBI"), 4, {"--size", "256", "--iterations", "20"},
                           {"--protocol", protocol});
    ASSERT_EQ(job.exit_code, 0) << protocol << "\n" << job.out << job.err;
    EXPECT_NE(job.out.find("on 4 nodes, protocol " + std::string(protocol)), std::string::npos)
        << job.out;
    EXPECT_NE(job.out.find("verified"), std::string::npos) << job.out << job.err;
  }
}

TEST(UdpTransportTest, BadSettingsAreNamed) {
  struct BadSetting {
    const char* variable;
    const char* value;
    const char* message;
  };
  const BadSetting settings[] = {
      {"LMDX_UDP_FAULTS", "loss=lots", "LMDX_UDP_FAULTS: \"loss=lots\" is not loss=P"},
      {"LMDX_UDP_SEGMENT", "12", "LMDX_UDP_SEGMENT must be a number of bytes from 256"},
      {"LMDX_UDP_SPLICE", "yes", "LMDX_UDP_SPLICE must be 0 or 1, not \"yes\""},
  };
  for (const BadSetting& setting : settings) {
    ScopedEnv transport("LMDX_TRANSPORT", "udp");
    ScopedEnv bad(setting.variable, setting.value);
    JobResult job = RunJob(Exchange(), 2, {"1000"});
    EXPECT_NE(job.exit_code, 0) << setting.variable;
    EXPECT_NE(job.err.find(setting.message), std::string::npos) << job.err;
  }
}

}  // namespace
}  // namespace lmdx::testing

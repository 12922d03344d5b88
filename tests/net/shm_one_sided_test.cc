// The shared-memory transport's one-sided access, with two transports in one process as ranks 0
// and 1 of a job: a read copies what the peer exposed, a write lands every piece and nothing
// else, and a key that does not name the process at the other end of the pair's socket is
// refused rather than used; a memory file the peer names is mapped, and anything else it names
// is not. Access between two real processes is tested through the DSM
// (tests/dsm/litmus_test.cc, OneSidedAccess).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/mapping.h"
#include "net/progress_engine.h"
#include "net/shm/shm_transport.h"
#include "tests/net/in_process_host.h"

namespace lmdx::net {
namespace {

using Rank = InProcessRank<ShmTransport>;

class ShmOneSidedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string job = "shm-reads-" + std::to_string(::getpid());
    StartRanks(ranks_, [&](ProgressEngine& engine, RecordingHost& host, int rank) {
      return std::make_unique<ShmTransport>(engine, host, TestSecret(), rank, 2, job);
    });
  }
  void TearDown() override { StopRanks(ranks_); }

  // Sends a frame from rank 0 to rank 1 and waits for it: the pair's connection then exists.
  void Connect() {
    OutgoingMessage message;
    message.header.type = MessageType::kRaw;
    message.header.source = 0;
    message.header.destination = 1;
    ranks_[0].transport->Send(1, std::move(message), /*may_block=*/true);
    ASSERT_EQ(ranks_[1].host.Take(1).size(), 1u);
  }

  // Reads size bytes at address from rank 1 into local; nullopt when the read was refused.
  std::optional<bool> Read(const std::string& key, std::uint64_t address, void* local,
                           std::size_t size) {
    std::optional<bool> result;
    bool started =
        ranks_[0].transport->Read(1, address, key, local, size, [&](bool ok) { result = ok; });
    if (!started) return std::nullopt;
    // process_vm_readv is one system call: the read is over when Read returns.
    EXPECT_TRUE(result.has_value());
    return result;
  }

  Rank ranks_[2];
};

TEST_F(ShmOneSidedTest, AReadCopiesWhatThePeerExposed) {
  Connect();
  std::vector<std::uint8_t> exposed(3 << 20);
  for (std::size_t i = 0; i < exposed.size(); ++i) exposed[i] = static_cast<std::uint8_t>(i * 13);
  std::optional<std::string> key = ranks_[1].transport->Expose(exposed.data(), exposed.size());
  ASSERT_TRUE(key.has_value());
  const auto base = reinterpret_cast<std::uint64_t>(exposed.data());
  for (auto [offset, size] : {std::pair<std::size_t, std::size_t>{8192, 4096}, {1, 3 << 19}}) {
    std::vector<std::uint8_t> local(size, 0);
    EXPECT_EQ(Read(*key, base + offset, local.data(), size), std::optional<bool>(true));
    for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(local[i], exposed[offset + i]) << i;
  }
}

TEST_F(ShmOneSidedTest, AKeyThatDoesNotNameThePeersProcessIsRefused) {
  Connect();
  std::vector<std::uint8_t> exposed(4096, 7);
  const auto base = reinterpret_cast<std::uint64_t>(exposed.data());
  std::vector<std::uint8_t> local(4096, 0);
  for (const char* key : {"pid:1", "pid:", "pid:12x", "", "rkey"}) {
    EXPECT_EQ(Read(key, base, local.data(), local.size()), std::nullopt) << key;
  }
  EXPECT_EQ(local, std::vector<std::uint8_t>(4096, 0));
}

TEST_F(ShmOneSidedTest, AWriteLandsEveryPieceAndNothingElse) {
  Connect();
  std::vector<std::uint8_t> exposed(1 << 20, 0xee);
  std::optional<std::string> key = ranks_[1].transport->Expose(exposed.data(), exposed.size());
  ASSERT_TRUE(key.has_value());
  const auto base = reinterpret_cast<std::uint64_t>(exposed.data());
  // More pieces than one system call takes (IOV_MAX), of odd sizes, one of them large.
  std::vector<std::vector<std::uint8_t>> sources;
  std::vector<Transport::WritePiece> pieces;
  std::vector<std::uint8_t> expected = exposed;
  for (std::size_t i = 0; i < 1500; ++i) {
    const std::size_t size = i == 700 ? 100000 : 1 + i % 5;
    const std::size_t at = i == 700 ? 800000 : i * 256 + i % 7;
    sources.emplace_back(size, static_cast<std::uint8_t>(i));
    pieces.push_back({base + at, sources.back().data(), size});
    std::fill_n(expected.begin() + static_cast<long>(at), size, static_cast<std::uint8_t>(i));
  }
  EXPECT_EQ(ranks_[0].transport->Write(1, *key, pieces), std::optional<bool>(true));
  EXPECT_EQ(exposed, expected);
}

TEST_F(ShmOneSidedTest, AWriteWithAKeyThatDoesNotNameThePeersProcessIsRefused) {
  Connect();
  std::vector<std::uint8_t> exposed(64, 0);
  std::uint8_t byte = 9;
  const Transport::WritePiece piece{reinterpret_cast<std::uint64_t>(exposed.data()), &byte, 1};
  for (const char* key : {"pid:1", "", "pid:-3"}) {
    EXPECT_EQ(ranks_[0].transport->Write(1, key, {&piece, 1}), std::nullopt) << key;
  }
  EXPECT_EQ(exposed, std::vector<std::uint8_t>(64, 0));
  // Memory the peer does not have: refused by the kernel, reported as a failed write.
  std::optional<std::string> key = ranks_[1].transport->Expose(nullptr, 0);
  const Transport::WritePiece nowhere{0, &byte, 1};
  EXPECT_EQ(ranks_[0].transport->Write(1, *key, {&nowhere, 1}), std::optional<bool>(false));
}

TEST_F(ShmOneSidedTest, NoReadBeforeThePairIsConnected) {
  std::optional<std::string> key = ranks_[1].transport->Expose(nullptr, 0);
  ASSERT_TRUE(key.has_value());
  std::uint8_t byte = 0;
  EXPECT_EQ(Read(*key, reinterpret_cast<std::uint64_t>(&byte), &byte, 1), std::nullopt);
}

TEST_F(ShmOneSidedTest, AReadOfMemoryThePeerDoesNotHaveFails) {
  Connect();
  std::optional<std::string> key = ranks_[1].transport->Expose(nullptr, 0);
  ASSERT_TRUE(key.has_value());
  std::vector<std::uint8_t> local(4096);
  // Page 0 is never mapped.
  EXPECT_EQ(Read(*key, 0, local.data(), local.size()), std::optional<bool>(false));
}

TEST_F(ShmOneSidedTest, AMemoryFileThePeerNamesIsMappedAndSharesItsBytes) {
  Connect();
  constexpr std::size_t kBytes = 1 << 20;
  Fd file(::memfd_create("lmdx-test", MFD_CLOEXEC));
  ASSERT_TRUE(file);
  ASSERT_EQ(::ftruncate(file.get(), kBytes), 0);
  void* at = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, file.get(), 0);
  ASSERT_NE(at, MAP_FAILED);
  Mapping exposed(at, kBytes);
  exposed.data()[4096] = std::byte{42};
  std::optional<std::string> key = ranks_[1].transport->Expose(exposed.data(), kBytes);
  ASSERT_TRUE(key.has_value());
  Mapping mapped = ranks_[0].transport->Map(1, *key, file.get(), kBytes);
  ASSERT_NE(mapped.data(), nullptr);
  ASSERT_EQ(mapped.size(), kBytes);
  EXPECT_NE(mapped.data(), exposed.data());
  EXPECT_EQ(mapped.data()[4096], std::byte{42});
  // Writes go both ways: the two mappings are one memory.
  mapped.data()[kBytes - 1] = std::byte{7};
  EXPECT_EQ(exposed.data()[kBytes - 1], std::byte{7});
  // Longer than the file, or with a key that names another process: refused.
  EXPECT_EQ(ranks_[0].transport->Map(1, *key, file.get(), 2 * kBytes).data(), nullptr);
  EXPECT_EQ(ranks_[0].transport->Map(1, "pid:1", file.get(), kBytes).data(), nullptr);
}

TEST_F(ShmOneSidedTest, ADescriptorThatIsNotAMemoryFileIsNotMapped) {
  Connect();
  std::vector<std::uint8_t> exposed(4096, 7);
  std::optional<std::string> key = ranks_[1].transport->Expose(exposed.data(), exposed.size());
  ASSERT_TRUE(key.has_value());
  Fd file(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(file);
  EXPECT_EQ(ranks_[0].transport->Map(1, *key, file.get(), 4096).data(), nullptr);
  EXPECT_EQ(ranks_[0].transport->Map(1, *key, -1, 4096).data(), nullptr);
  EXPECT_EQ(ranks_[0].transport->Map(1, *key, 1 << 20, 4096).data(), nullptr);
}

}  // namespace
}  // namespace lmdx::net

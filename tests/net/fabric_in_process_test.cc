// Two fabric transports in one process, each with its own progress engine, as ranks 0 and 1 of a
// job: frames of mixed sizes arrive whole and in order, and one-sided reads of exposed memory,
// over UCX's tcp and its shared-memory transports.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "net/fabric/fabric_transport.h"
#include "net/progress_engine.h"
#include "tests/net/in_process_host.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::net {
namespace {

using lmdx::testing::ScopedEnv;

using Rank = InProcessRank<FabricTransport>;

class FabricInProcessTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    StartRanks(ranks_, [](ProgressEngine& engine, RecordingHost& host, int rank) {
      return std::make_unique<FabricTransport>(engine, host, TestSecret(), rank, 2,
                                               /*peers_on_this_host=*/true);
    });
  }
  void TearDown() override { StopRanks(ranks_); }
  // Before the end: closing, each rank says goodbye, which the other takes as the pair's end.
  void ExpectNoPeerLost() {
    for (Rank& rank : ranks_) EXPECT_EQ(rank.host.lost(), "");
  }

  ScopedEnv tls_{"UCX_TLS", GetParam()};
  Rank ranks_[2];
};

std::uint8_t Byte(std::size_t index, std::size_t i) {
  return static_cast<std::uint8_t>(index * 31 + i * 7 + (i >> 12));
}

// A raw frame from rank 0 to rank 1, numbered index.
OutgoingMessage RawFrame(std::size_t index, Payload payload) {
  OutgoingMessage message;
  message.header.type = MessageType::kRaw;
  message.header.source = 0;
  message.header.destination = 1;
  message.header.request_id = index;
  message.payload = std::move(payload);
  return message;
}

TEST_P(FabricInProcessTest, FramesArriveWholeAndInOrder) {
  const std::size_t sizes[] = {0, 3, 5000, 2 << 20, 1, 300000, 0, 6 << 20, 12};
  std::vector<std::shared_ptr<std::vector<std::uint8_t>>> payloads;
  for (std::size_t index = 0; index < std::size(sizes); ++index) {
    auto payload = std::make_shared<std::vector<std::uint8_t>>(sizes[index]);
    for (std::size_t i = 0; i < payload->size(); ++i) (*payload)[i] = Byte(index, i);
    OutgoingMessage message = RawFrame(index, Payload{payload->data(), payload->size(), payload});
    message.body = std::string(index * 1000, 'b');  // from 5000 bytes on, not in the header
    ranks_[0].transport->Send(1, std::move(message), /*may_block=*/true);
  }
  std::vector<InboundMessage> got = ranks_[1].host.Take(std::size(sizes));
  ASSERT_EQ(got.size(), std::size(sizes));
  for (std::size_t index = 0; index < got.size(); ++index) {
    const InboundMessage& message = got[index];
    ASSERT_EQ(message.header.request_id, index) << "out of order";
    EXPECT_EQ(message.body, std::string(index * 1000, 'b'));
    ASSERT_EQ(message.header.payload_length, sizes[index]);
    for (std::size_t i = 0; i < sizes[index]; ++i) {
      ASSERT_EQ(message.payload[i], Byte(index, i)) << index << " at " << i;
    }
  }
  ExpectNoPeerLost();
}

// Sends RawFrame(index) whose payload (size bytes) follows Byte(index, ...).
void SendRaw(Rank& from, std::size_t index, std::size_t size) {
  auto payload = std::make_shared<std::vector<std::uint8_t>>(size);
  for (std::size_t i = 0; i < size; ++i) (*payload)[i] = Byte(index, i);
  from.transport->Send(1, RawFrame(index, Payload{payload->data(), payload->size(), payload}),
                       /*may_block=*/true);
}

// A payload of its own holding value, as a node's handlers send.
Payload OwnedWord(std::uint64_t value) {
  auto owned = std::make_shared<std::uint64_t>(value);
  return Payload{owned.get(), sizeof value, owned};
}

// Takes a burst the tests below send, where frame i carries the word i * factor.
void ExpectWordBurst(RecordingHost& host, std::size_t frames, std::uint64_t factor) {
  std::vector<InboundMessage> got = host.Take(frames);
  ASSERT_EQ(got.size(), frames) << "the burst stalled after " << host.arrived();
  for (std::size_t index = 0; index < frames; ++index) {
    ASSERT_EQ(got[index].header.request_id, index) << "out of order";
    std::uint64_t value = 0;
    ASSERT_EQ(got[index].header.payload_length, sizeof value);
    std::memcpy(&value, got[index].payload, sizeof value);
    ASSERT_EQ(value, index * factor);
  }
}

void ExpectPayload(const InboundMessage& message, std::size_t index, std::size_t size) {
  ASSERT_EQ(message.header.request_id, index) << "out of order";
  ASSERT_EQ(message.header.payload_length, size);
  for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(message.payload[i], Byte(index, i)) << i;
}

// 1 MiB goes by rendezvous: its data stays at the sender until the receiver names memory.
constexpr std::size_t kRendezvousSize = 1 << 20;

TEST_P(FabricInProcessTest, ALargeMessageWaitsForItsReceiveAndLandsInIt) {
  ranks_[1].host.ReceivesMayComeLater();
  // The receive comes only after the announcement found none (a ping-pong's receiver that is
  // still finishing its own send).
  std::vector<std::uint8_t> receive(kRendezvousSize, 0);
  ranks_[1].host.PostReceive(receive.data(), receive.size(), /*after_asks=*/1);
  SendRaw(ranks_[0], 7, kRendezvousSize);
  std::vector<InboundMessage> got = ranks_[1].host.Take(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].payload_placed) << "fetched into a buffer of its own, to be copied again";
  EXPECT_EQ(got[0].payload, receive.data());
  ExpectPayload(got[0], 7, kRendezvousSize);
  ExpectNoPeerLost();
}

TEST_P(FabricInProcessTest, AMessageNobodyReceivesStillArrives) {
  // Nobody posts a receive: after its wait the data lands in memory of its own (a program that
  // sends large messages both ways before receiving must not stall).
  ranks_[1].host.ReceivesMayComeLater();
  SendRaw(ranks_[0], 3, kRendezvousSize);
  std::vector<InboundMessage> got = ranks_[1].host.Take(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].payload_placed);
  ExpectPayload(got[0], 3, kRendezvousSize);
  ExpectNoPeerLost();
}

TEST_P(FabricInProcessTest, ASenderThatRunsAheadOfItsReceiverWaitsOnce) {
  ranks_[1].host.ReceivesMayComeLater();
  ranks_[1].transport->SetWaitForReceiveMs(50);
  // Take hands over what came since the last Take.
  auto send_and_take = [&](std::size_t index) {
    SendRaw(ranks_[0], index, kRendezvousSize);
    std::vector<InboundMessage> got = ranks_[1].host.Take(1);
    EXPECT_EQ(got.size(), 1u);
    if (!got.empty()) ExpectPayload(got[0], index, kRendezvousSize);
    return got.empty() ? InboundMessage{} : std::move(got[0]);
  };
  // Nobody receives: the first message waits for its receive until the wait runs out.
  EXPECT_FALSE(send_and_take(0).payload_placed);
  int wakes = ranks_[1].host.wakes_asked();
  EXPECT_GT(wakes, 0);
  // This receiver is busy elsewhere: the next message does not wait.
  EXPECT_FALSE(send_and_take(1).payload_placed);
  EXPECT_EQ(ranks_[1].host.wakes_asked(), wakes) << "it waited for a receive again";
  // A receive posted ahead shows the receiver keeps up again: the message after it waits.
  std::vector<std::uint8_t> receive(kRendezvousSize, 0);
  ranks_[1].host.PostReceive(receive.data(), receive.size());
  EXPECT_TRUE(send_and_take(2).payload_placed);
  EXPECT_EQ(ranks_[1].host.wakes_asked(), wakes);
  EXPECT_FALSE(send_and_take(3).payload_placed);
  EXPECT_GT(ranks_[1].host.wakes_asked(), wakes) << "it no longer waits for receives";
  ExpectNoPeerLost();
}

TEST_P(FabricInProcessTest, FramesBehindOneWaitingForItsReceiveArriveInOrder) {
  ranks_[1].host.ReceivesMayComeLater();
  // Waits that only a frame behind can end within the test's time.
  ranks_[1].transport->SetWaitForReceiveMs(60000);
  const std::size_t sizes[] = {kRendezvousSize, 8, kRendezvousSize + 5, 100};
  for (std::size_t index = 0; index < std::size(sizes); ++index) {
    SendRaw(ranks_[0], index, sizes[index]);
  }
  std::vector<InboundMessage> got = ranks_[1].host.Take(std::size(sizes));
  ASSERT_EQ(got.size(), std::size(sizes));
  for (std::size_t index = 0; index < got.size(); ++index) {
    ExpectPayload(got[index], index, sizes[index]);
  }
  ExpectNoPeerLost();
}

// An application thread's small frames go within its call when UCX can take them at once
// (SendNow), the others through Send, as a node sends them. Mixed in a burst that fills the
// peer's queue, they still arrive once each and in order.
TEST_P(FabricInProcessTest, FramesSentAtOnceKeepTheirOrderAmongQueuedOnes) {
  constexpr std::size_t kFrames = 20000;
  std::size_t sent_at_once = 0;
  for (std::size_t index = 0; index < kFrames; ++index) {
    std::uint64_t value = index * 5;  // the caller's memory: written over once the call returns
    OutgoingMessage message = RawFrame(index, Payload{&value, sizeof value, nullptr});
    if (index % 3 != 2 && ranks_[0].transport->SendNow(1, message)) {
      ++sent_at_once;
    } else {
      message.payload = OwnedWord(value);
      ranks_[0].transport->Send(1, std::move(message), /*may_block=*/false);
    }
    value = ~std::uint64_t{0};
  }
  EXPECT_GT(sent_at_once, 0u) << "no frame was sent at once";
  ExpectWordBurst(ranks_[1].host, kFrames, 5);
  ExpectNoPeerLost();
}

// A node's handlers send without waiting for anything (an answer, a forwarded request). UCX
// queues what the peer cannot take yet (over shared memory, its receive queue holds 64 frames),
// and those frames must still go although the sender never polls: nobody waits on this side.
TEST_P(FabricInProcessTest, ABurstNobodyWaitsForArrivesWhole) {
  constexpr std::size_t kFrames = 20000;
  for (std::size_t index = 0; index < kFrames; ++index) {
    ranks_[0].transport->Send(1, RawFrame(index, OwnedWord(index * 3)), /*may_block=*/false);
  }
  ExpectWordBurst(ranks_[1].host, kFrames, 3);
  ExpectNoPeerLost();
}

// Small frames that come next in their pair's order take a quick way in (copied out of UCX's
// memory at once), the others wait their turn in the peer's queue. Mixed in a burst that nobody
// waits for, so that some small ones arrive behind queued larger ones: raw and other frames,
// with bodies and payloads on both sides of the quick way's limit, arrive once each, in order
// and intact.
TEST_P(FabricInProcessTest, SmallFramesAmongLargerOnesKeepTheirOrder) {
  constexpr std::size_t kFrames = 3000;
  const std::size_t payload_sizes[] = {8, 0, 700, 64, 511, 3000, 1};
  const std::size_t body_sizes[] = {0, 12, 40, 600};
  std::vector<std::size_t> sizes;
  for (std::size_t index = 0; index < kFrames; ++index) {
    std::size_t size = payload_sizes[index % std::size(payload_sizes)];
    auto payload = std::make_shared<std::vector<std::uint8_t>>(size);
    for (std::size_t i = 0; i < size; ++i) (*payload)[i] = Byte(index, i);
    OutgoingMessage message = RawFrame(index, Payload{payload->data(), payload->size(), payload});
    if (index % 5 == 4) message.header.type = MessageType::kPing;  // not a raw frame
    message.body = std::string(body_sizes[index % std::size(body_sizes)], 'a' + index % 26);
    ranks_[0].transport->Send(1, std::move(message), /*may_block=*/false);
    sizes.push_back(size);
  }
  std::vector<InboundMessage> got = ranks_[1].host.Take(kFrames);
  ASSERT_EQ(got.size(), kFrames) << "the burst stalled after " << ranks_[1].host.arrived();
  for (std::size_t index = 0; index < kFrames; ++index) {
    ExpectPayload(got[index], index, sizes[index]);
    EXPECT_EQ(got[index].header.type, index % 5 == 4 ? MessageType::kPing : MessageType::kRaw);
    ASSERT_EQ(got[index].body,
              std::string(body_sizes[index % std::size(body_sizes)], 'a' + index % 26))
        << index;
  }
  ExpectNoPeerLost();
}

// The express lane: small raw messages go within their call as a prefix and a raw body
// (SendRawNow) while UCX can take them at once; one too large for it, or one UCX would queue, goes
// as a raw frame. Mixed with frames queued behind each other in a burst nobody waits for, each
// arrives once, whole and in order, as the raw frame it stands for (the host here has no way of
// its own for small ones), although the sender's buffer is written over once a call returns.
TEST_P(FabricInProcessTest, SmallRawMessagesKeepTheirOrderAmongFrames) {
  constexpr std::size_t kMessages = 6000;
  // 256 is the most fabric takes within its call, below the most any transport does.
  const std::size_t sizes[] = {8,  0,    256, 257, SmallRaw::kMaxPayload, SmallRaw::kMaxPayload + 1,
                               64, 4000, 1};
  std::size_t express = 0;
  std::vector<std::uint8_t> buffer;
  for (std::size_t index = 0; index < kMessages; ++index) {
    std::size_t size = sizes[index % std::size(sizes)];
    buffer.assign(size, 0);
    for (std::size_t i = 0; i < size; ++i) buffer[i] = Byte(index, i);
    const std::int32_t tag = static_cast<std::int32_t>(index % 7);
    if (index % 4 != 3 &&
        ranks_[0].transport->SendRawNow(SmallRaw{0, 1, tag, index, buffer.data(), size})) {
      ++express;
    } else {
      auto payload = std::make_shared<std::vector<std::uint8_t>>(buffer);
      OutgoingMessage message;
      message.header.type = MessageType::kRaw;
      message.header.source = 0;
      message.header.destination = 1;
      message.body = RawBody{tag, index}.Encode();
      message.payload = Payload{payload->data(), payload->size(), payload};
      ranks_[0].transport->Send(1, std::move(message), /*may_block=*/false);
    }
    std::fill(buffer.begin(), buffer.end(), 0xEE);
  }
  EXPECT_GT(express, 0u) << "no small raw message took the express lane";
  std::vector<InboundMessage> got = ranks_[1].host.Take(kMessages);
  ASSERT_EQ(got.size(), kMessages) << "the burst stalled after " << ranks_[1].host.arrived();
  for (std::size_t index = 0; index < kMessages; ++index) {
    ASSERT_EQ(got[index].header.type, MessageType::kRaw);
    EXPECT_EQ(got[index].header.source, 0);
    std::optional<RawBody> raw = RawBody::Decode(got[index].body);
    ASSERT_TRUE(raw.has_value()) << index;
    ASSERT_EQ(raw->sequence, index) << "out of order";
    EXPECT_EQ(raw->tag, static_cast<std::int32_t>(index % 7));
    EXPECT_EQ(got[index].header.request_id, 0u);
    std::size_t size = sizes[index % std::size(sizes)];
    ASSERT_EQ(got[index].header.payload_length, size);
    for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(got[index].payload[i], Byte(index, i)) << i;
  }
  ExpectNoPeerLost();
}

TEST_P(FabricInProcessTest, AGetReadsWhatThePeerExposed) {
  std::vector<std::uint8_t> exposed(8 << 20);
  for (std::size_t i = 0; i < exposed.size(); ++i) exposed[i] = Byte(9, i);
  std::optional<std::string> key = ranks_[1].transport->Expose(exposed.data(), exposed.size());
  ASSERT_TRUE(key.has_value());
  auto base = reinterpret_cast<std::uint64_t>(exposed.data());

  // A page in the middle, then the whole range.
  for (auto [offset, size] : {std::pair<std::size_t, std::size_t>{12288, 4096}, {0, 8 << 20}}) {
    std::vector<std::uint8_t> local(size, 0);
    std::mutex mutex;
    std::condition_variable done;
    int result = -1;
    ASSERT_TRUE(ranks_[0].transport->Read(1, base + offset, *key, local.data(), size, [&](bool ok) {
      std::lock_guard lock(mutex);
      result = ok ? 1 : 0;
      done.notify_all();
    }));
    std::unique_lock lock(mutex);
    ASSERT_TRUE(done.wait_for(lock, std::chrono::seconds(10), [&] { return result >= 0; }));
    ASSERT_EQ(result, 1);
    for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(local[i], exposed[offset + i]) << i;
  }
  ExpectNoPeerLost();
}

// The send buffers of this process's connected TCP sockets (UCX's, in this test).
std::vector<int> ConnectedTcpSendBuffers() {
  std::vector<int> sizes;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    int fd = std::stoi(entry.path().filename().string());
    int type = 0;
    socklen_t length = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) continue;
    sockaddr_storage peer{};
    socklen_t peer_length = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0) continue;
    if (peer.ss_family != AF_INET && peer.ss_family != AF_INET6) continue;
    int bytes = 0;
    length = sizeof bytes;
    if (::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, &length) == 0) sizes.push_back(bytes);
  }
  return sizes;
}

// UCX's tcp sockets get the small send buffer of local pairs only in a job on one host; elsewhere
// the kernel sizes them (Linux reports twice the 256 KiB asked).
void ExpectUcxTcpSendBuffers(bool peers_on_this_host) {
  ScopedEnv tls("UCX_TLS", "tcp");
  Rank ranks[2];
  StartRanks(ranks, [peers_on_this_host](ProgressEngine& engine, RecordingHost& host, int rank) {
    return std::make_unique<FabricTransport>(engine, host, TestSecret(), rank, 2,
                                             peers_on_this_host);
  });
  SendRaw(ranks[0], 1, 1000);
  ASSERT_EQ(ranks[1].host.Take(1).size(), 1u);
  const std::vector<int> sizes = ConnectedTcpSendBuffers();
  StopRanks(ranks);
  ASSERT_FALSE(sizes.empty()) << "no connected TCP socket: UCX did not use tcp";
  for (int bytes : sizes) {
    if (peers_on_this_host) {
      EXPECT_EQ(bytes, 512 * 1024);
    } else {
      EXPECT_NE(bytes, 512 * 1024);
    }
  }
}

TEST(FabricSocketTest, AJobOnOneHostKeepsUcxTcpInFlightSmall) { ExpectUcxTcpSendBuffers(true); }

TEST(FabricSocketTest, AJobAcrossHostsLeavesUcxTcpToTheKernel) { ExpectUcxTcpSendBuffers(false); }

INSTANTIATE_TEST_SUITE_P(UcxTransports, FabricInProcessTest, ::testing::Values("tcp", "sm"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "tcp" ? "Tcp" : "SharedMemory";
                         });

}  // namespace
}  // namespace lmdx::net

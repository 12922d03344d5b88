// Transport::DropPeer on every network: once it returns, no byte of the dropped peer lands in the
// memory a receive named for its payload, even while that payload is still streaming in. A node
// fails the receive right after and its caller may free the buffer (a pair on two networks loses
// the peer on one while the other is mid-payload).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/fabric/fabric_transport.h"
#include "net/progress_engine.h"
#include "net/shm/shm_transport.h"
#include "net/tcp/tcp_transport.h"
#include "net/udp/udp_transport.h"
#include "tests/net/in_process_host.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::net {
namespace {

using lmdx::testing::ScopedEnv;

constexpr std::uint8_t kUntouched = 0xEE;

// How each network is built, and what slows its stream enough to drop the peer midway.
struct TcpNetwork {
  static constexpr std::size_t kPayload = std::size_t{256} << 20;
  static std::unique_ptr<ScopedEnv> Env() { return nullptr; }
  static std::unique_ptr<Transport> Make(ProgressEngine& engine, RecordingHost& host, int rank) {
    return std::make_unique<TcpTransport>(engine, host, TestSecret(), rank, 2, "127.0.0.1");
  }
};

struct UdpNetwork {
  // Lost datagrams wait out retransmission timeouts of 10 ms and more: the stream takes seconds.
  static constexpr std::size_t kPayload = std::size_t{64} << 20;
  static std::unique_ptr<ScopedEnv> Env() {
    return std::make_unique<ScopedEnv>("LMDX_UDP_FAULTS", "loss=5");
  }
  static std::unique_ptr<Transport> Make(ProgressEngine& engine, RecordingHost& host, int rank) {
    return std::make_unique<UdpTransport>(engine, host, TestSecret(), rank, 2, "127.0.0.1");
  }
};

struct ShmNetwork {
  static constexpr std::size_t kPayload = std::size_t{256} << 20;
  static std::unique_ptr<ScopedEnv> Env() { return nullptr; }
  static std::unique_ptr<Transport> Make(ProgressEngine& engine, RecordingHost& host, int rank) {
    return std::make_unique<ShmTransport>(engine, host, TestSecret(), rank, 2,
                                          "drop-peer-" + std::to_string(::getpid()));
  }
};

// UCX's tcp: a rendezvous fetch moves the payload piece by piece.
struct FabricNetwork {
  static constexpr std::size_t kPayload = std::size_t{256} << 20;
  static std::unique_ptr<ScopedEnv> Env() { return std::make_unique<ScopedEnv>("UCX_TLS", "tcp"); }
  static std::unique_ptr<Transport> Make(ProgressEngine& engine, RecordingHost& host, int rank) {
    return std::make_unique<FabricTransport>(engine, host, TestSecret(), rank, 2,
                                             /*peers_on_this_host=*/true);
  }
};

template <typename Network>
class DropPeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StartRanks(ranks_, [](ProgressEngine& engine, RecordingHost& host, int rank) {
      return Network::Make(engine, host, rank);
    });
  }
  void TearDown() override {
    if (sender_.joinable()) {
      ranks_[1].transport->Close();  // ends a send still waiting for room or acknowledgements
      sender_.join();
    }
    StopRanks(ranks_);
  }

  // Runs DropPeer where a node would: on rank 0's progress thread, between its polls.
  void DropRankOneAtRankZero() {
    auto dropped = std::make_shared<std::promise<void>>();
    Transport* transport = ranks_[0].transport.get();
    ranks_[0].engine.Post([transport, dropped] {
      transport->DropPeer(1, "dropped by the test");
      dropped->set_value();
    });
    ASSERT_EQ(dropped->get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  }

  std::unique_ptr<ScopedEnv> env_ = Network::Env();  // before the ranks, which read it
  // The receive's memory outlives the ranks: a failing case leaves rank 0 writing into it until
  // TearDown stops the transports.
  std::unique_ptr<std::uint8_t[]> buffer_ = std::make_unique<std::uint8_t[]>(Network::kPayload);
  InProcessRank<Transport> ranks_[2];
  std::thread sender_;
};

using Networks = ::testing::Types<TcpNetwork, UdpNetwork, ShmNetwork, FabricNetwork>;
TYPED_TEST_SUITE(DropPeerTest, Networks);

TYPED_TEST(DropPeerTest, NoByteLandsInTheReceivesMemoryOnceThePeerIsDropped) {
  constexpr std::size_t kSize = TypeParam::kPayload;
  std::uint8_t* buffer = this->buffer_.get();
  std::fill_n(buffer, kSize, std::uint8_t{0});
  this->ranks_[0].host.PostReceive(buffer, kSize);

  auto payload = std::make_shared<std::vector<std::uint8_t>>(kSize);
  for (std::size_t i = 0; i < kSize; ++i) (*payload)[i] = static_cast<std::uint8_t>(1 + i % 251);
  this->sender_ = std::thread([this, payload] {
    OutgoingMessage message;
    message.header.type = MessageType::kRaw;
    message.header.source = 1;
    message.header.destination = 0;
    message.payload = Payload{payload->data(), payload->size(), payload};
    this->ranks_[1].transport->Send(0, std::move(message), /*may_block=*/true);
  });

  // The stream has begun: the receive's memory was named for the payload, whose bytes land there.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (this->ranks_[0].host.receives_placed() == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  ASSERT_EQ(this->ranks_[0].host.receives_placed(), 1) << "the payload found no receive in 30 s";

  ASSERT_NO_FATAL_FAILURE(this->DropRankOneAtRankZero());
  ASSERT_EQ(this->ranks_[0].host.arrived(), 0u)
      << "the payload arrived whole before the drop; the test needs a slower stream";

  // The memory is the caller's again: whatever it holds now must stay, while rank 1 goes on
  // sending (or resending) the rest.
  std::fill_n(buffer, kSize, kUntouched);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::size_t changed = static_cast<std::size_t>(
      std::count_if(buffer, buffer + kSize, [](std::uint8_t b) { return b != kUntouched; }));
  EXPECT_EQ(changed, 0u) << "bytes of the dropped peer landed after DropPeer returned";
  EXPECT_EQ(this->ranks_[0].host.arrived(), 0u) << "the dropped peer's message was handed over";
}

}  // namespace
}  // namespace lmdx::net

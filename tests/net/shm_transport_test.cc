// The shared-memory transport's frame order with two transports in one process as ranks 0 and 1:
// small frames travel in cells and the others in the byte ring (net/shm/internal/shm_cells.h), and
// whatever the mix, every frame arrives once, whole, in the order it was sent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "net/completion.h"
#include "net/shm/internal/shm_cells.h"
#include "net/progress_engine.h"
#include "net/shm/shm_transport.h"
#include "net/wire.h"
#include "tests/net/in_process_host.h"

namespace lmdx::net {
namespace {

using Rank = InProcessRank<ShmTransport>;

// The body of every test frame: which sender thread and its frame's number.
struct Stamp {
  std::uint32_t thread;
  std::uint32_t number;
};

std::uint8_t PatternByte(std::uint32_t thread, std::uint32_t number, std::size_t at) {
  return static_cast<std::uint8_t>(thread * 131 + number * 7 + at * 13);
}

class ShmTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A ring of 4 KiB: large frames stream through it in many pieces and laps.
    ::setenv("LMDX_SHM_RING_KIB", "4", 1);
    const std::string job = "shm-order-" + std::to_string(::getpid());
    StartRanks(ranks_, [&](ProgressEngine& engine, RecordingHost& host, int rank) {
      return std::make_unique<ShmTransport>(engine, host, TestSecret(), rank, 2, job);
    });
    ::unsetenv("LMDX_SHM_RING_KIB");
  }
  void TearDown() override { StopRanks(ranks_); }

  // How a test sender offers each frame: to Send; to SendNow first; or, as a small raw message,
  // to SendRawNow first and then to SendNow.
  enum class Offer { kSend, kSendNow, kExpress };

  // Sends count frames from rank 0 as thread `thread`, payload sizes drawn from sizes. Offered at
  // once (kSendNow, kExpress), a frame's payload is borrowed, and must have been copied all when
  // the transport says it was sent (the buffer is scribbled over at once); Send takes the others.
  // Express frames are raw frames whose body says thread (tag) and number, as the small raw
  // message they stand for. Returns how many went at once (express ones in *express).
  std::uint32_t SendFrames(std::uint32_t thread, std::uint32_t count,
                           const std::vector<std::size_t>& sizes,
                           std::vector<std::size_t>* sent_sizes, Offer offer = Offer::kSend,
                           std::uint32_t* express = nullptr) {
    std::mt19937 random(thread + 1);
    std::uint32_t sent_now = 0;
    for (std::uint32_t number = 0; number < count; ++number) {
      std::size_t size = sizes[random() % sizes.size()];
      auto payload = std::make_shared<std::vector<std::uint8_t>>(size);
      for (std::size_t at = 0; at < size; ++at) (*payload)[at] = PatternByte(thread, number, at);
      OutgoingMessage message;
      message.header.type = MessageType::kRaw;
      message.header.source = 0;
      message.header.destination = 1;
      if (offer == Offer::kExpress) {
        message.body = RawBody{static_cast<std::int32_t>(thread), number}.Encode();
      } else {
        Stamp stamp{thread, number};
        message.body.assign(reinterpret_cast<const char*>(&stamp), sizeof stamp);
      }
      sent_sizes->push_back(size);
      if (offer == Offer::kExpress &&
          ranks_[0].transport->SendRawNow(
              SmallRaw{0, 1, static_cast<std::int32_t>(thread), number, payload->data(), size})) {
        if (size > 0) std::memset(payload->data(), 0xEE, size);
        ++sent_now;
        if (express != nullptr) ++*express;
        continue;
      }
      if (offer != Offer::kSend) {
        message.payload = Payload{payload->data(), size, nullptr};
        if (ranks_[0].transport->SendNow(1, message)) {
          if (size > 0) std::memset(payload->data(), 0xEE, size);
          ++sent_now;
          continue;
        }
      }
      message.payload = Payload{payload->data(), size, payload};
      ranks_[0].transport->Send(1, std::move(message), /*may_block=*/true);
    }
    return sent_now;
  }

  // kThreads threads send kFrames frames each at once (sizes drawn from sizes, each thread
  // offering its frames as offer_of says); each thread's frames must arrive in order.
  template <typename OfferOf>
  void SendFromThreadsAndExpectOrder(std::uint32_t threads, std::uint32_t frames,
                                     const std::vector<std::size_t>& sizes, OfferOf offer_of) {
    std::vector<std::vector<std::size_t>> sent(threads);
    std::vector<std::thread> senders;
    for (std::uint32_t thread = 0; thread < threads; ++thread) {
      senders.emplace_back(
          [&, thread] { SendFrames(thread, frames, sizes, &sent[thread], offer_of(thread)); });
    }
    for (std::thread& sender : senders) sender.join();
    std::vector<InboundMessage> got = ranks_[1].host.Take(threads * frames);
    ASSERT_EQ(got.size(), threads * frames) << ranks_[1].host.lost();
    ExpectInOrder(got, sent);
  }

  // Checks that the frames of each sender thread arrived in order, whole and unchanged.
  static void ExpectInOrder(const std::vector<InboundMessage>& got,
                            const std::vector<std::vector<std::size_t>>& sent_sizes) {
    std::vector<std::uint32_t> next(sent_sizes.size(), 0);
    for (const InboundMessage& message : got) {
      Stamp stamp;
      if (auto raw = RawBody::Decode(message.body)) {
        ASSERT_EQ(message.header.type, MessageType::kRaw);
        stamp =
            Stamp{static_cast<std::uint32_t>(raw->tag), static_cast<std::uint32_t>(raw->sequence)};
      } else {
        ASSERT_EQ(message.body.size(), sizeof(Stamp));
        std::memcpy(&stamp, message.body.data(), sizeof stamp);
      }
      ASSERT_LT(stamp.thread, sent_sizes.size());
      ASSERT_EQ(stamp.number, next[stamp.thread]) << "thread " << stamp.thread;
      std::size_t size = sent_sizes[stamp.thread][stamp.number];
      ASSERT_EQ(message.header.payload_length, size) << "frame " << stamp.number;
      for (std::size_t at = 0; at < size; ++at) {
        ASSERT_EQ(message.payload[at], PatternByte(stamp.thread, stamp.number, at))
            << "frame " << stamp.number << " byte " << at;
      }
      ++next[stamp.thread];
    }
    for (std::size_t thread = 0; thread < sent_sizes.size(); ++thread) {
      EXPECT_EQ(next[thread], sent_sizes[thread].size()) << "thread " << thread;
    }
  }

  Rank ranks_[2];
};

constexpr std::size_t kCellPayload =
    internal::CellRing::kFrameBytes - kFrameHeaderSize - sizeof(Stamp);
// The largest payload of a frame that spans cells rather than taking the ring.
constexpr std::size_t kSpanPayload =
    internal::CellRing::kSpanBytes - kFrameHeaderSize - sizeof(Stamp);

// Frames of one cell, of spans of cells (just over a cell, 500 bytes, the largest span) and of
// the ring (just over a span, many times the ring): cells must never overtake a frame still in
// the ring, nor a frame in the ring cells.
TEST_F(ShmTransportTest, CellsAndTheRingKeepTheOrderOfAMix) {
  std::vector<std::size_t> sizes = {
      0, 8, kCellPayload, kCellPayload + 1, 500, kSpanPayload, kSpanPayload + 1, 3000, 70000};
  std::vector<std::vector<std::size_t>> sent(1);
  SendFrames(0, 3000, sizes, &sent[0]);
  std::vector<InboundMessage> got = ranks_[1].host.Take(3000);
  ASSERT_EQ(got.size(), 3000u) << ranks_[1].host.lost();
  ExpectInOrder(got, sent);
}

// Bursts of small frames only: the cells fill and wrap many times over, and a full set of cells
// sends the next frames through the ring.
TEST_F(ShmTransportTest, SmallFramesWrapTheCellsManyTimes) {
  std::vector<std::vector<std::size_t>> sent(1);
  SendFrames(0, 50 * internal::CellRing::kCells, {0, 1, 8, kCellPayload, 300}, &sent[0]);
  std::size_t count = sent[0].size();
  std::vector<InboundMessage> got = ranks_[1].host.Take(count);
  ASSERT_EQ(got.size(), count) << ranks_[1].host.lost();
  ExpectInOrder(got, sent);
}

// Several threads send at once: each thread's frames keep their order.
TEST_F(ShmTransportTest, ConcurrentSendersEachKeepTheirOrder) {
  SendFromThreadsAndExpectOrder(3, 2000, {0, 8, kCellPayload, 200, kSpanPayload, 5000},
                                [](std::uint32_t) { return Offer::kSend; });
}

// Frames written at once by their sender (SendNow, for borrowed memory) mixed with frames of
// other threads that queue: SendNow writes only when nothing is queued before it, so each
// thread's order still holds, and what it wrote is a copy (the sender reuses its buffer at once).
TEST_F(ShmTransportTest, FramesSentAtOnceKeepTheirOrderAmongQueuedOnes) {
  // A first frame sets the connection up; once it has arrived the connection is idle, and a
  // small frame offered to SendNow must go at once and arrive as it was sent, although its
  // buffer was written over as soon as SendNow returned.
  std::vector<std::vector<std::size_t>> first(1);
  SendFrames(0, 1, {8}, &first[0]);
  ExpectInOrder(ranks_[1].host.Take(1), first);
  std::vector<std::vector<std::size_t>> at_once(1);
  EXPECT_EQ(SendFrames(0, 1, {kCellPayload}, &at_once[0], Offer::kSendNow), 1u)
      << "an idle connection did not take a small frame at once";
  ExpectInOrder(ranks_[1].host.Take(1), at_once);

  // Then three threads at once, two of them offering every frame to SendNow (most find another
  // thread's frames queued or the writer busy, and queue theirs).
  SendFromThreadsAndExpectOrder(
      3, 6000, {0, 8, kCellPayload, 200, kSpanPayload, 5000, 70000},
      [](std::uint32_t thread) { return thread != 2 ? Offer::kSendNow : Offer::kSend; });
}

constexpr std::size_t kSmallRawPayload = internal::SmallRawCell::kMaxPayload;

// The express lane: an idle connection takes a small raw message into cells at once, and its
// receiver gets the raw frame it stands for (the host here has no way of its own for it); a
// message one byte too large for a span of cells is refused, and nothing of it arrives.
TEST_F(ShmTransportTest, AnIdleConnectionTakesASmallRawMessageAtOnce) {
  std::vector<std::vector<std::size_t>> first(1);
  SendFrames(0, 1, {8}, &first[0]);
  ExpectInOrder(ranks_[1].host.Take(1), first);

  std::vector<std::uint8_t> too_large(kSmallRawPayload + 1, 7);
  EXPECT_FALSE(
      ranks_[0].transport->SendRawNow(SmallRaw{0, 1, 5, 0, too_large.data(), too_large.size()}));
  // The first frame went out once the connection was set up, written by the progress thread,
  // which may still be finishing that batch when the frame arrives (seen under TSan): a probe
  // offered until it goes at once waits for the connection to be idle, as the test means it.
  std::uint8_t probe = 1;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ranks_[0].transport->SendRawNow(SmallRaw{0, 1, 9, 0, &probe, 1})) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the connection never became idle";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(ranks_[1].host.Take(1).size(), 1u) << ranks_[1].host.lost();
  std::vector<std::vector<std::size_t>> express(1);
  std::uint32_t went_express = 0;
  SendFrames(0, 3, {8, kSmallRawPayload}, &express[0], Offer::kExpress, &went_express);
  EXPECT_EQ(went_express, 3u) << "an idle connection did not take small raw messages at once";
  std::vector<InboundMessage> got = ranks_[1].host.Take(3);
  ASSERT_EQ(got.size(), 3u) << ranks_[1].host.lost();
  EXPECT_EQ(got[0].header.source, 0);
  EXPECT_EQ(got[0].header.destination, 1);
  ExpectInOrder(got, express);
}

// Small raw messages sent on the express lane among raw frames of every size that fall back to a
// frame (no free cell, bytes of the ring still unread, too large): none overtakes another.
TEST_F(ShmTransportTest, SmallRawMessagesKeepTheirOrderAmongFrames) {
  std::vector<std::size_t> sizes = {0,    8,    kSmallRawPayload, kSmallRawPayload + 1, 100, 500,
                                    3000, 70000};
  std::vector<std::vector<std::size_t>> sent(1);
  std::uint32_t went_express = 0;
  SendFrames(0, 3000, sizes, &sent[0], Offer::kExpress, &went_express);
  std::vector<InboundMessage> got = ranks_[1].host.Take(3000);
  ASSERT_EQ(got.size(), 3000u) << ranks_[1].host.lost();
  ExpectInOrder(got, sent);
  EXPECT_GT(went_express, 0u);
}

// Threads on the express lane beside a thread that queues frames: each thread's order holds.
TEST_F(ShmTransportTest, ConcurrentExpressSendersEachKeepTheirOrder) {
  SendFromThreadsAndExpectOrder(
      3, 4000, {0, 8, kSmallRawPayload, 200, 700, 5000},
      [](std::uint32_t thread) { return thread != 2 ? Offer::kExpress : Offer::kSend; });
}

// A raw frame from `from` to `to` whose body says who sent it.
OutgoingMessage FrameFrom(int from, int to) {
  OutgoingMessage message;
  message.header.type = MessageType::kRaw;
  message.header.source = from;
  message.header.destination = to;
  Stamp stamp{static_cast<std::uint32_t>(from), 0};
  message.body.assign(reinterpret_cast<const char*>(&stamp), sizeof stamp);
  return message;
}

// The engine polls under its dispatch lock and arms under its pollers' lock, so a poll may be
// midway through the transport's connections when a new one joins them and another thread arms.
// The list that poll walks must outlive it. Here rank 0's progress thread is held inside a
// delivery in the middle of its walk over two connections, while rank 0 connects to rank 2 and a
// wait on another thread arms the pollers (a list freed under the walk is a use after free,
// which a sanitizer build stops on). Then every frame is delivered once, and the new connection
// carries frames both ways.
TEST(ShmConnectionsTest, AConnectionJoinsWhileAPollIsMidwayAndAThreadArms) {
  constexpr int kRanks = 4;
  ::setenv("LMDX_SHM_RING_KIB", "4", 1);
  InProcessRank<ShmTransport> ranks[kRanks];
  const std::string job = "shm-join-" + std::to_string(::getpid());
  StartRanks(ranks, [&](ProgressEngine& engine, RecordingHost& host, int rank) {
    return std::make_unique<ShmTransport>(engine, host, TestSecret(), rank, kRanks, job);
  });
  ::unsetenv("LMDX_SHM_RING_KIB");
  ProgressEngine& engine = ranks[0].engine;
  RecordingHost& host = ranks[0].host;

  // Ranks 1 and 3 connect: rank 0 walks a list of two.
  for (int peer : {1, 3}) ranks[peer].transport->Send(0, FrameFrom(peer, 0), /*may_block=*/true);
  ASSERT_EQ(host.Take(2).size(), 2u) << host.lost();

  // A wait that got its small answer leaves the rings disarmed for a window (a long one here),
  // so the next frames are found by a walk over the list, not by a ring's signal.
  engine.SetDriveBudget(10'000'000);
  Completion answered;
  answered.SetWaitsInBursts();
  answered.Signal();
  engine.DriveBriefly(answered);
  host.HoldNextMessage();
  for (int peer : {1, 3}) ranks[peer].transport->Send(0, FrameFrom(peer, 0), /*may_block=*/true);
  engine.Post([] {});  // the progress thread wakes, and its dispatch polls the rings
  ASSERT_TRUE(host.WaitUntilHeld()) << "rank 0 never polled the frames of ranks 1 and 3";

  ranks[0].transport->Send(2, FrameFrom(0, 2), /*may_block=*/true);
  engine.SetDriveBudget(1000);
  Completion never_done;
  engine.DriveBriefly(never_done);  // the dispatch lock is held: it arms, then gives up
  host.ReleaseHeld();

  ranks[2].transport->Send(0, FrameFrom(2, 0), /*may_block=*/true);
  std::vector<InboundMessage> got = host.Take(3);
  ASSERT_EQ(got.size(), 3u) << host.lost();
  std::vector<int> frames_from(kRanks, 0);
  for (const InboundMessage& message : got) ++frames_from.at(message.header.source);
  EXPECT_EQ(frames_from, (std::vector<int>{0, 1, 1, 1}));
  std::vector<InboundMessage> at_two = ranks[2].host.Take(1);
  ASSERT_EQ(at_two.size(), 1u) << ranks[2].host.lost();
  EXPECT_EQ(at_two[0].header.source, 0);
  StopRanks(ranks);
}

}  // namespace
}  // namespace lmdx::net

// The udp transport's reliability alone: two ReliableChannels joined by a simulated link that
// loses, duplicates, delays and reorders datagrams, with simulated time. Every segment must arrive
// once and in order, whatever the link does.
#include "net/udp/internal/reliable_channel.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "base/error.h"
#include "net/udp/internal/udp_faults.h"

namespace lmdx::net::internal {
namespace {

using Segment = ReliableChannel::Segment;

Segment Numbered(std::uint32_t n) {
  auto bytes = std::make_shared<std::vector<std::uint8_t>>(sizeof n);
  std::memcpy(bytes->data(), &n, sizeof n);
  return bytes;
}

std::uint32_t NumberOf(std::span<const std::uint8_t> bytes) {
  std::uint32_t n = 0;
  std::memcpy(&n, bytes.data(), sizeof n);
  return n;
}

struct LinkFaults {
  double loss = 0;
  double duplicate = 0;
  int max_delay_ms = 0;  // each datagram takes 0..max ms: a spread of delays reorders them
};

// Two endpoints and the datagrams between them. Each endpoint behaves as the udp transport does:
// data carries acknowledgements, acknowledgements go alone when due, timeouts resend.
class SimulatedLink {
 public:
  SimulatedLink(const ReliabilitySettings& settings, LinkFaults faults, std::uint64_t seed,
                std::uint32_t first_sequence = 0)
      : faults_(faults), random_(seed) {
    ends_[0].channel = std::make_unique<ReliableChannel>(settings, first_sequence);
    ends_[1].channel = std::make_unique<ReliableChannel>(settings, first_sequence);
  }

  // Sends `count` numbered segments from end 0 to end 1 and runs until all are acknowledged or
  // `limit_ms` of simulated time passed. Returns what end 1 delivered, in order.
  std::vector<std::uint32_t> Transfer(std::uint32_t count, std::int64_t limit_ms) {
    std::uint32_t next = 0;
    for (now_ = 0; now_ < limit_ms; ++now_) {
      ReliableChannel& sender = *ends_[0].channel;
      while (next < count && sender.CanSend()) {
        Segment segment = Numbered(next++);
        std::uint32_t sequence = sender.Record(segment, now_);
        Transmit(0, sequence, segment);
      }
      DeliverDue();
      for (int end = 0; end < 2; ++end) {
        ReliableChannel& channel = *ends_[end].channel;
        std::vector<std::uint32_t> resend;
        channel.TakeExpired(now_, &resend);
        for (std::uint32_t sequence : resend) Transmit(end, sequence, channel.Stored(sequence));
        if (channel.AckDue(now_)) Transmit(end, 0, nullptr);
      }
      if (next == count && sender.InFlight() == 0) break;
    }
    return delivered_;
  }

  ReliableChannel& end(int index) { return *ends_[index].channel; }
  int duplicates() const { return duplicates_; }

 private:
  struct Datagram {
    int to;
    std::int64_t arrives;
    std::uint32_t sequence, cumulative, selective, room;
    std::optional<std::uint32_t> echo;
    Segment segment;  // null: an acknowledgement alone
  };
  struct End {
    std::unique_ptr<ReliableChannel> channel;
  };

  void Transmit(int from, std::uint32_t sequence, Segment segment) {
    ReliableChannel& channel = *ends_[from].channel;
    Datagram datagram{1 - from,
                      0,
                      sequence,
                      channel.CumulativeAck(),
                      channel.SelectiveAck(),
                      channel.Room(),
                      channel.TakeEcho(),
                      std::move(segment)};
    channel.AckSent();
    std::uniform_real_distribution<double> chance(0, 1);
    if (chance(random_) < faults_.loss) return;
    int copies = chance(random_) < faults_.duplicate ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
      datagram.arrives =
          now_ + std::uniform_int_distribution<int>(0, faults_.max_delay_ms)(random_);
      in_flight_.push_back(datagram);
    }
  }

  void DeliverDue() {
    std::vector<Datagram> due;
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      if (it->arrives <= now_) {
        due.push_back(*it);
        it = in_flight_.erase(it);
      } else {
        ++it;
      }
    }
    for (const Datagram& datagram : due) {
      ReliableChannel& channel = *ends_[datagram.to].channel;
      std::vector<std::uint32_t> resend;
      channel.OnAcknowledgement(datagram.cumulative, datagram.selective, datagram.room,
                                datagram.echo, now_, &resend);
      for (std::uint32_t sequence : resend) {
        Transmit(datagram.to, sequence, channel.Stored(sequence));
      }
      if (!datagram.segment) continue;
      std::vector<ReliableChannel::Received> ready;
      if (channel.OnData(datagram.sequence, *datagram.segment, now_, &ready) ==
          ReliableChannel::Arrival::kDuplicate) {
        ++duplicates_;
      }
      for (const auto& received : ready) delivered_.push_back(NumberOf(received.bytes));
    }
  }

  LinkFaults faults_;
  std::mt19937_64 random_;
  End ends_[2];
  std::vector<Datagram> in_flight_;
  std::vector<std::uint32_t> delivered_;
  std::int64_t now_ = 0;
  int duplicates_ = 0;
};

std::vector<std::uint32_t> Sequence(std::uint32_t count) {
  std::vector<std::uint32_t> numbers(count);
  for (std::uint32_t i = 0; i < count; ++i) numbers[i] = i;
  return numbers;
}

TEST(ReliableChannelTest, PerfectLinkDeliversInOrderWithoutResending) {
  SimulatedLink link(ReliabilitySettings{}, LinkFaults{0, 0, 1}, 1);
  EXPECT_EQ(link.Transfer(5000, 60000), Sequence(5000));
  EXPECT_EQ(link.end(0).retransmitted(), 0u);
}

// The test: 5% of datagrams lost (data and acknowledgements alike), with duplicates and
// reordering on top, over several seeds.
TEST(ReliableChannelTest, EverySegmentOnceAndInOrderUnderLossDuplicationAndReordering) {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    SimulatedLink link(ReliabilitySettings{}, LinkFaults{0.05, 0.02, 6}, seed);
    std::vector<std::uint32_t> got = link.Transfer(20000, 600000);
    ASSERT_EQ(got.size(), 20000u) << "seed " << seed;
    EXPECT_EQ(got, Sequence(20000)) << "seed " << seed;
    // The link really was bad: segments went again, and copies arrived and were dropped.
    EXPECT_GT(link.end(0).retransmitted(), 500u) << "seed " << seed;
    EXPECT_GT(link.duplicates(), 0) << "seed " << seed;
  }
}

TEST(ReliableChannelTest, SurvivesHeavyLoss) {
  SimulatedLink link(ReliabilitySettings{}, LinkFaults{0.3, 0, 3}, 42);
  EXPECT_EQ(link.Transfer(3000, 3600000), Sequence(3000));
}

TEST(ReliableChannelTest, SequenceNumbersWrapAround) {
  SimulatedLink link(ReliabilitySettings{}, LinkFaults{0.05, 0.01, 4}, 7, 0xffffffffu - 3000);
  EXPECT_EQ(link.Transfer(8000, 600000), Sequence(8000));
}

TEST(ReliableChannelTest, WindowBoundsWhatIsInFlight) {
  ReliabilitySettings settings;
  settings.window = 8;
  ReliableChannel channel(settings);
  int sent = 0;
  while (channel.CanSend()) {
    channel.Record(Numbered(static_cast<std::uint32_t>(sent)), 0);
    ++sent;
  }
  EXPECT_EQ(sent, 8);
  // Three arrive; the window opens by three.
  std::vector<std::uint32_t> resend;
  channel.OnAcknowledgement(3, 0, 8, std::nullopt, 1, &resend);
  EXPECT_EQ(channel.InFlight(), 5u);
  EXPECT_TRUE(channel.CanSend());
  // The receiver has room for only five out of order: no more may go.
  channel.OnAcknowledgement(3, 0, 5, std::nullopt, 1, &resend);
  EXPECT_FALSE(channel.CanSend());
}

TEST(ReliableChannelTest, ReceiverDropsDuplicatesAndSegmentsBeyondItsWindow) {
  ReliabilitySettings settings;
  settings.window = 4;
  ReliableChannel channel(settings);
  // The receiver's buffers: in-order segments are handed on where they lie.
  Segment zero = Numbered(0);
  Segment one = Numbered(1);
  std::vector<ReliableChannel::Received> ready;
  EXPECT_EQ(channel.OnData(0, *zero, 0, &ready), ReliableChannel::Arrival::kDelivered);
  EXPECT_EQ(channel.OnData(0, *zero, 0, &ready), ReliableChannel::Arrival::kDuplicate);
  {
    // A segment that waits behind a gap is copied: its buffer may be gone when it is handed on.
    Segment two = Numbered(2);
    EXPECT_EQ(channel.OnData(2, *two, 0, &ready), ReliableChannel::Arrival::kHeld);
    EXPECT_EQ(channel.OnData(2, *two, 0, &ready), ReliableChannel::Arrival::kDuplicate);
    EXPECT_EQ(channel.OnData(5, *Numbered(5), 0, &ready), ReliableChannel::Arrival::kOutOfWindow);
  }
  EXPECT_EQ(channel.CumulativeAck(), 1u);
  EXPECT_EQ(channel.SelectiveAck(), 0b1u);  // segment 2 = cumulative + 1 + bit 0
  EXPECT_TRUE(channel.AckDue(0));           // a gap is reported at once
  EXPECT_EQ(channel.OnData(1, *one, 0, &ready), ReliableChannel::Arrival::kDelivered);
  ASSERT_EQ(ready.size(), 3u);
  EXPECT_EQ(NumberOf(ready[0].bytes), 0u);
  EXPECT_EQ(ready[0].bytes.data(), zero->data());
  EXPECT_EQ(NumberOf(ready[1].bytes), 1u);
  EXPECT_EQ(NumberOf(ready[2].bytes), 2u);
  EXPECT_NE(ready[2].kept, nullptr);
  EXPECT_EQ(channel.CumulativeAck(), 3u);
}

TEST(ReliableChannelTest, TimeoutResendsTheOldestAndBacksOff) {
  ReliabilitySettings settings;
  settings.min_rto_ms = 10;
  ReliableChannel channel(settings);
  channel.Record(Numbered(0), 0);
  channel.Record(Numbered(1), 0);
  std::vector<std::uint32_t> resend;
  // Before the first round trip is measured, the timeout is 200 ms.
  channel.TakeExpired(199, &resend);
  EXPECT_TRUE(resend.empty());
  channel.TakeExpired(200, &resend);
  EXPECT_EQ(resend, std::vector<std::uint32_t>{0});  // only the oldest goes again
  resend.clear();
  // Segment 0's next timeout is twice the first (400 ms, at 600); segment 1 was postponed by one
  // timeout (to 400). At 500 only segment 1 goes.
  channel.TakeExpired(500, &resend);
  EXPECT_EQ(resend, std::vector<std::uint32_t>{1});
}

TEST(ReliableChannelTest, GapBehindThreeLaterArrivalsIsResentAtOnce) {
  ReliableChannel channel(ReliabilitySettings{});
  for (std::uint32_t n = 0; n < 6; ++n) channel.Record(Numbered(n), 0);
  std::vector<std::uint32_t> resend;
  // Segment 1 missing; 2 and 3 arrived: could be reordering, wait.
  channel.OnAcknowledgement(1, 0b11, 100, std::nullopt, 5, &resend);
  EXPECT_TRUE(resend.empty());
  // 4 arrived too: three later segments, 1 is lost.
  channel.OnAcknowledgement(1, 0b111, 100, std::nullopt, 5, &resend);
  EXPECT_EQ(resend, std::vector<std::uint32_t>{1});
}

// A sender that lent its memory (net/udp/udp_transport.h) is freed when its last segment and every
// one before it are acknowledged; a selective acknowledgement of the last alone is not enough.
TEST(ReliableChannelTest, AcknowledgedThroughWaitsForEveryEarlierSegment) {
  ReliableChannel channel(ReliabilitySettings{}, 0xffffffffu - 1);  // across the wrap
  for (int n = 0; n < 4; ++n) channel.Record(Numbered(static_cast<std::uint32_t>(n)), 0);
  const std::uint32_t first = 0xffffffffu - 1;
  std::vector<std::uint32_t> resend;
  EXPECT_FALSE(channel.AcknowledgedThrough(first));
  // The second and third arrived, the first not yet.
  channel.OnAcknowledgement(first, 0b11, 100, std::nullopt, 1, &resend);
  EXPECT_FALSE(channel.AcknowledgedThrough(first + 2));
  channel.OnAcknowledgement(first + 3, 0, 100, std::nullopt, 2, &resend);
  EXPECT_TRUE(channel.AcknowledgedThrough(first + 2));
  EXPECT_FALSE(channel.AcknowledgedThrough(first + 3));
  channel.OnAcknowledgement(first + 4, 0, 100, std::nullopt, 3, &resend);
  EXPECT_TRUE(channel.AcknowledgedThrough(first + 3));
}

// The segment a lending sender waits on is acknowledged at once, not after the delay.
TEST(ReliableChannelTest, AnAcknowledgementAskedForIsDueAtOnce) {
  ReliabilitySettings settings;
  settings.ack_every = 16;
  settings.ack_delay_ms = 4;
  ReliableChannel channel(settings);
  std::vector<ReliableChannel::Received> ready;
  Segment zero = Numbered(0);
  channel.OnData(0, *zero, 10, &ready);
  EXPECT_FALSE(channel.AckDue(10));
  EXPECT_EQ(channel.NextDeadline(), 14);
  channel.AcknowledgeAtOnce();
  EXPECT_TRUE(channel.AckDue(10));
  EXPECT_EQ(channel.NextDeadline(), 0);
  channel.AckSent();
  EXPECT_FALSE(channel.AckDue(10));
}

TEST(ReliableChannelTest, RoundTripSamplesComeFromTheEchoedSegment) {
  ReliabilitySettings settings;
  settings.min_rto_ms = 1;
  ReliableChannel channel(settings);
  channel.Record(Numbered(0), 0);
  channel.Record(Numbered(1), 0);
  std::vector<std::uint32_t> resend;
  // Segment 0 arrived after 500 ms (it waited behind nothing visible to the sender) but the
  // echo names segment 1, answered 2 ms after it left: the estimate follows the echo.
  channel.OnAcknowledgement(2, 0, 100, 1u, 2, &resend);
  EXPECT_LE(channel.RtoMs(), 10);
}

TEST(ReliableChannelTest, PeerThatAcknowledgesNothingIsSilentAfterGiveUp) {
  ReliabilitySettings settings;
  settings.give_up_ms = 1000;
  ReliableChannel channel(settings);
  channel.Record(Numbered(0), 0);
  EXPECT_FALSE(channel.PeerSilent(999));
  EXPECT_TRUE(channel.PeerSilent(1001));
}

TEST(ReliableChannelTest, AcknowledgementOfUnsentSegmentsIsIgnored) {
  ReliableChannel channel(ReliabilitySettings{});
  channel.Record(Numbered(0), 0);
  std::vector<std::uint32_t> resend;
  channel.OnAcknowledgement(50, 0, 100, std::nullopt, 1, &resend);
  EXPECT_EQ(channel.InFlight(), 1u);
}

TEST(UdpFaultsTest, ParsesPercentagesAndRefusesNonsense) {
  UdpFaults faults = UdpFaults::Parse("loss=5,duplicate=1.5,reorder=2,seed=3", 0);
  EXPECT_TRUE(faults.any());
  EXPECT_EQ(faults.Describe(), "loss 5.0%, duplicate 1.5%, reorder 2.0%");
  EXPECT_FALSE(UdpFaults::Parse("", 0).any());
  EXPECT_THROW(UdpFaults::Parse("loss=120", 0), Error);
  EXPECT_THROW(UdpFaults::Parse("jitter=3", 0), Error);
  EXPECT_THROW(UdpFaults::Parse("loss=", 0), Error);
}

TEST(UdpFaultsTest, RefusesAboutTheFractionOfSplicesAsked) {
  UdpFaults faults = UdpFaults::Parse("splice=20,seed=5", 0);
  EXPECT_TRUE(faults.any());
  EXPECT_EQ(faults.Describe(), "loss 0.0%, duplicate 0.0%, reorder 0.0%, splices refused 20.0%");
  int refused = 0;
  for (int i = 0; i < 100000; ++i) refused += faults.RefuseSplice() ? 1 : 0;
  EXPECT_GT(refused, 19000);
  EXPECT_LT(refused, 21000);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(faults.Next(), UdpFaults::Action::kSend);
  EXPECT_FALSE(UdpFaults::Parse("loss=5", 0).RefuseSplice());
}

TEST(UdpFaultsTest, DropsAboutTheFractionAsked) {
  UdpFaults faults = UdpFaults::Parse("loss=5,seed=11", 0);
  int dropped = 0;
  for (int i = 0; i < 100000; ++i) dropped += faults.Next() == UdpFaults::Action::kDrop ? 1 : 0;
  EXPECT_GT(dropped, 4500);
  EXPECT_LT(dropped, 5500);
}

}  // namespace
}  // namespace lmdx::net::internal

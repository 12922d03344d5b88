#ifndef LMDX_NET_UDP_INTERNAL_RELIABLE_CHANNEL_H_
#define LMDX_NET_UDP_INTERNAL_RELIABLE_CHANNEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace lmdx::net::internal {

// How a reliable channel paces itself. The defaults suit a LAN and loopback; tests shrink them.
struct ReliabilitySettings {
  // Segments in flight, unacknowledged, at most; also what a receiver holds out of order.
  std::uint32_t window = 128;
  // Retransmission timeouts: estimated from round trips (Jacobson/Karels), kept in these bounds.
  // The floor is well above a loopback round trip because the peer's progress thread may wait
  // for a core on a busy host before it can acknowledge anything.
  std::int64_t min_rto_ms = 10;
  std::int64_t max_rto_ms = 2000;
  // A receiver acknowledges at once after this many unacknowledged segments, else after the
  // delay (when no frame going back has carried the acknowledgement first).
  std::uint32_t ack_every = 16;
  std::int64_t ack_delay_ms = 4;
  // A segment unacknowledged for this long means the peer is gone.
  std::int64_t give_up_ms = 20000;
};

// One direction pair of a reliable, ordered channel over datagrams, as TreadMarks ran over UDP:
// sequence numbers, cumulative acknowledgements with a selective bitmap, retransmission with
// adaptive timeouts, duplicate suppression and a window for flow control. It owns no socket and
// reads no clock: the transport passes the time in and sends what it is told to, so the logic is
// tested alone over a simulated lossy link (tests/net/reliable_channel_test.cc).
//
// Sequence numbers are 32 bits and compared modulo 2^32, so a channel may carry any number of
// segments.
class ReliableChannel {
 public:
  using Segment = std::shared_ptr<const std::vector<std::uint8_t>>;

  // Both ends of a pair must start from the same first sequence number (0 in the transport;
  // tests start near 2^32 to cross the wrap).
  explicit ReliableChannel(const ReliabilitySettings& settings, std::uint32_t first_sequence = 0)
      : settings_(settings), next_sequence_(first_sequence), next_expected_(first_sequence) {}

  // --- Sending ---
  // Whether another segment may leave now: fewer than the window are in flight, and the peer
  // said it has room.
  bool CanSend() const;
  // Numbers the segment and keeps it until acknowledged; the caller sends it.
  std::uint32_t Record(Segment segment, std::int64_t now_ms);
  Segment Stored(std::uint32_t sequence) const;
  // Acknowledgement fields of any datagram from the peer: every segment before `cumulative` has
  // arrived, and so has cumulative + 1 + i for each bit i of `selective`. The peer can take
  // `room` more segments. Segments the bitmap shows missing behind several later arrivals go
  // into *resend at once (fast retransmission), at most once per two round trips.
  // `echo`, when set, names the segment whose arrival the peer answers first: its round trip
  // is the sample for the timeout (a cumulative acknowledgement may come long after a segment
  // arrived, when it waited behind a gap).
  void OnAcknowledgement(std::uint32_t cumulative, std::uint32_t selective, std::uint32_t room,
                         const std::optional<std::uint32_t>& echo, std::int64_t now_ms,
                         std::vector<std::uint32_t>* resend);
  // Segments whose timeout expired; each one's timeout doubles.
  void TakeExpired(std::int64_t now_ms, std::vector<std::uint32_t>* resend);
  // The oldest unacknowledged segment has waited longer than give_up_ms.
  bool PeerSilent(std::int64_t now_ms) const;
  std::size_t InFlight() const { return unacked_.size(); }
  // Every segment recorded up to and including `sequence` is acknowledged: none is kept now.
  bool AcknowledgedThrough(std::uint32_t sequence) const;

  // --- Receiving ---
  enum class Arrival {
    kDelivered,   // in order: it and any segments it unblocked went to *ready
    kHeld,        // ahead of a gap: kept until the gap fills
    kDuplicate,   // seen before: dropped
    kOutOfWindow  // too far ahead to hold: dropped (the sender resends it)
  };
  // A segment handed on in order: its bytes lie in the caller's own buffer when it came in order
  // (valid as long as that buffer), or in a copy the channel kept while it waited behind a gap.
  struct Received {
    Segment kept;
    std::span<const std::uint8_t> bytes;
  };
  // bytes are copied only when the segment must wait for an earlier one.
  Arrival OnData(std::uint32_t sequence, std::span<const std::uint8_t> bytes, std::int64_t now_ms,
                 std::vector<Received>* ready);
  // What the next datagram to the peer says of what arrived.
  std::uint32_t CumulativeAck() const { return next_expected_; }
  std::uint32_t SelectiveAck() const;
  std::uint32_t Room() const;
  // The segment to echo in the next datagram: the newest that arrived, once.
  std::optional<std::uint32_t> TakeEcho();
  // An acknowledgement should go now (enough segments, a gap to report, or the delay passed).
  bool AckDue(std::int64_t now_ms) const;
  // The peer is owed an acknowledgement, now or after the delay.
  bool AckOwed() const { return unacked_received_ > 0 || ack_now_; }
  // Any datagram to the peer carried the current acknowledgement.
  void AckSent();
  // The peer waits for this acknowledgement (a sender whose buffer is lent until then): it is
  // due at once, not after the delay.
  void AcknowledgeAtOnce() { ack_now_ = true; }

  // The earliest time the channel needs attention (a timeout or a delayed acknowledgement), or
  // -1 when it needs none.
  std::int64_t NextDeadline() const;

  // Round-trip estimate, for statistics and tests.
  std::int64_t RtoMs() const { return rto_ms_; }
  std::uint64_t retransmitted() const { return retransmitted_; }

 private:
  struct Unacked {
    Segment segment;
    std::int64_t sent_ms = 0;      // first sent
    std::int64_t deadline_ms = 0;  // next retransmission
    std::int64_t last_sent_ms = 0;
    std::int64_t backoff_ms = 0;
    bool resent = false;  // Karn: no round-trip sample from a resent segment
  };
  void Sample(std::int64_t rtt_ms);
  void Resend(std::uint32_t sequence, Unacked& entry, std::int64_t now_ms,
              std::vector<std::uint32_t>* resend);

  ReliabilitySettings settings_;
  // Sender.
  std::uint32_t next_sequence_;
  std::map<std::uint32_t, Unacked, bool (*)(std::uint32_t, std::uint32_t)> unacked_{
      [](std::uint32_t a, std::uint32_t b) { return static_cast<std::int32_t>(a - b) < 0; }};
  std::uint32_t peer_room_ = 0xffffffffu;
  bool have_sample_ = false;
  double srtt_ms_ = 0;
  double rttvar_ms_ = 0;
  std::int64_t rto_ms_ = 200;
  std::uint64_t retransmitted_ = 0;
  // Receiver.
  std::uint32_t next_expected_;
  std::map<std::uint32_t, Segment, bool (*)(std::uint32_t, std::uint32_t)> held_{
      [](std::uint32_t a, std::uint32_t b) { return static_cast<std::int32_t>(a - b) < 0; }};
  std::uint32_t unacked_received_ = 0;
  std::optional<std::uint32_t> echo_;
  std::int64_t first_unacked_ms_ = 0;
  // A duplicate (our acknowledgement was lost) or a gap (the sender should resend at once) is
  // answered without the delay.
  bool ack_now_ = false;
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_UDP_INTERNAL_RELIABLE_CHANNEL_H_

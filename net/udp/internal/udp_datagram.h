#ifndef LMDX_NET_UDP_INTERNAL_UDP_DATAGRAM_H_
#define LMDX_NET_UDP_INTERNAL_UDP_DATAGRAM_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace lmdx::net::internal {

// The header of every datagram of the udp transport, before its segment of the frame stream.
// Integers are little-endian, like the frame header's (net/wire.h).
//
//   offset  size  field
//        0     4  magic "LMDU"
//        4     1  kind (data, an acknowledgement alone, or goodbye)
//        5     1  flags: bit 0, the echo field is valid; bit 1, acknowledge this segment at once
//                 (its sender waits for that to free the memory it sent from)
//        6     2  room: segments the sender can still hold out of order
//        8     4  source rank
//       12     4  sequence number (data)
//       16     4  cumulative acknowledgement: the next sequence number the sender expects
//       20     4  selective acknowledgement: bit i, segment cumulative + 1 + i arrived
//       24     8  pair token (net/handshake.h PairToken): proof the sender is of this job
//       32     4  echo: the data segment whose arrival this datagram answers first, so that its
//                 sender measures a round trip that excludes time spent waiting behind a gap
struct UdpDatagramHeader {
  static constexpr std::uint32_t kMagic = 0x55444d4c;  // "LMDU" read as little-endian
  static constexpr std::size_t kSize = 36;
  static constexpr std::uint8_t kFlagEcho = 1;
  static constexpr std::uint8_t kFlagAckAtOnce = 2;
  // kBye: the sender closes; expect nothing more from it, not even acknowledgements.
  enum Kind : std::uint8_t { kData = 1, kAck = 2, kBye = 3 };

  Kind kind = kData;
  std::uint16_t room = 0;
  std::int32_t source = -1;
  std::uint32_t sequence = 0;
  std::uint32_t cumulative = 0;
  std::uint32_t selective = 0;
  std::uint64_t token = 0;
  bool has_echo = false;
  std::uint32_t echo = 0;
  bool ack_at_once = false;

  void Encode(std::uint8_t out[kSize]) const {
    std::uint8_t kind_byte = kind;
    auto flags =
        static_cast<std::uint8_t>((has_echo ? kFlagEcho : 0) | (ack_at_once ? kFlagAckAtOnce : 0));
    std::memcpy(out, &kMagic, 4);
    std::memcpy(out + 4, &kind_byte, 1);
    std::memcpy(out + 5, &flags, 1);
    std::memcpy(out + 6, &room, 2);
    std::memcpy(out + 8, &source, 4);
    std::memcpy(out + 12, &sequence, 4);
    std::memcpy(out + 16, &cumulative, 4);
    std::memcpy(out + 20, &selective, 4);
    std::memcpy(out + 24, &token, 8);
    std::memcpy(out + 32, &echo, 4);
  }

  // nullopt for anything that is not an LMDX datagram: too short, another magic, unknown kind.
  static std::optional<UdpDatagramHeader> Decode(const std::uint8_t* in, std::size_t size) {
    std::uint32_t magic = 0;
    if (size < kSize) return std::nullopt;
    std::memcpy(&magic, in, 4);
    if (magic != kMagic || in[4] < kData || in[4] > kBye) return std::nullopt;
    UdpDatagramHeader header;
    header.kind = static_cast<Kind>(in[4]);
    std::memcpy(&header.room, in + 6, 2);
    std::memcpy(&header.source, in + 8, 4);
    std::memcpy(&header.sequence, in + 12, 4);
    std::memcpy(&header.cumulative, in + 16, 4);
    std::memcpy(&header.selective, in + 20, 4);
    std::memcpy(&header.token, in + 24, 8);
    header.has_echo = (in[5] & kFlagEcho) != 0;
    header.ack_at_once = (in[5] & kFlagAckAtOnce) != 0;
    std::memcpy(&header.echo, in + 32, 4);
    return header;
  }
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_UDP_INTERNAL_UDP_DATAGRAM_H_

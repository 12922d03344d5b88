#ifndef LMDX_NET_FABRIC_INTERNAL_UCX_AM_HEADER_H_
#define LMDX_NET_FABRIC_INTERNAL_UCX_AM_HEADER_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "net/wire.h"

namespace lmdx::net::internal {

// The header of every active message the fabric transport sends, in front of the LMDX frame's:
//
//   offset size field
//        0    8 pair token     (PairToken(secret, "fabric", source, destination))
//        8    8 sequence       (0, 1, 2, ... per ordered pair of ranks)
//       16    4 flags          (kBodyInData, kGoodbye)
//       20    4 source rank    (the token is checked before anything else is read)
//       24   40 LMDX frame header (net/wire.h), absent in a goodbye
//       64      the frame's body, unless kBodyInData
//
// The active message's data is the frame's payload, with the body in front of it when the body
// did not fit in UCX's header limit. Integers are little-endian.
//
// A small raw message (the express lane, net/message.h SmallRaw) has a shorter header of its
// own, which leads the active message's data, the payload following it; UCX's own header for it
// is empty. Over UCX's shared memory a message with no header of UCX's takes UCX's plainer short
// send, one copy where a header took three pieces, and its plainer receive: an 8 B half round
// trip went from 0.33-0.36 us to 0.29-0.30 in alternate runs.
//
//   offset size field
//        0    8 pair token
//        8    4 sequence, its low 32 bits: the receiver takes the nearest number to the one it
//               expects that ends so (a pair never has 2^31 frames in flight)
//       12    4 source rank
//       16   12 raw body (RawBody: tag and number)
//
// It is told apart by UCX's header being empty: the others have 24 bytes (a goodbye) or 64 and
// more there. At 28 bytes, a 64-byte message still fits in UCX's shared-memory element of 128 bytes
// (28 for UCX's element header, 8 for UCP's active-message header, then payload and this header);
// with the 24-byte prefix and the raw body (36 bytes) it did not, and took UCX's copy through a
// receive descriptor, 0.43 us instead of 0.25.
inline constexpr unsigned kFabricAmId = 0x4c4d;  // "LM"
inline constexpr std::size_t kAmPrefixSize = 24;
inline constexpr std::size_t kAmHeaderSize = kAmPrefixSize + kFrameHeaderSize;
inline constexpr std::size_t kSmallRawHeaderSize = 28;
inline constexpr std::size_t kSmallRawBodyOffset = 16;

struct AmHeader {
  static constexpr std::uint32_t kBodyInData = 1;
  // The sender closes its endpoint: nothing more comes from it (a TCP connection's close).
  static constexpr std::uint32_t kGoodbye = 2;
  // Not on the wire: decoded from a small raw message's header, whose sequence holds only its
  // low 32 bits until WithFullSequence.
  static constexpr std::uint32_t kSmallRaw = 4;

  std::uint64_t token = 0;
  std::uint64_t sequence = 0;
  std::uint32_t flags = 0;
  std::int32_t source = -1;

  // A small raw message's header with its sequence made whole: the nearest number to expected
  // whose low 32 bits it carries. Any other header is returned as it is.
  AmHeader WithFullSequence(std::uint64_t expected) const;
};

void EncodeAmHeader(const AmHeader& header, std::uint8_t out[kAmPrefixSize]);
// A small raw message's header but its raw body (the first kSmallRawBodyOffset bytes).
void EncodeSmallRawPrefix(std::uint64_t token, std::uint64_t sequence, std::int32_t source,
                          std::uint8_t out[kSmallRawBodyOffset]);
// Either kind, told apart by length (at least kAmPrefixSize); nullopt when an unknown flag is
// set.
std::optional<AmHeader> DecodeAmHeader(const std::uint8_t* in, std::size_t length);

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_FABRIC_INTERNAL_UCX_AM_HEADER_H_

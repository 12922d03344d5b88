#ifndef LMDX_NET_INTERNAL_UCX_AM_HEADER_H_
#define LMDX_NET_INTERNAL_UCX_AM_HEADER_H_

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
//       24   40 LMDX frame header (net/wire.h), absent in a goodbye and a small raw message
//       64      the frame's body, unless kBodyInData
//
// A small raw message (kSmallRaw) carries its raw body at 24, and nothing after it.
//
// The active message's data is the frame's payload, with the body in front of it when the body
// did not fit in UCX's header limit. Integers are little-endian.
inline constexpr unsigned kFabricAmId = 0x4c4d;  // "LM"
inline constexpr std::size_t kAmPrefixSize = 24;
inline constexpr std::size_t kAmHeaderSize = kAmPrefixSize + kFrameHeaderSize;

struct AmHeader {
  static constexpr std::uint32_t kBodyInData = 1;
  // The sender closes its endpoint: nothing more comes from it (a TCP connection's close).
  static constexpr std::uint32_t kGoodbye = 2;
  // A small raw message on the express lane (net/message.h SmallRaw): the raw body (12 bytes,
  // RawBody) follows the prefix in place of a frame header and body, and the data is the payload.
  static constexpr std::uint32_t kSmallRaw = 4;

  std::uint64_t token = 0;
  std::uint64_t sequence = 0;
  std::uint32_t flags = 0;
  std::int32_t source = -1;
};

void EncodeAmHeader(const AmHeader& header, std::uint8_t out[kAmPrefixSize]);
// nullopt when an unknown flag is set.
std::optional<AmHeader> DecodeAmHeader(const std::uint8_t in[kAmPrefixSize]);

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_INTERNAL_UCX_AM_HEADER_H_

// The fabric transport's active-message headers: a frame's prefix and a small raw message's
// shorter header, told apart by length, and the small one's 32-bit sequence made whole again.
#include "net/fabric/internal/ucx_am_header.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace lmdx::net::internal {
namespace {

TEST(UcxAmHeaderTest, AFramesPrefixRoundTripsAndUnknownFlagsAreRefused) {
  AmHeader header;
  header.token = 0x1122334455667788u;
  header.sequence = 0x0000000500000003u;
  header.flags = AmHeader::kBodyInData;
  header.source = 9;
  std::uint8_t bytes[kAmHeaderSize] = {};
  EncodeAmHeader(header, bytes);
  EXPECT_EQ(bytes[0], 0x88);  // little-endian
  auto decoded = DecodeAmHeader(bytes, sizeof bytes);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->token, header.token);
  EXPECT_EQ(decoded->sequence, header.sequence);
  EXPECT_EQ(decoded->flags, AmHeader::kBodyInData);
  EXPECT_EQ(decoded->source, 9);
  // A frame's prefix never says small raw message: that is the short header's length alone.
  for (std::uint32_t flags : {AmHeader::kSmallRaw, 8u}) {
    header.flags = flags;
    EncodeAmHeader(header, bytes);
    EXPECT_FALSE(DecodeAmHeader(bytes, sizeof bytes).has_value()) << flags;
  }
  // Made whole or not, a frame's sequence is its own.
  header.flags = 0;
  EncodeAmHeader(header, bytes);
  EXPECT_EQ(DecodeAmHeader(bytes, sizeof bytes)->WithFullSequence(12).sequence, header.sequence);
}

TEST(UcxAmHeaderTest, ASmallRawHeaderIsToldByItsLengthAndCarriesTheLow32BitsOfItsSequence) {
  std::uint8_t bytes[kSmallRawHeaderSize] = {};
  EncodeSmallRawPrefix(0xA1A2A3A4A5A6A7A8u, 0x0000000700000010u, 3, bytes);
  auto decoded = DecodeAmHeader(bytes, sizeof bytes);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->token, 0xA1A2A3A4A5A6A7A8u);
  EXPECT_EQ(decoded->source, 3);
  EXPECT_EQ(decoded->flags, AmHeader::kSmallRaw);
  EXPECT_EQ(decoded->sequence, 0x10u);
  // The receiver expects the next one, or one a little earlier or later.
  EXPECT_EQ(decoded->WithFullSequence(0x0000000700000010u).sequence, 0x0000000700000010u);
  EXPECT_EQ(decoded->WithFullSequence(0x0000000700000002u).sequence, 0x0000000700000010u);
  EXPECT_EQ(decoded->WithFullSequence(0x0000000700000020u).sequence, 0x0000000700000010u);
}

// Across a wrap of the low 32 bits, in both directions: the nearest number is taken, so a
// message just past the wrap is ahead, and a repeat from just before it is behind (and refused).
TEST(UcxAmHeaderTest, TheNearestSequenceIsTakenAcrossAWrapOfTheLow32Bits) {
  std::uint8_t bytes[kSmallRawHeaderSize] = {};
  EncodeSmallRawPrefix(1, 0x0000000100000005u, 0, bytes);
  auto ahead = DecodeAmHeader(bytes, sizeof bytes);
  ASSERT_TRUE(ahead.has_value());
  EXPECT_EQ(ahead->WithFullSequence(0x00000000FFFFFFF0u).sequence, 0x0000000100000005u);
  EncodeSmallRawPrefix(1, 0x00000000FFFFFFFFu, 0, bytes);
  auto behind = DecodeAmHeader(bytes, sizeof bytes);
  ASSERT_TRUE(behind.has_value());
  EXPECT_EQ(behind->WithFullSequence(0x0000000100000002u).sequence, 0x00000000FFFFFFFFu);
}

}  // namespace
}  // namespace lmdx::net::internal

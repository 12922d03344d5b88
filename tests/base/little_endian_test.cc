#include "base/little_endian.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace lmdx {
namespace {

// The byte order on the wire is little-endian whatever the host's, at any alignment.
TEST(LittleEndianTest, WritesTheLeastSignificantByteFirstAndReadsItBack) {
  std::uint8_t bytes[16] = {};
  StoreLittleEndian<std::uint64_t>(bytes + 1, 0x0102030405060708u);
  const std::uint8_t want[8] = {8, 7, 6, 5, 4, 3, 2, 1};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(bytes[1 + i], want[i]) << i;
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[9], 0);
  EXPECT_EQ(LoadLittleEndian<std::uint64_t>(bytes + 1), 0x0102030405060708u);

  StoreLittleEndian<std::int32_t>(bytes + 3, -2);
  EXPECT_EQ(bytes[3], 0xFE);
  EXPECT_EQ(bytes[6], 0xFF);
  EXPECT_EQ(LoadLittleEndian<std::int32_t>(bytes + 3), -2);

  StoreLittleEndian<std::uint16_t>(bytes, 0xABCD);
  EXPECT_EQ(bytes[0], 0xCD);
  EXPECT_EQ(bytes[1], 0xAB);
  EXPECT_EQ(LoadLittleEndian<std::uint16_t>(bytes), 0xABCD);
}

TEST(LittleEndianTest, ByteSwappedReversesTheBytes) {
  EXPECT_EQ(ByteSwapped<std::uint16_t>(0x0102), 0x0201);
  EXPECT_EQ(ByteSwapped<std::uint32_t>(0x01020304u), 0x04030201u);
  EXPECT_EQ(ByteSwapped<std::uint64_t>(0x0102030405060708u), 0x0807060504030201u);
}

}  // namespace
}  // namespace lmdx

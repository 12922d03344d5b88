#include "net/wire.h"

#include <gtest/gtest.h>

namespace lmdx::net {
namespace {

FrameHeader SampleHeader() {
  FrameHeader header;
  header.type = MessageType::kRaw;
  header.flags = kFlagReply;
  header.source = 3;
  header.destination = 7;
  header.body_length = 12;
  header.payload_length = std::uint64_t{5} << 30;  // several GiB fit
  header.request_id = 0x1122334455667788ull;
  return header;
}

TEST(WireTest, HeaderRoundTrips) {
  std::uint8_t bytes[kFrameHeaderSize];
  EncodeFrameHeader(SampleHeader(), bytes);
  std::string error;
  auto decoded = DecodeFrameHeader(bytes, &error);
  ASSERT_TRUE(decoded) << error;
  EXPECT_EQ(decoded->type, MessageType::kRaw);
  EXPECT_EQ(decoded->flags, kFlagReply);
  EXPECT_EQ(decoded->source, 3);
  EXPECT_EQ(decoded->destination, 7);
  EXPECT_EQ(decoded->body_length, 12u);
  EXPECT_EQ(decoded->payload_length, std::uint64_t{5} << 30);
  EXPECT_EQ(decoded->request_id, 0x1122334455667788ull);
  EXPECT_TRUE(decoded->is_reply());
}

TEST(WireTest, MagicIsLmdxOnTheWire) {
  std::uint8_t bytes[kFrameHeaderSize];
  EncodeFrameHeader(SampleHeader(), bytes);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(bytes), 4), "LMDX");
}

TEST(WireTest, OtherVersionIsNamed) {
  FrameHeader header = SampleHeader();
  header.version = kWireVersion + 1;
  std::uint8_t bytes[kFrameHeaderSize];
  EncodeFrameHeader(header, bytes);
  std::string error;
  EXPECT_FALSE(DecodeFrameHeader(bytes, &error));
  EXPECT_NE(error.find("version " + std::to_string(kWireVersion + 1)), std::string::npos) << error;
  EXPECT_NE(error.find("this node speaks version " + std::to_string(kWireVersion)),
            std::string::npos)
      << error;
}

TEST(WireTest, RejectsBadMagicOversizedBodyAndUnknownType) {
  std::uint8_t bytes[kFrameHeaderSize];
  std::string error;

  EncodeFrameHeader(SampleHeader(), bytes);
  bytes[0] ^= 0xff;
  EXPECT_FALSE(DecodeFrameHeader(bytes, &error));
  EXPECT_NE(error.find("magic"), std::string::npos);

  FrameHeader big = SampleHeader();
  big.body_length = kMaxBodyLength + 1;
  EncodeFrameHeader(big, bytes);
  EXPECT_FALSE(DecodeFrameHeader(bytes, &error));
  EXPECT_NE(error.find("control body"), std::string::npos);

  FrameHeader huge = SampleHeader();
  huge.payload_length = kMaxPayloadLength + 1;
  EncodeFrameHeader(huge, bytes);
  EXPECT_FALSE(DecodeFrameHeader(bytes, &error));
  EXPECT_NE(error.find("payload"), std::string::npos);

  FrameHeader unknown = SampleHeader();
  unknown.type = MessageType::kLimit;
  EncodeFrameHeader(unknown, bytes);
  EXPECT_FALSE(DecodeFrameHeader(bytes, &error));
  EXPECT_NE(error.find("unknown message type"), std::string::npos);
}

}  // namespace
}  // namespace lmdx::net

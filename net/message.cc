#include "net/message.h"

namespace lmdx::net {

std::string RawBody::Encode() const {
  std::string body(kSize, '\0');
  Write(reinterpret_cast<std::uint8_t*>(body.data()));
  return body;
}

std::optional<RawBody> RawBody::Decode(const std::string& body) {
  if (body.size() != kSize) return std::nullopt;
  return Read(reinterpret_cast<const std::uint8_t*>(body.data()));
}

void RawBody::Write(std::uint8_t out[kSize]) const {
  auto tag_bits = static_cast<std::uint32_t>(tag);
  for (std::size_t i = 0; i < 4; ++i) out[i] = static_cast<std::uint8_t>(tag_bits >> (8 * i));
  for (std::size_t i = 0; i < 8; ++i) out[4 + i] = static_cast<std::uint8_t>(sequence >> (8 * i));
}

RawBody RawBody::Read(const std::uint8_t in[kSize]) {
  std::uint32_t tag_bits = 0;
  for (std::size_t i = 0; i < 4; ++i) tag_bits |= std::uint32_t{in[i]} << (8 * i);
  RawBody raw;
  raw.tag = static_cast<std::int32_t>(tag_bits);
  for (std::size_t i = 0; i < 8; ++i) raw.sequence |= std::uint64_t{in[4 + i]} << (8 * i);
  return raw;
}

InboundMessage AsRawFrame(const SmallRaw& raw) {
  InboundMessage message;
  message.header.type = MessageType::kRaw;
  message.header.source = raw.source;
  message.header.destination = raw.destination;
  message.header.body_length = RawBody::kSize;
  message.header.payload_length = raw.length;
  message.body = RawBody{raw.tag, raw.sequence}.Encode();
  message.payload = const_cast<std::uint8_t*>(raw.payload);
  message.payload_borrowed = raw.length > 0;
  return message;
}

}  // namespace lmdx::net

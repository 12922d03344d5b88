#include "net/message.h"

#include "base/little_endian.h"

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
  StoreLittleEndian<std::int32_t>(out, tag);
  StoreLittleEndian<std::uint64_t>(out + 4, sequence);
}

RawBody RawBody::Read(const std::uint8_t in[kSize]) {
  return RawBody{LoadLittleEndian<std::int32_t>(in), LoadLittleEndian<std::uint64_t>(in + 4)};
}

InboundMessage AsRawFrame(const SmallRaw& raw) {
  InboundMessage message = BorrowedRawFrame(raw);
  message.header.body_length = RawBody::kSize;
  message.body = RawBody{raw.tag, raw.sequence}.Encode();
  return message;
}

}  // namespace lmdx::net

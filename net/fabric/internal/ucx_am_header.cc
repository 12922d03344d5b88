#include "net/fabric/internal/ucx_am_header.h"

#include "base/little_endian.h"

namespace lmdx::net::internal {

void EncodeAmHeader(const AmHeader& header, std::uint8_t out[kAmPrefixSize]) {
  StoreLittleEndian<std::uint64_t>(out, header.token);
  StoreLittleEndian<std::uint64_t>(out + 8, header.sequence);
  StoreLittleEndian<std::uint32_t>(out + 16, header.flags);
  StoreLittleEndian<std::int32_t>(out + 20, header.source);
}

void EncodeSmallRawPrefix(std::uint64_t token, std::uint64_t sequence, std::int32_t source,
                          std::uint8_t out[kSmallRawBodyOffset]) {
  StoreLittleEndian<std::uint64_t>(out, token);
  StoreLittleEndian<std::uint32_t>(out + 8, static_cast<std::uint32_t>(sequence));
  StoreLittleEndian<std::int32_t>(out + 12, source);
}

std::optional<AmHeader> DecodeAmHeader(const std::uint8_t* in, std::size_t length) {
  AmHeader header;
  header.token = LoadLittleEndian<std::uint64_t>(in);
  if (length == kSmallRawHeaderSize) {
    header.sequence = LoadLittleEndian<std::uint32_t>(in + 8);
    header.source = LoadLittleEndian<std::int32_t>(in + 12);
    header.flags = AmHeader::kSmallRaw;
    return header;
  }
  header.sequence = LoadLittleEndian<std::uint64_t>(in + 8);
  header.flags = LoadLittleEndian<std::uint32_t>(in + 16);
  header.source = LoadLittleEndian<std::int32_t>(in + 20);
  constexpr std::uint32_t kOnTheWire = AmHeader::kBodyInData | AmHeader::kGoodbye;
  if ((header.flags & ~kOnTheWire) != 0) return std::nullopt;
  return header;
}

AmHeader AmHeader::WithFullSequence(std::uint64_t expected) const {
  if ((flags & kSmallRaw) == 0) return *this;
  AmHeader whole = *this;
  auto ahead = static_cast<std::int32_t>(static_cast<std::uint32_t>(sequence) -
                                         static_cast<std::uint32_t>(expected));
  whole.sequence = expected + static_cast<std::uint64_t>(static_cast<std::int64_t>(ahead));
  return whole;
}

}  // namespace lmdx::net::internal

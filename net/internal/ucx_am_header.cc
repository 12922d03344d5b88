#include "net/internal/ucx_am_header.h"

#include "base/little_endian.h"

namespace lmdx::net::internal {

void EncodeAmHeader(const AmHeader& header, std::uint8_t out[kAmPrefixSize]) {
  StoreLittleEndian<std::uint64_t>(out, header.token);
  StoreLittleEndian<std::uint64_t>(out + 8, header.sequence);
  StoreLittleEndian<std::uint32_t>(out + 16, header.flags);
  StoreLittleEndian<std::int32_t>(out + 20, header.source);
}

std::optional<AmHeader> DecodeAmHeader(const std::uint8_t in[kAmPrefixSize]) {
  AmHeader header;
  header.token = LoadLittleEndian<std::uint64_t>(in);
  header.sequence = LoadLittleEndian<std::uint64_t>(in + 8);
  header.flags = LoadLittleEndian<std::uint32_t>(in + 16);
  header.source = LoadLittleEndian<std::int32_t>(in + 20);
  constexpr std::uint32_t kKnown = AmHeader::kBodyInData | AmHeader::kGoodbye | AmHeader::kSmallRaw;
  if ((header.flags & ~kKnown) != 0) return std::nullopt;
  return header;
}

}  // namespace lmdx::net::internal

#include "net/internal/ucx_am_header.h"

namespace lmdx::net::internal {
namespace {

void Put(std::uint8_t* out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::uint64_t Get(const std::uint8_t* in, int bytes) {
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= std::uint64_t{in[i]} << (8 * i);
  return value;
}

}  // namespace

void EncodeAmHeader(const AmHeader& header, std::uint8_t out[kAmPrefixSize]) {
  Put(out, header.token, 8);
  Put(out + 8, header.sequence, 8);
  Put(out + 16, header.flags, 4);
  Put(out + 20, static_cast<std::uint32_t>(header.source), 4);
}

std::optional<AmHeader> DecodeAmHeader(const std::uint8_t in[kAmPrefixSize]) {
  AmHeader header;
  header.token = Get(in, 8);
  header.sequence = Get(in + 8, 8);
  header.flags = static_cast<std::uint32_t>(Get(in + 16, 4));
  header.source = static_cast<std::int32_t>(static_cast<std::uint32_t>(Get(in + 20, 4)));
  constexpr std::uint32_t kKnown = AmHeader::kBodyInData | AmHeader::kGoodbye | AmHeader::kSmallRaw;
  if ((header.flags & ~kKnown) != 0) return std::nullopt;
  return header;
}

}  // namespace lmdx::net::internal

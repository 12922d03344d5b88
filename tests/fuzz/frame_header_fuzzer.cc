// Frame headers as they arrive from a peer: decoded and checked against the ranks of the link.
// Anything may be rejected; nothing may crash, and what is accepted must be within the limits.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "net/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lmdx::net;
  if (size < kFrameHeaderSize) return 0;
  std::string error;
  std::optional<FrameHeader> header = DecodeFrameHeader(data, &error);
  if (header) {
    if (header->body_length > kMaxBodyLength || header->payload_length > kMaxPayloadLength ||
        static_cast<std::uint16_t>(header->type) >=
            static_cast<std::uint16_t>(MessageType::kLimit)) {
      std::abort();  // accepted beyond the limits
    }
    // What was accepted encodes back to the same header.
    std::uint8_t again[kFrameHeaderSize];
    EncodeFrameHeader(*header, again);
    std::optional<FrameHeader> decoded = DecodeFrameHeader(again, &error);
    if (!decoded || decoded->body_length != header->body_length ||
        decoded->payload_length != header->payload_length || decoded->type != header->type) {
      std::abort();
    }
  } else if (error.empty()) {
    std::abort();  // a rejection must say why
  }
  return 0;
}

#include "net/internal/frame_assembly.h"

#include <cstring>
#include <memory>
#include <new>

#include "net/internal/payload_buffer.h"

namespace lmdx::net::internal {

std::optional<FrameHeader> CheckIncomingHeader(const std::uint8_t bytes[kFrameHeaderSize], int peer,
                                               int me, const char* link, std::string* error) {
  std::string why;
  auto header = DecodeFrameHeader(bytes, &why);
  if (!header) {
    *error = "malformed frame: " + why;
    return std::nullopt;
  }
  if (header->source != peer || header->destination != me) {
    *error = "a frame claims to go from rank " + std::to_string(header->source) + " to rank " +
             std::to_string(header->destination) + " on " + link + " with rank " +
             std::to_string(peer);
    return std::nullopt;
  }
  return header;
}

bool PreparePayload(TransportHost& host, InboundMessage& message, std::string* error) {
  std::uint64_t length = message.header.payload_length;
  message.payload = host.PlacePayload(message.header, message.body);
  if (message.payload != nullptr) {
    message.payload_placed = true;
    return true;
  }
  try {
    message.owned_payload = AllocatePayload(length);
  } catch (const std::bad_alloc&) {
    *error = "cannot allocate " + std::to_string(length) + " bytes for an incoming message";
    return false;
  }
  message.payload = message.owned_payload.get();
  return true;
}

bool TakePayloadFrom(const std::uint8_t* bytes, TransportHost& host, InboundMessage& message,
                     std::string* error) {
  std::uint64_t length = message.header.payload_length;
  if (length == 0) return true;
  if (message.header.type == MessageType::kRaw) {
    message.payload = const_cast<std::uint8_t*>(bytes);
    message.payload_borrowed = true;
    return true;
  }
  if (!PreparePayload(host, message, error)) return false;
  std::memcpy(message.payload, bytes, length);
  return true;
}

std::size_t HandOverSmallRaw(TransportHost& host, const FrameHeader& header,
                             const std::uint8_t* rest, std::size_t available) {
  std::uint64_t size = header.body_length + header.payload_length;
  if (!StandsForSmallRaw(header) || available < size) return 0;
  RawBody raw = RawBody::Read(rest);
  host.OnRawMessage(SmallRaw{header.source, header.destination, raw.tag, raw.sequence,
                             rest + RawBody::kSize,
                             static_cast<std::size_t>(header.payload_length)});
  return static_cast<std::size_t>(size);
}

std::uint64_t SealOutgoingHeader(OutgoingMessage& message, int source,
                                 std::uint8_t out[kFrameHeaderSize]) {
  message.header.body_length = static_cast<std::uint32_t>(message.body.size());
  message.header.payload_length = message.payload.size;
  message.header.source = source;
  EncodeFrameHeader(message.header, out);
  return kFrameHeaderSize + message.body.size() + message.payload.size;
}

}  // namespace lmdx::net::internal

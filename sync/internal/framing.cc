#include "sync/internal/framing.h"

#include <memory>
#include <utility>

#include "base/error.h"

namespace lmdx::sync::internal {

Framed Frame(wire::SyncMessage message) {
  Framed framed;
  if (message.payloads_size() > 0) {
    for (const std::string& payload : message.payloads()) {
      message.add_payload_lengths(payload.size());
    }
    // One payload (a lock grant, a semaphore unit) is moved, not copied; several are joined.
    auto bytes = std::make_shared<std::string>(std::move(*message.mutable_payloads(0)));
    for (int i = 1; i < message.payloads_size(); ++i) bytes->append(message.payloads(i));
    message.clear_payloads();
    framed.payload = net::Payload{bytes->data(), bytes->size(), bytes};
  }
  framed.body = message.SerializeAsString();
  return framed;
}

wire::SyncMessage Unframe(const net::InboundMessage& frame) {
  const std::string from = "rank " + std::to_string(frame.header.source);
  wire::SyncMessage message;
  if (!message.ParseFromString(frame.body)) {
    throw Error(LMDX_ERR_INTERNAL, "a malformed synchronisation message from " + from);
  }
  const std::uint64_t length = frame.header.payload_length;
  std::uint64_t at = 0;
  for (std::uint64_t size : message.payload_lengths()) {
    if (size > length - at) {
      throw Error(LMDX_ERR_INTERNAL, "a synchronisation message from " + from +
                                         " names payloads past its " + std::to_string(length) +
                                         " bytes");
    }
    message.add_payloads(reinterpret_cast<const char*>(frame.payload) + at, size);
    at += size;
  }
  if (at != length) {
    throw Error(LMDX_ERR_INTERNAL, "a synchronisation message from " + from + " has " +
                                       std::to_string(length - at) + " bytes of payload to spare");
  }
  message.clear_payload_lengths();
  return message;
}

}  // namespace lmdx::sync::internal

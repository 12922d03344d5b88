#ifndef LMDX_NET_MESSAGE_H_
#define LMDX_NET_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "net/internal/payload_buffer.h"
#include "net/wire.h"

namespace lmdx::net {

// Raw bytes that follow a frame's body. `data` is borrowed: it stays valid until the message's
// `on_sent` runs, either because `owner` keeps it alive or because the sender waits for on_sent
// (lmdx_send returns only then). So a 64 MiB user buffer goes to the socket without a copy.
struct Payload {
  const void* data = nullptr;
  std::size_t size = 0;
  std::shared_ptr<const void> owner;
};

// A payload that owns its bytes: a layer's own blob (a consistency release) sent as a frame's raw
// payload, past what a body may hold.
inline Payload OwnedPayload(std::string bytes) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  return Payload{owned->data(), owned->size(), owned};
}

// A frame on its way out. The transport fills in the header's lengths.
struct OutgoingMessage {
  FrameHeader header;
  std::string body;
  Payload payload;
  // Runs once, on whichever thread finished the write: true when every byte is in the kernel,
  // false when the connection failed first.
  std::function<void(bool sent)> on_sent;
  // The sending thread waits for on_sent polling the network itself (Node::SendBlocking): a
  // transport need not have anyone else move the frame along meanwhile.
  bool sender_polls = false;
};

// A frame that arrived. Its payload lies either in memory the receiver named beforehand (a
// posted receive buffer, a page) or in a buffer of its own.
struct InboundMessage {
  FrameHeader header;
  std::string body;
  std::uint8_t* payload = nullptr;  // header.payload_length bytes
  internal::PayloadBuffer owned_payload;
  bool payload_placed = false;  // payload points into memory the receiver named
  // payload points into the transport's own memory (a shared-memory cell) and is valid only while
  // the frame's handler runs: whoever keeps the message copies it first (KeepPayload). Only raw
  // frames come so; their mailbox copies the payload into the receive buffer it matches.
  bool payload_borrowed = false;
};

// A frame's raw payload as bytes of its own ("" when it has none).
inline std::string PayloadText(const InboundMessage& message) {
  if (message.header.payload_length == 0) return {};
  return std::string(reinterpret_cast<const char*>(message.payload), message.header.payload_length);
}

// The body of a raw (kRaw) frame: 12 bytes, little-endian, the tag (int32) and the frame's number
// among the raw frames from its source to its destination (uint64, from 0). The number lets the
// receiver keep the order of a pair's messages when network hints send them over different
// networks. Fixed bytes rather than a protobuf: it is on every raw message's latency path.
struct RawBody {
  static constexpr std::size_t kSize = 12;
  std::int32_t tag = 0;
  std::uint64_t sequence = 0;

  std::string Encode() const;
  // nullopt when body is not kSize bytes.
  static std::optional<RawBody> Decode(const std::string& body);
  // The same bytes in memory of the caller's.
  void Write(std::uint8_t out[kSize]) const;
  static RawBody Read(const std::uint8_t in[kSize]);
};

// A small raw message on the express lane (Transport::SendRawNow, TransportHost::OnRawMessage):
// what its raw frame would carry. On the way only the tag, the number and the payload travel: the
// pair's connection names source and destination, the lane the type, and the piece of memory it
// comes in its length. So a transport writes 12 bytes besides the payload where a frame took a
// 40-byte header and a body; encoding and checking that header, and building the frame on either
// side, were most of the software in a shared-memory half round trip of 8 bytes.
struct SmallRaw {
  // The most payload any transport carries this way; each may take less (SendRawNow says):
  // shm all of it, in a span of cells (net/shm/internal/shm_cells.h); fabric 256 bytes within its
  // call. No more is offered: a message too large for every transport would try the lane in vain.
  static constexpr std::size_t kMaxPayload = 972;
  int source = -1;
  int destination = -1;
  std::int32_t tag = 0;
  std::uint64_t sequence = 0;             // as RawBody::sequence
  const std::uint8_t* payload = nullptr;  // borrowed for the call
  std::size_t length = 0;
};

// A raw frame that carries nothing besides what a small raw message does (a tag and number, and
// a payload small enough): a receiver may hand it over as one (TransportHost::OnRawMessage).
inline bool StandsForSmallRaw(const FrameHeader& header) {
  return header.type == MessageType::kRaw && header.body_length == RawBody::kSize &&
         header.request_id == 0 && header.flags == 0 &&
         header.payload_length <= SmallRaw::kMaxPayload;
}

// The raw frame a small raw message stands for, its payload still borrowed: for hosts and paths
// that take frames only.
InboundMessage AsRawFrame(const SmallRaw& raw);
// The same without the body: for a receiver that has the tag and number already (the mailbox, on
// every small message's way, hence inline).
inline InboundMessage BorrowedRawFrame(const SmallRaw& raw) {
  InboundMessage message;
  message.header.type = MessageType::kRaw;
  message.header.source = raw.source;
  message.header.destination = raw.destination;
  message.header.payload_length = raw.length;
  message.payload = const_cast<std::uint8_t*>(raw.payload);
  message.payload_borrowed = raw.length > 0;
  return message;
}

// Gives a message whose payload is borrowed a buffer of its own. Throws std::bad_alloc.
inline void KeepPayload(InboundMessage& message) {
  if (!message.payload_borrowed) return;
  message.owned_payload = internal::AllocatePayload(message.header.payload_length);
  std::memcpy(message.owned_payload.get(), message.payload, message.header.payload_length);
  message.payload = message.owned_payload.get();
  message.payload_borrowed = false;
}

}  // namespace lmdx::net

#endif  // LMDX_NET_MESSAGE_H_

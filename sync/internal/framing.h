// Sync messages on the wire. Their consistency payloads (write notices, and whatever a protocol
// releases) grow with the pages a program writes, while a frame's protobuf body is capped at
// 16 MiB (net/wire.h) to tell a broken peer from a real message. So the payloads travel as the
// frame's raw payload, concatenated, and the body only lists their lengths.
#ifndef LMDX_SYNC_INTERNAL_FRAMING_H_
#define LMDX_SYNC_INTERNAL_FRAMING_H_

#include <string>

#include "net/message.h"
#include "sync/sync.pb.h"

namespace lmdx::sync::internal {

struct Framed {
  std::string body;
  net::Payload payload;
};

// The frame of message: its payloads moved out of the body.
Framed Frame(wire::SyncMessage message);
// The message a frame carries, its payloads back in place. Throws lmdx::Error naming the sender
// when the body does not parse or the lengths do not fill the raw payload exactly.
wire::SyncMessage Unframe(const net::InboundMessage& frame);

}  // namespace lmdx::sync::internal

#endif  // LMDX_SYNC_INTERNAL_FRAMING_H_

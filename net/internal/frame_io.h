#ifndef LMDX_NET_INTERNAL_FRAME_IO_H_
#define LMDX_NET_INTERNAL_FRAME_IO_H_

#include <optional>
#include <string>

#include "net/handshake.h"
#include "net/wire.h"

namespace lmdx::net::internal {

// Blocking frame I/O for the few places that talk before a progress engine runs (a node joining
// through the rendezvous). Control frames only: no payload.
void WriteControlFrame(int fd, FrameHeader header, const std::string& body);
// nullopt at end of stream; throws lmdx::Error on a malformed frame or after timeout_ms.
std::optional<std::pair<FrameHeader, std::string>> ReadControlFrame(int fd, int timeout_ms);

// Runs a client handshake over a blocking socket; throws lmdx::Error naming `peer` on failure.
void RunClientHandshake(int fd, Handshake& handshake, const std::string& peer, int timeout_ms);

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_INTERNAL_FRAME_IO_H_

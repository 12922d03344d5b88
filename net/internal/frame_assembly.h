#ifndef LMDX_NET_INTERNAL_FRAME_ASSEMBLY_H_
#define LMDX_NET_INTERNAL_FRAME_ASSEMBLY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "net/message.h"
#include "net/transport.h"
#include "net/wire.h"

namespace lmdx::net::internal {

// The steps every transport takes on an incoming frame, whatever carries its bytes.

// Decodes a header that arrived from peer for this node. On failure returns nullopt and says why
// in *error; `link` names what carried it ("the connection", "the segment shared").
std::optional<FrameHeader> CheckIncomingHeader(const std::uint8_t bytes[kFrameHeaderSize], int peer,
                                               int me, const char* link, std::string* error);

// Gives message (header and body complete, payload still to come) the memory its payload lands
// in: the receiver's own (TransportHost::PlacePayload) or a buffer of the message's own. False,
// with *error, when that buffer cannot be had.
bool PreparePayload(TransportHost& host, InboundMessage& message, std::string* error);

// Gives message (header complete) the payload that lies at bytes, in the transport's own memory
// (a shared-memory cell, a fabric frame copied out of UCX's): a raw frame lends it, and its
// mailbox copies it into the receive it matches or a buffer of the message's own, one pass under
// its lock instead of a placement and a delivery; any other frame's is copied where
// PreparePayload says. False, with *error, when no buffer could be had.
bool TakePayloadFrom(const std::uint8_t* bytes, TransportHost& host, InboundMessage& message,
                     std::string* error);

// A checked header of a raw frame that stands for a small raw message (StandsForSmallRaw), its
// body and payload whole at rest (available bytes from there): the frame goes to the host as that
// message (TransportHost::OnRawMessage), its payload read where it lies, without the frame, its
// body or a buffer of its own. Returns the bytes it took after the header; 0, with nothing done,
// when the frame is not such a one or not whole there.
std::size_t HandOverSmallRaw(TransportHost& host, const FrameHeader& header,
                             const std::uint8_t* rest, std::size_t available);

// The sending side's step: fills in the header's lengths and source from the message and encodes
// it into out. Returns the frame's whole size (header, body and payload): what must be written.
std::uint64_t SealOutgoingHeader(OutgoingMessage& message, int source,
                                 std::uint8_t out[kFrameHeaderSize]);

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_INTERNAL_FRAME_ASSEMBLY_H_

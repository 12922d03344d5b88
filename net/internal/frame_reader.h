#ifndef LMDX_NET_INTERNAL_FRAME_READER_H_
#define LMDX_NET_INTERNAL_FRAME_READER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "net/message.h"
#include "net/transport.h"
#include "net/wire.h"

namespace lmdx::net::internal {

// Cuts an in-order byte stream from one peer into frames and hands each, whole, to the host:
// for transports whose pieces do not follow frame boundaries (udp's segments). Each payload
// lands straight in the memory the receiver named, if it named any. A small raw frame that lies
// whole in one piece goes to the host as the small raw message it stands for (OnRawMessage).
class FrameReader {
 public:
  // link names what carries the stream, for errors ("udp").
  FrameReader(TransportHost& host, int peer, int me, const char* link)
      : host_(host), peer_(peer), me_(me), link_(link) {}

  // Consumes every byte; false, with *error, when the stream is broken (the peer must be
  // dropped: nothing after a bad header can be trusted).
  bool Feed(const std::uint8_t* data, std::size_t size, std::string* error);
  // Mid-payload: a long transfer is under way (the hang watch counts it as traffic).
  bool in_payload() const { return state_ == State::kPayload; }
  // Where the stream's next bytes belong while they continue a payload: a transport may read
  // them straight there, then say so with TakePlaced. Empty between payloads.
  std::span<std::uint8_t> PayloadRoom() const;
  // The stream's next `size` bytes were put where PayloadRoom said. False, with *error, when
  // they do not fit there.
  bool TakePlaced(std::size_t size, std::string* error);

 private:
  enum class State { kHeader, kBody, kPayload };
  bool StartPayloadOrDeliver(std::string* error);
  void Deliver();

  TransportHost& host_;
  int peer_;
  int me_;
  const char* link_;
  State state_ = State::kHeader;
  std::uint8_t header_bytes_[kFrameHeaderSize] = {};
  std::size_t header_got_ = 0;
  InboundMessage current_;
  std::uint64_t payload_got_ = 0;
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_INTERNAL_FRAME_READER_H_

#include "net/internal/frame_io.h"

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "net/internal/socket.h"

namespace lmdx::net::internal {

void WriteControlFrame(int fd, FrameHeader header, const std::string& body) {
  header.body_length = static_cast<std::uint32_t>(body.size());
  header.payload_length = 0;
  std::uint8_t bytes[kFrameHeaderSize];
  EncodeFrameHeader(header, bytes);
  std::string frame(reinterpret_cast<const char*>(bytes), kFrameHeaderSize);
  frame += body;
  WriteAll(fd, frame.data(), frame.size());
}

std::optional<std::pair<FrameHeader, std::string>> ReadControlFrame(int fd, int timeout_ms) {
  std::uint8_t bytes[kFrameHeaderSize];
  if (!ReadExactly(fd, bytes, kFrameHeaderSize, timeout_ms)) return std::nullopt;
  std::string error;
  auto header = DecodeFrameHeader(bytes, &error);
  if (!header) throw Error(LMDX_ERR_NETWORK, "malformed frame: " + error);
  if (header->payload_length != 0) {
    throw Error(LMDX_ERR_NETWORK, "unexpected payload on a control connection");
  }
  std::string body(header->body_length, '\0');
  if (!body.empty() && !ReadExactly(fd, body.data(), body.size(), timeout_ms)) {
    throw Error(LMDX_ERR_NETWORK, "the connection closed in the middle of a frame");
  }
  return std::make_pair(*header, std::move(body));
}

void RunClientHandshake(int fd, Handshake& handshake, const std::string& peer, int timeout_ms) {
  std::vector<std::uint8_t> input;
  while (handshake.state() == Handshake::State::kRunning) {
    input.resize(handshake.BytesWanted());
    if (!ReadExactly(fd, input.data(), input.size(), timeout_ms)) {
      throw Error(LMDX_ERR_NETWORK, peer + " closed the connection during the handshake");
    }
    handshake.Feed(input.data(), input.size());
    std::string output = handshake.TakeOutput();
    if (!output.empty()) WriteAll(fd, output.data(), output.size());
  }
  if (handshake.state() == Handshake::State::kFailed) {
    throw Error(LMDX_ERR_NETWORK, peer + ": " + handshake.error());
  }
}

}  // namespace lmdx::net::internal

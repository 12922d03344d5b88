#include "net/internal/frame_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "net/internal/frame_assembly.h"

namespace lmdx::net::internal {

bool FrameReader::Feed(const std::uint8_t* data, std::size_t size, std::string* error) {
  while (size > 0) {
    switch (state_) {
      case State::kHeader: {
        // Read where it lies when the piece holds it whole, else gathered across pieces.
        const std::uint8_t* header_at = data;
        if (header_got_ == 0 && size >= kFrameHeaderSize) {
          data += kFrameHeaderSize;
          size -= kFrameHeaderSize;
        } else {
          std::size_t take = std::min(size, kFrameHeaderSize - header_got_);
          std::memcpy(header_bytes_ + header_got_, data, take);
          header_got_ += take;
          data += take;
          size -= take;
          if (header_got_ < kFrameHeaderSize) break;
          header_got_ = 0;
          header_at = header_bytes_;
        }
        auto header = CheckIncomingHeader(header_at, peer_, me_, link_, error);
        if (!header) return false;
        if (std::size_t taken = HandOverSmallRaw(host_, *header, data, size)) {
          data += taken;
          size -= taken;
          break;
        }
        current_ = InboundMessage{};
        current_.header = *header;
        if (header->body_length > 0) {
          current_.body.reserve(header->body_length);
          state_ = State::kBody;
        } else if (!StartPayloadOrDeliver(error)) {
          return false;
        }
        break;
      }
      case State::kBody: {
        std::size_t take =
            std::min<std::size_t>(size, current_.header.body_length - current_.body.size());
        current_.body.append(reinterpret_cast<const char*>(data), take);
        data += take;
        size -= take;
        if (current_.body.size() == current_.header.body_length && !StartPayloadOrDeliver(error)) {
          return false;
        }
        break;
      }
      case State::kPayload: {
        auto take = static_cast<std::size_t>(
            std::min<std::uint64_t>(size, current_.header.payload_length - payload_got_));
        std::memcpy(current_.payload + payload_got_, data, take);
        payload_got_ += take;
        data += take;
        size -= take;
        if (payload_got_ == current_.header.payload_length) Deliver();
        break;
      }
    }
  }
  return true;
}

std::span<std::uint8_t> FrameReader::PayloadRoom() const {
  if (state_ != State::kPayload) return {};
  return {current_.payload + payload_got_,
          static_cast<std::size_t>(current_.header.payload_length - payload_got_)};
}

bool FrameReader::TakePlaced(std::size_t size, std::string* error) {
  if (size > PayloadRoom().size()) {
    *error = std::to_string(size) + " bytes placed where " + std::to_string(PayloadRoom().size()) +
             " of a payload were due";
    return false;
  }
  payload_got_ += size;
  if (payload_got_ == current_.header.payload_length) Deliver();
  return true;
}

bool FrameReader::StartPayloadOrDeliver(std::string* error) {
  if (current_.header.payload_length == 0) {
    Deliver();
    return true;
  }
  if (!PreparePayload(host_, current_, error)) return false;
  payload_got_ = 0;
  state_ = State::kPayload;
  return true;
}

void FrameReader::Deliver() {
  state_ = State::kHeader;
  payload_got_ = 0;
  host_.OnMessage(std::exchange(current_, InboundMessage{}));
}

}  // namespace lmdx::net::internal

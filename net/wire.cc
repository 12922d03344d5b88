#include "net/wire.h"

#include <array>
#include <atomic>
#include <cstring>

#include "base/little_endian.h"

namespace lmdx::net {

void EncodeFrameHeader(const FrameHeader& header, std::uint8_t out[kFrameHeaderSize]) {
  StoreLittleEndian<std::uint32_t>(out + 0, kWireMagic);
  StoreLittleEndian<std::uint16_t>(out + 4, header.version);
  StoreLittleEndian<std::uint16_t>(out + 6, static_cast<std::uint16_t>(header.type));
  StoreLittleEndian<std::uint32_t>(out + 8, header.flags);
  StoreLittleEndian<std::uint32_t>(out + 12, static_cast<std::uint32_t>(header.source));
  StoreLittleEndian<std::uint32_t>(out + 16, static_cast<std::uint32_t>(header.destination));
  StoreLittleEndian<std::uint32_t>(out + 20, header.body_length);
  StoreLittleEndian<std::uint64_t>(out + 24, header.payload_length);
  StoreLittleEndian<std::uint64_t>(out + 32, header.request_id);
}

std::optional<FrameHeader> DecodeFrameHeader(const std::uint8_t in[kFrameHeaderSize],
                                             std::string* error) {
  if (LoadLittleEndian<std::uint32_t>(in) != kWireMagic) {
    *error = "not an LMDX frame (bad magic)";
    return std::nullopt;
  }
  FrameHeader header;
  header.version = LoadLittleEndian<std::uint16_t>(in + 4);
  if (header.version != kWireVersion) {
    *error = "the peer speaks LMDX wire version " + std::to_string(header.version) +
             ", this node speaks version " + std::to_string(kWireVersion);
    return std::nullopt;
  }
  std::uint16_t type = LoadLittleEndian<std::uint16_t>(in + 6);
  if (type == 0 || type >= static_cast<std::uint16_t>(MessageType::kLimit)) {
    *error = "unknown message type " + std::to_string(type);
    return std::nullopt;
  }
  header.type = static_cast<MessageType>(type);
  header.flags = LoadLittleEndian<std::uint32_t>(in + 8);
  header.source = static_cast<std::int32_t>(LoadLittleEndian<std::uint32_t>(in + 12));
  header.destination = static_cast<std::int32_t>(LoadLittleEndian<std::uint32_t>(in + 16));
  header.body_length = LoadLittleEndian<std::uint32_t>(in + 20);
  header.payload_length = LoadLittleEndian<std::uint64_t>(in + 24);
  header.request_id = LoadLittleEndian<std::uint64_t>(in + 32);
  if (header.body_length > kMaxBodyLength) {
    *error = "control body of " + std::to_string(header.body_length) +
             " bytes exceeds the limit of " + std::to_string(kMaxBodyLength);
    return std::nullopt;
  }
  if (header.payload_length > kMaxPayloadLength) {
    *error = "payload of " + std::to_string(header.payload_length) +
             " bytes exceeds the limit of " + std::to_string(kMaxPayloadLength);
    return std::nullopt;
  }
  return header;
}

namespace {
std::array<std::atomic<const char*>, static_cast<std::size_t>(MessageType::kLimit)>
    layer_type_names{};
}  // namespace

void SetMessageTypeName(MessageType type, const char* name) {
  auto index = static_cast<std::size_t>(type);
  if (index < layer_type_names.size()) layer_type_names[index].store(name);
}

const char* MessageTypeName(MessageType type) {
  auto index = static_cast<std::size_t>(type);
  if (index < layer_type_names.size()) {
    if (const char* named = layer_type_names[index].load()) return named;
  }
  switch (type) {
    case MessageType::kInvalid: return "invalid";
    case MessageType::kRaw: return "raw";
    case MessageType::kShutdown: return "shutdown";
    case MessageType::kFinalize: return "finalize";
    case MessageType::kJoin: return "join";
    case MessageType::kJobTable: return "job-table";
    case MessageType::kAbort: return "abort";
    case MessageType::kError: return "error";
    case MessageType::kPing: return "ping";
    case MessageType::kLeave: return "leave";
    case MessageType::kWaitReport: return "wait-report";
    default: return "other";
  }
}

}  // namespace lmdx::net

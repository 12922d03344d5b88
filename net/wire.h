#ifndef LMDX_NET_WIRE_H_
#define LMDX_NET_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace lmdx::net {

// Every frame on every transport: this fixed header, then `body_length` bytes of a protobuf
// control body (net/wire.proto), then `payload_length` raw bytes (page contents, diffs, user
// messages) that are never copied into a protobuf field. Integers are little-endian.
//
//   offset  size  field
//        0     4  magic "LMDX"
//        4     2  wire version
//        6     2  message type (MessageType)
//        8     4  flags (FrameFlags)
//       12     4  source rank
//       16     4  destination rank
//       20     4  body length
//       24     8  payload length
//       32     8  request id (0: not a request; a reply carries its request's id)
inline constexpr std::uint32_t kWireMagic = 0x58444d4c;  // "LMDX" read as little-endian
inline constexpr std::uint16_t kWireVersion = 1;
inline constexpr std::size_t kFrameHeaderSize = 40;
// A control body is small by design; anything bigger is a broken or hostile peer.
inline constexpr std::uint32_t kMaxBodyLength = 16u << 20;
// Payloads of several GiB are fine; a length beyond this cannot be a real message.
inline constexpr std::uint64_t kMaxPayloadLength = std::uint64_t{1} << 40;

// Message types. Each layer owns a range so that later layers add theirs without renumbering.
enum class MessageType : std::uint16_t {
  kInvalid = 0,
  // net/ (1..99)
  kRaw = 1,               // lmdx_send/lmdx_recv; the payload is the user's bytes
  kShutdown = 2,          // threads style: rank 0's main returned; body Shutdown
  kFinalize = 3,          // SPMD style: collective lmdx_finalize, a request to rank 0
  kJoin = 4,              // rendezvous: a node says who it is; body Join
  kJobTable = 5,          // rendezvous: every node's addresses; body JobTable
  kAbort = 6,             // lmdx_abort on another rank; body Abort
  kError = 7,             // a reply that reports a failure; body ErrorReply
  kPing = 8,              // request/reply round trip, used by tests and liveness checks
  kLeave = 9,             // rendezvous: a node ends in order (the launcher need not stop the job)
  kWaitReport = 10,       // the hang watch asks a node what its threads wait for; WaitReport
  kHeartbeat = 11,        // rendezvous connection, both ways, every period (net/heartbeat.h)
  kFirstUnreserved = 12,  // net/ types end here
  // sync/ 100..199, dsm/ and consistency/ 200..399, threads/ 400..499, ports 500..599,
  // tasks/ 600..699.
  kFirstSync = 100,
  kFirstDsm = 200,
  kFirstThreads = 400,
  kFirstPorts = 500,
  kFirstTasks = 600,
  kLimit = 1024,  // every valid type is below this
};

enum FrameFlags : std::uint32_t {
  kFlagNone = 0,
  kFlagReply = 1u << 0,  // this frame answers the request with the same request id
  kFlagError = 1u << 1,  // a reply whose body is an ErrorReply
};

struct FrameHeader {
  std::uint16_t version = kWireVersion;
  MessageType type = MessageType::kInvalid;
  std::uint32_t flags = kFlagNone;
  std::int32_t source = -1;
  std::int32_t destination = -1;
  std::uint32_t body_length = 0;
  std::uint64_t payload_length = 0;
  std::uint64_t request_id = 0;

  bool is_reply() const { return (flags & kFlagReply) != 0; }
};

void EncodeFrameHeader(const FrameHeader& header, std::uint8_t out[kFrameHeaderSize]);

// Decodes and checks a header. On failure returns nullopt and says why in *error (bad magic,
// other wire version, lengths out of range, unknown type), for a message a user can act on.
std::optional<FrameHeader> DecodeFrameHeader(const std::uint8_t in[kFrameHeaderSize],
                                             std::string* error);

// "raw", "ping", ... and the names layers above gave their types ("sc-acquire"); "other" else.
const char* MessageTypeName(MessageType type);
// Names a layer's message type for statistics and logs; name must outlive the process (a literal).
void SetMessageTypeName(MessageType type, const char* name);

}  // namespace lmdx::net

#endif  // LMDX_NET_WIRE_H_

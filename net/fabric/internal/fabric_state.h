#ifndef LMDX_NET_FABRIC_INTERNAL_FABRIC_STATE_H_
#define LMDX_NET_FABRIC_INTERNAL_FABRIC_STATE_H_

// What the fabric transport's files share: the records of frames and reads under way, and of
// each peer. Only net/fabric_*.cc include it.

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "net/fabric/fabric_transport.h"
#include "net/fabric/internal/ucx_am_header.h"

namespace lmdx::net {

inline std::string RankText(int rank) { return "rank " + std::to_string(rank); }

// A frame on its way: kept whole until UCX no longer needs its memory.
struct FabricTransport::SendOp {
  FabricTransport* owner = nullptr;
  OutgoingMessage message;
  std::vector<std::uint8_t> header;     // the active message's header
  std::vector<std::uint8_t> body_data;  // body and payload, when the body is in the data
};

// A one-sided read under way.
struct FabricTransport::GetOp {
  FabricTransport* owner = nullptr;
  std::function<void(bool)> on_done;
};

// A frame that arrived, waiting until every frame before it from its peer has been handed over.
struct FabricTransport::Inbound {
  enum class State {
    kHeld,        // the data is in memory (UCX's, or copied): copy it out and hand it over
    kRendezvous,  // the data is still at the sender: fetch it
    kFetching,
    kFetched,  // ready to hand over
    kFailed,
  };
  FabricTransport* owner = nullptr;
  int source = -1;
  State state = State::kHeld;
  bool goodbye = false;
  bool body_in_data = false;
  InboundMessage message;  // header, and the body when it came in the header
  void* data = nullptr;    // kHeld: the bytes; kRendezvous: UCX's descriptor
  std::size_t length = 0;
  bool release_data = false;         // kHeld: data is UCX's, released after the copy
  internal::PayloadBuffer own_data;  // a copy, or the fetch of body and payload
  std::string failure;
  // kRendezvous: when the wait for a receive to place the payload in ends (ms, MonotonicMs);
  // -1 until the first attempt found none.
  std::int64_t place_by_ms = -1;
};

// A small frame that came next in its pair's order with nothing of its peer queued before it
// (FabricTransport::Arrived): its bytes are copied out of UCX's memory in the callback, which
// lets UCX take its memory back at once, and it is handed over after the same trip through the
// lock that brought it in. The slower way (an Inbound in its peer's map, a look for its turn, a
// copy into a buffer of its own and a release of UCX's memory) took four more trips through the
// lock and four allocations: a third of the time from a small frame's arrival to its receive's
// return over UCX's shared memory.
struct FabricTransport::QuickFrame {
  static constexpr std::size_t kMaxBytes = 512;  // body and payload
  // Provided, not defaulted: emplace_back() value-initializes, which would zero all of bytes
  // first (552 bytes), a quarter of the callback's time for an 8-byte message. A frame fills
  // only what it carries.
  QuickFrame() {}  // NOLINT(modernize-use-equals-default)
  FrameHeader header;
  std::array<std::uint8_t, kMaxBytes> bytes;  // the body, then the payload
};

struct FabricTransport::Peer {
  FabricTransport* owner = nullptr;
  int rank = -1;
  std::string address;  // the peer worker's address, from the job table
  bool same_host = false;
  ucp_ep_h endpoint = nullptr;
  std::uint64_t send_token = 0;
  std::uint64_t receive_token = 0;
  std::uint64_t next_send = 0;
  std::uint64_t next_receive = 0;
  std::map<std::uint64_t, std::unique_ptr<Inbound>> arrived;  // by sequence number
  std::map<std::string, ucp_rkey_h> keys;  // the peer's packed keys, unpacked for endpoint
  bool lost = false;
  // Its large raw messages wait at the sender for their receives (RendezvousTarget); off after a
  // wait ran out, on again once one finds its receive posted ahead.
  bool waits_for_receives = true;
  std::uint8_t goodbye[internal::kAmPrefixSize] = {};
};

}  // namespace lmdx::net

#endif  // LMDX_NET_FABRIC_INTERNAL_FABRIC_STATE_H_

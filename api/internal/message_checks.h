// The checks of a raw message's rank, tag, network hint and buffer, shared by the blocking calls
// (messages.cc) and the non-blocking ones (requests.cc).
#ifndef LMDX_API_INTERNAL_MESSAGE_CHECKS_H_
#define LMDX_API_INTERNAL_MESSAGE_CHECKS_H_

#include <lmdx/lmdx.h>

#include <string>
#include <string_view>

#include <memory>

#include "base/error.h"
#include "dsm/service.h"
#include "net/node.h"

namespace lmdx::api {

inline void CheckRank(const net::Node& node, int rank, bool any_allowed, const char* what) {
  if (any_allowed && rank == LMDX_ANY_SOURCE) return;
  if (rank < 0 || rank >= node.size()) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, std::string(what) + " " + std::to_string(rank) +
                                               " is not a rank of this job (0 to " +
                                               std::to_string(node.size() - 1) + ")");
  }
}

inline void CheckTag(int tag, bool any_allowed) {
  if (tag >= 0 || (any_allowed && tag == LMDX_ANY_TAG)) return;
  throw Error(LMDX_ERR_INVALID_ARGUMENT,
              "tag " + std::to_string(tag) + " is negative" +
                  (any_allowed ? " (LMDX_ANY_TAG, -1, takes any tag)" : std::string()));
}

// The network an lmdx_net_hint names; empty for LMDX_NET_ANY.
inline std::string_view HintedNetwork(int hint) {
  switch (hint) {
    case LMDX_NET_ANY: return {};
    case LMDX_NET_TCP: return "tcp";
    case LMDX_NET_UDP: return "udp";
    case LMDX_NET_SHM: return "shm";
    case LMDX_NET_FABRIC: return "fabric";
    default:
      throw Error(LMDX_ERR_INVALID_ARGUMENT,
                  "network hint " + std::to_string(hint) +
                      " is none of LMDX_NET_ANY, _TCP, _UDP, _SHM, _FABRIC (0 to 4)");
  }
}

// A raw send's checked arguments and its payload. The transports read the buffer without faulting
// pages in: a shared buffer is copied out through the protocol, and the payload owns the copy.
struct CheckedSend {
  std::string_view network;
  net::Payload payload;
};
inline CheckedSend CheckSend(const net::Node& node, int dest, int tag, const void* buffer,
                             std::size_t length, int hint) {
  CheckRank(node, dest, /*any_allowed=*/false, "destination");
  CheckTag(tag, /*any_allowed=*/false);
  CheckedSend send{HintedNetwork(hint), net::Payload{buffer, length, nullptr}};
  if (buffer == nullptr && length > 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                "the buffer is NULL but its length is " + std::to_string(length));
  }
  dsm::Service* dsm = dsm::Current();
  if (dsm != nullptr && length > 0 && dsm->Contains(buffer)) {
    auto copy = std::make_shared_for_overwrite<std::byte[]>(length);
    dsm->Get(copy.get(), buffer, length);
    send.payload = net::Payload{copy.get(), length, std::shared_ptr<const void>(copy, copy.get())};
  }
  return send;
}

// A raw receive's checks; true when buffer is in shared memory, where the transports cannot
// write (it receives through private staging and a put).
inline bool CheckReceive(const net::Node& node, int source, int tag, const void* buffer,
                         std::size_t capacity) {
  CheckRank(node, source, /*any_allowed=*/true, "source");
  CheckTag(tag, /*any_allowed=*/true);
  if (buffer == nullptr && capacity > 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                "the buffer is NULL but its capacity is " + std::to_string(capacity));
  }
  dsm::Service* dsm = dsm::Current();
  return dsm != nullptr && capacity > 0 && dsm->Contains(buffer);
}

}  // namespace lmdx::api

#endif  // LMDX_API_INTERNAL_MESSAGE_CHECKS_H_

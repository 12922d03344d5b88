// The checks of a raw message's rank, tag and network hint, shared by the blocking calls
// (messages.cc) and the non-blocking ones (requests.cc).
#ifndef LMDX_API_INTERNAL_MESSAGE_CHECKS_H_
#define LMDX_API_INTERNAL_MESSAGE_CHECKS_H_

#include <lmdx/lmdx.h>

#include <string>
#include <string_view>

#include "base/error.h"
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

}  // namespace lmdx::api

#endif  // LMDX_API_INTERNAL_MESSAGE_CHECKS_H_

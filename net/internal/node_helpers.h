// Small helpers of net::Node's files (node.cc, node_messages.cc): a rank's name in messages, a
// network's index among the preferences, and the dispatcher's counter additions.
#ifndef LMDX_NET_INTERNAL_NODE_HELPERS_H_
#define LMDX_NET_INTERNAL_NODE_HELPERS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/transport_choice.h"

namespace lmdx::net::internal {

inline std::string Rank(int rank) { return "rank " + std::to_string(rank); }

// The index of network in kNetworkPreference, or -1.
inline int NetworkIndex(std::string_view network) {
  for (std::size_t i = 0; i < kNetworkPreference.size(); ++i) {
    if (kNetworkPreference[i] == network) return static_cast<int>(i);
  }
  return -1;
}

// Adds to a counter only the dispatching thread writes: frames are delivered by one thread at a
// time (the progress engine's dispatch lock), so a plain load and store do; an atomic addition,
// a locked instruction, was three of them on every received message's path. Readers still see
// whole values.
inline void AddAsDispatcher(std::atomic<std::uint64_t>& counter, std::uint64_t amount) {
  counter.store(counter.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_INTERNAL_NODE_HELPERS_H_

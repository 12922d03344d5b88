#ifndef LMDX_NET_INTERNAL_CLOSE_CONNECTIONS_H_
#define LMDX_NET_INTERNAL_CLOSE_CONNECTIONS_H_

#include <mutex>
#include <string>
#include <vector>

namespace lmdx::net::internal {

// Closes each of a transport's connections (a set of shared pointers guarded by mutex) whose
// authenticated peer is rank. The closes run outside the lock: a close fails the frames its
// connection still queued, and their callbacks may send through the transport again.
template <typename Connections>
void CloseConnectionsTo(std::mutex& mutex, const Connections& connections, int rank,
                        const std::string& why) {
  std::vector<typename Connections::value_type> closing;
  {
    std::lock_guard lock(mutex);
    for (const auto& connection : connections) {
      if (connection->peer_rank() == rank) closing.push_back(connection);
    }
  }
  for (const auto& connection : closing) connection->Close(why);
}

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_INTERNAL_CLOSE_CONNECTIONS_H_

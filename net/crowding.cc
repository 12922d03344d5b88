#include "net/crowding.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>

namespace lmdx::net::crowding {
namespace {

std::atomic<int> scale{1};

long Cores() {
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? cores : 1;
}

}  // namespace

int ScaleFor(long nodes, long cores) {
  const long room = std::max(cores, 1L) * kNodesPerCore;
  return static_cast<int>(std::max(1L, (nodes + room - 1) / room));
}

int Scale() { return scale.load(std::memory_order_relaxed); }

int Scaled(int base_ms) { return base_ms * Scale(); }

void AssumeAllHere(int size) { scale.store(ScaleFor(size, Cores()), std::memory_order_relaxed); }

void Learn(const wire::JobTable& table) {
  std::map<std::string, long> nodes_by_host;
  long most = 0;
  for (const wire::NodeInfo& node : table.nodes())
    most = std::max(most, ++nodes_by_host[node.host()]);
  scale.store(ScaleFor(most, Cores()), std::memory_order_relaxed);
}

}  // namespace lmdx::net::crowding

// What a page's home knows of the other nodes' copies of it. A page gets an entry when another
// node first fetches it; from then on the home must notice its own writes to the page (the other
// copies must hear of them), while a page with no entry is the home's alone and written with no
// fault at all. Copies are never forgotten (a node that dropped its copy only gets a notice it
// has no use for): under rc, a home that forgot the copies one writer is invalidating would let
// a second writer's release complete while they are still readable, and a node that takes the
// second writer's lock would read its stale copy.
#ifndef LMDX_CONSISTENCY_HOME_BASED_INTERNAL_HOME_DIRECTORY_H_
#define LMDX_CONSISTENCY_HOME_BASED_INTERNAL_HOME_DIRECTORY_H_

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "consistency/protocol.h"

namespace lmdx::consistency::internal {

class HomeDirectory {
 public:
  HomeDirectory() = default;

  // Records node's copy; true when the page had no entry before (it was the home's alone).
  bool AddCopy(PageId page, int node) {
    std::lock_guard lock(mutex_);
    auto [entry, created] = copies_.try_emplace(page);
    if (std::find(entry->second.begin(), entry->second.end(), node) == entry->second.end()) {
      entry->second.push_back(node);
    }
    return created;
  }

  bool Shared(PageId page) const {
    std::lock_guard lock(mutex_);
    return copies_.contains(page);
  }

  // The nodes holding a copy other than `writer`.
  std::vector<int> OthersThan(PageId page, int writer) const {
    std::lock_guard lock(mutex_);
    auto entry = copies_.find(page);
    if (entry == copies_.end()) return {};
    std::vector<int> others;
    for (int node : entry->second) {
      if (node != writer) others.push_back(node);
    }
    return others;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<PageId, std::vector<int>> copies_;
};

}  // namespace lmdx::consistency::internal

#endif  // LMDX_CONSISTENCY_HOME_BASED_INTERNAL_HOME_DIRECTORY_H_

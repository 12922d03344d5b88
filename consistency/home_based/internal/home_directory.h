// What a page's home knows of the other nodes' copies of it. A page gets an entry when another
// node first fetches it; from then on the home must notice its own writes to the page (the other
// copies must hear of them), while a page with no entry is the home's alone and written with no
// fault at all. Copies are never forgotten under update and hlrc (a node that dropped its copy
// only gets a notice it has no use for); rc forgets the copies it invalidates.
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
  explicit HomeDirectory(int home) : home_(home) {}

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

  // The nodes holding a copy other than `writer`; with forget, they are dropped from the entry
  // (their copies are about to be invalidated), and the writer stays.
  std::vector<int> OthersThan(PageId page, int writer, bool forget) {
    std::lock_guard lock(mutex_);
    auto entry = copies_.find(page);
    if (entry == copies_.end()) return {};
    std::vector<int> others;
    for (int node : entry->second) {
      if (node != writer) others.push_back(node);
    }
    if (forget) {
      bool writer_held = others.size() != entry->second.size();
      entry->second.clear();
      if (writer_held) {
        entry->second.push_back(writer);
      } else if (writer == home_) {
        // No copy is left: the page is the home's alone again, and its writes stop faulting.
        copies_.erase(entry);
      }
    }
    return others;
  }

 private:
  int home_;
  mutable std::mutex mutex_;
  std::unordered_map<PageId, std::vector<int>> copies_;
};

}  // namespace lmdx::consistency::internal

#endif  // LMDX_CONSISTENCY_HOME_BASED_INTERNAL_HOME_DIRECTORY_H_

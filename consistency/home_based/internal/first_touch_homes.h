// Homes that follow the data: in a FIRST_TOUCH region the node that touches a page first becomes
// its home, so a node that fills its own part of the data writes it in place, with no twin, no
// diff and no fault after the first, as a home does (the home-based protocols' cheapest case).
//
// The page's placement names a manager (pages dealt out like CYCLIC) that decides: the first
// claim it hears wins. Every node keeps the homes it has learnt, so a page costs one request to
// its manager per node, at that node's first fault on it; the manager's own map is the record.
#ifndef LMDX_CONSISTENCY_HOME_BASED_INTERNAL_FIRST_TOUCH_HOMES_H_
#define LMDX_CONSISTENCY_HOME_BASED_INTERNAL_FIRST_TOUCH_HOMES_H_

#include <mutex>
#include <optional>
#include <unordered_map>

#include "consistency/protocol.h"

namespace lmdx::consistency::internal {

class FirstTouchHomes {
 public:
  // The manager: the page's home, which becomes claimant when the page has none.
  int Claim(PageId page, int claimant) {
    std::lock_guard lock(mutex_);
    return homes_.try_emplace(page, claimant).first->second;
  }
  std::optional<int> Known(PageId page) const {
    std::lock_guard lock(mutex_);
    auto found = homes_.find(page);
    if (found == homes_.end()) return std::nullopt;
    return found->second;
  }
  // Another node: what the page's manager answered.
  void Learn(PageId page, int home) {
    std::lock_guard lock(mutex_);
    homes_.emplace(page, home);
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<PageId, int> homes_;
};

}  // namespace lmdx::consistency::internal

#endif  // LMDX_CONSISTENCY_HOME_BASED_INTERNAL_FIRST_TOUCH_HOMES_H_

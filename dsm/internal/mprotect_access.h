// Page access through mprotect: the portable path (see page_access.h). Every run of pages with
// one protection is a memory mapping, and the kernel caps their number per process; the view's
// runs are kept within a budget below the cap by closing pages the protocol lets the node use,
// which a fault then opens again (protection_runs.h).
#ifndef LMDX_DSM_INTERNAL_MPROTECT_ACCESS_H_
#define LMDX_DSM_INTERNAL_MPROTECT_ACCESS_H_

#include <cstdint>
#include <mutex>
#include <vector>

#include "dsm/internal/protection_runs.h"
#include "dsm/page_access.h"

namespace lmdx::dsm::internal {

// The mappings the view may take: three quarters of vm.max_map_count (65,530 where it cannot be
// read); the rest of the process (libraries, thread stacks, the allocator's and the transports'
// mappings) keeps a quarter.
std::uint64_t ViewMappingBudget();

class MprotectAccess final : public PageAccess {
 public:
  // view: the application's view, bytes long, mapped with no access.
  MprotectAccess(std::byte* view, std::uint64_t bytes, std::uint64_t mapping_budget);

  AccessControl kind() const override { return AccessControl::kMprotect; }
  void Set(std::byte* first, std::uint64_t pages, consistency::Access access) override;
  bool reports_access_type() const override { return false; }
  void Restore(std::byte* page, consistency::Access access) override { Set(page, 1, access); }
  bool OpenIfNarrowed(std::byte* page) override;
  MappingFigures mapping_figures() const override;

 private:
  // Applies changes_ in order and empties it; callers hold mutex_.
  void Apply();
  // One mprotect: 0, or its errno.
  int Protect(const ProtectionRuns::Change& change);

  std::byte* view_;
  std::uint64_t page_bytes_;
  // One lock for the bookkeeping and the mprotect calls it orders: the kernel's state must change
  // in the order the bookkeeping did. mprotect serializes on the process's memory map anyway.
  mutable std::mutex mutex_;
  ProtectionRuns runs_;
  std::vector<ProtectionRuns::Change> changes_;  // reused: no allocation on the common path
};

}  // namespace lmdx::dsm::internal

#endif  // LMDX_DSM_INTERNAL_MPROTECT_ACCESS_H_

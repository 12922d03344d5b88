// Page access through mprotect: the portable path (see page_access.h).
#ifndef LMDX_DSM_INTERNAL_MPROTECT_ACCESS_H_
#define LMDX_DSM_INTERNAL_MPROTECT_ACCESS_H_

#include "dsm/page_access.h"

namespace lmdx::dsm::internal {

class MprotectAccess final : public PageAccess {
 public:
  AccessControl kind() const override { return AccessControl::kMprotect; }
  void Set(std::byte* first, std::uint64_t pages, consistency::Access access) override;
  bool reports_access_type() const override { return false; }
  void Restore(std::byte* page, consistency::Access access) override { Set(page, 1, access); }
};

}  // namespace lmdx::dsm::internal

#endif  // LMDX_DSM_INTERNAL_MPROTECT_ACCESS_H_

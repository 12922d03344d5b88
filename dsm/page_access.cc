#include "dsm/page_access.h"

#include "base/error.h"
#include "dsm/internal/mprotect_access.h"
#include "dsm/internal/userfault_access.h"

namespace lmdx::dsm {

const char* AccessControlName(AccessControl control) {
  switch (control) {
    case AccessControl::kAuto: return "auto";
    case AccessControl::kUserfaultfd: return "userfaultfd";
    case AccessControl::kMprotect: return "mprotect";
  }
  return "?";
}

std::unique_ptr<PageAccess> MakePageAccess(AccessControl wanted, std::byte* view,
                                           std::uint64_t bytes, int memory) {
  if (wanted != AccessControl::kMprotect) {
    std::string why;
    if (auto access = internal::UserfaultAccess::Open(view, bytes, memory, why)) return access;
    if (wanted == AccessControl::kUserfaultfd) {
      throw Error(LMDX_ERR_INVALID_ARGUMENT, "LMDX_DSM_ACCESS=userfaultfd cannot be had: " + why +
                                                 "; LMDX_DSM_ACCESS=mprotect works everywhere");
    }
  }
  return std::make_unique<internal::MprotectAccess>(view, bytes, internal::ViewMappingBudget());
}

}  // namespace lmdx::dsm

#include "dsm/internal/mprotect_access.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "base/error.h"

namespace lmdx::dsm::internal {
namespace {

int ProtectionOf(consistency::Access access) {
  switch (access) {
    case consistency::Access::kNone: return PROT_NONE;
    case consistency::Access::kRead: return PROT_READ;
    case consistency::Access::kWrite: return PROT_READ | PROT_WRITE;
  }
  return PROT_NONE;
}

}  // namespace

void MprotectAccess::Set(std::byte* first, std::uint64_t pages, consistency::Access access) {
  static const std::uint64_t page_bytes = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  if (::mprotect(first, pages * page_bytes, ProtectionOf(access)) == 0) return;
  int saved = errno;
  char where[32];
  std::snprintf(where, sizeof where, "%p", static_cast<void*>(first));
  std::string what = "mprotect of " + std::to_string(pages) + " pages at " + where;
  if (saved == ENOMEM) {
    // Each run of pages with its own protection is a mapping, and the kernel caps their number.
    throw Error(LMDX_ERR_NO_MEMORY,
                what +
                    " needs one more memory mapping than the kernel allows a process "
                    "(vm.max_map_count): the program's valid and invalid shared pages "
                    "alternate too finely for page protection by mprotect; run with "
                    "LMDX_DSM_ACCESS=userfaultfd (Linux 5.19 or later), which keeps no "
                    "mapping per page");
  }
  ThrowSystemError(what, saved, LMDX_ERR_INTERNAL);
}

}  // namespace lmdx::dsm::internal

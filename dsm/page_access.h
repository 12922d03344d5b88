// How the application's view of the shared range gets each page's access (none, read, write).
//
// Two mechanisms, chosen when the node starts:
// - userfaultfd (Linux 5.19+ on shared memory): access is set per page table entry. An invalid page
//   has no entry (zapped), a readable one is write-protected, a writable one is plain. No memory
//   mapping is split, so scattered protections never meet the kernel's limit of mappings per
//   process (vm.max_map_count, 65,530), and a fault costs about 5 µs instead of about 20.
// - mprotect (portable): every run of pages with its own protection is a mapping of its own, so a
//   program whose valid and invalid pages alternate over more than about 65,000 runs cannot be
//   served (the error says so).
#ifndef LMDX_DSM_PAGE_ACCESS_H_
#define LMDX_DSM_PAGE_ACCESS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "consistency/protocol.h"

namespace lmdx::dsm {

enum class AccessControl : std::uint8_t {
  kAuto = 0,  // userfaultfd where the kernel offers it, mprotect elsewhere
  kUserfaultfd = 1,
  kMprotect = 2,
};

const char* AccessControlName(AccessControl control);

class PageAccess {
 public:
  virtual ~PageAccess() = default;
  virtual AccessControl kind() const = 0;
  // Sets the application's access to `pages` pages from `first` (page aligned).
  virtual void Set(std::byte* first, std::uint64_t pages, consistency::Access access) = 0;
  // True when a fault says whether it was a read or a write, and may come for a page whose
  // access already allows it (its entry was never made, or the kernel dropped it): then the
  // handler calls Restore instead of asking the protocol.
  virtual bool reports_access_type() const = 0;
  // Makes the entry of one page match `access` again, allocating it if it was never touched.
  virtual void Restore(std::byte* page, consistency::Access access) = 0;
};

// The application's view is `view`, a shared mapping of `memory` (a memfd) at offset 0, mapped
// with no access. kAuto falls back to mprotect when userfaultfd is missing or refused; an explicit
// kUserfaultfd that cannot be had throws lmdx::Error saying why.
std::unique_ptr<PageAccess> MakePageAccess(AccessControl wanted, std::byte* view,
                                           std::uint64_t bytes, int memory);

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_PAGE_ACCESS_H_

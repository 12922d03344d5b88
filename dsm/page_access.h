// How the application's view of the shared range gets each page's access (none, read, write).
//
// Two mechanisms, chosen when the node starts:
// - userfaultfd (Linux 6.3+ on shared memory): access is set per page table entry. An invalid page
//   has no entry (zapped), a readable one is write-protected, a writable one is plain. No memory
//   mapping is split, so scattered protections never meet the kernel's limit of mappings per
//   process (vm.max_map_count, 65,530), and a fault costs about 5 µs instead of about 20.
// - mprotect (portable): every run of pages with its own protection is a mapping of its own. The
//   view's runs are kept within a budget below the limit by closing pages the node may use; a
//   fault on such a page opens it again with no protocol work (OpenIfNarrowed), so the same
//   programs run, at the price of those faults once the budget is reached.
#ifndef LMDX_DSM_PAGE_ACCESS_H_
#define LMDX_DSM_PAGE_ACCESS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "consistency/protocol.h"

namespace lmdx::dsm {

// How many mappings the view took under mprotect (zeros under userfaultfd, which splits none).
struct MappingFigures {
  std::uint64_t budget = 0;        // the runs of pages allowed before pages are closed
  std::uint64_t runs = 0;          // the runs now: the view's mappings
  std::uint64_t peak_runs = 0;     // the most runs at once
  std::uint64_t pages_closed = 0;  // pages made stricter than their access, each time they were
};

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
  // Sets the application's access to `pages` pages from `first` (page aligned). Under mprotect
  // the protection may end stricter than `access`, never looser (see OpenIfNarrowed).
  virtual void Set(std::byte* first, std::uint64_t pages, consistency::Access access) = 0;
  // True when a fault says whether it was a read or a write, and may come for a page whose
  // access already allows it (its entry was never made, or the kernel dropped it): then the
  // handler calls Restore instead of asking the protocol.
  virtual bool reports_access_type() const = 0;
  // Makes the entry of one page match `access` again, allocating it if it was never touched.
  virtual void Restore(std::byte* page, consistency::Access access) = 0;
  // After a fault that Restore served (a first touch, mostly): how many of the `pages` pages from
  // `first` have no entry, counted from the first, with the memory behind them allocated in one
  // call, so that MapUntouched can give each its entry before the thread walks into it. 0 where a
  // first touch costs no fault of the handler's (mprotect: the kernel maps it by itself).
  virtual std::uint64_t PrepareUntouched(std::byte* first, std::uint64_t pages) {
    (void)first;
    (void)pages;
    return 0;
  }
  // Gives page, prepared by PrepareUntouched, an entry with `access` if it still has none.
  virtual void MapUntouched(std::byte* page, consistency::Access access) {
    (void)page;
    (void)access;
  }
  // True when page's protection was stricter than the access last Set (mprotect closes pages to
  // keep the view's mappings within the kernel's limit): it is opened to that access again and
  // the faulting access is retried. False when the fault is the protocol's to serve.
  virtual bool OpenIfNarrowed(std::byte* page) {
    (void)page;
    return false;
  }
  virtual MappingFigures mapping_figures() const { return {}; }
};

// The application's view is `view`, a shared mapping of `memory` (a memfd) at offset 0, mapped
// with no access. kAuto falls back to mprotect when userfaultfd is missing or refused; an explicit
// kUserfaultfd that cannot be had throws lmdx::Error saying why.
std::unique_ptr<PageAccess> MakePageAccess(AccessControl wanted, std::byte* view,
                                           std::uint64_t bytes, int memory);

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_PAGE_ACCESS_H_

// Page access through userfaultfd (see page_access.h): per page table entry, with faults
// delivered as SIGBUS to the faulting thread (UFFD_FEATURE_SIGBUS), so that the thread itself
// serves its fault as under mprotect, and no handler thread is needed.
#ifndef LMDX_DSM_INTERNAL_USERFAULT_ACCESS_H_
#define LMDX_DSM_INTERNAL_USERFAULT_ACCESS_H_

#include <memory>
#include <string>

#include "base/fd.h"
#include "dsm/page_access.h"

namespace lmdx::dsm::internal {

class UserfaultAccess final : public PageAccess {
 public:
  // Registers view (mapped with no access) and opens it for reading and writing, which the page
  // table entries then restrict. Returns nullptr and sets why when the kernel cannot do it.
  static std::unique_ptr<UserfaultAccess> Open(std::byte* view, std::uint64_t bytes, int memory,
                                               std::string& why);

  AccessControl kind() const override { return AccessControl::kUserfaultfd; }
  void Set(std::byte* first, std::uint64_t pages, consistency::Access access) override;
  bool reports_access_type() const override { return true; }
  void Restore(std::byte* page, consistency::Access access) override;
  std::uint64_t PrepareUntouched(std::byte* first, std::uint64_t pages) override;
  void MapUntouched(std::byte* page, consistency::Access access) override;

 private:
  UserfaultAccess(Fd fault_fd, Fd pagemap, std::byte* view, int memory);
  // Write-protects (or opens) the pages of the range that have an entry.
  void WriteProtect(std::byte* first, std::uint64_t bytes, bool protect);
  // Makes entries for the pages of the range that have none, read-only or writable. Pages never
  // touched on any node (holes in the memory) are left without one unless allocate: their first
  // touch faults and Restore allocates them, so opening a large fresh range commits nothing.
  void MapMissing(std::byte* first, std::uint64_t pages, bool read_only, bool allocate);
  void Continue(std::byte* first, std::byte* end, bool read_only, bool allocate);
  // Whether each page of the range has an entry, from /proc/self/pagemap.
  void ReadPresence(std::byte* first, std::uint64_t pages, std::uint64_t* entries);

  Fd fault_fd_;
  Fd pagemap_;
  std::byte* view_;
  int memory_;
  std::uint64_t page_bytes_;
};

}  // namespace lmdx::dsm::internal

#endif  // LMDX_DSM_INTERNAL_USERFAULT_ACCESS_H_

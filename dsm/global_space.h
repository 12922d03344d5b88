// The global address range of a job, as one node holds it (blueprint section 5).
//
// Every node maps the range at the same virtual address, so a pointer into shared memory means
// the same data everywhere. The memory behind it is a memfd mapped twice: the application's view
// at the fixed address, whose page protections the consistency protocol sets, and the system view
// at an address of the kernel's choice, always readable and writable, where the runtime reads and
// fills page contents without faulting. Nothing is committed until a page is touched.
//
// Layout: the first quarter holds named variables and collective allocations (placed by rank 0);
// the rest is split into one heap slice per node.
#ifndef LMDX_DSM_GLOBAL_SPACE_H_
#define LMDX_DSM_GLOBAL_SPACE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/fd.h"
#include "base/mapping.h"
#include "consistency/protocol.h"
#include "dsm/page_access.h"

namespace lmdx::dsm {

using consistency::PageId;

class GlobalSpace {
 public:
  // Reserves bytes at base for a job of `size` nodes; throws lmdx::Error(LMDX_ERR_NO_MEMORY) with
  // the reason when the range cannot be had (taken by another mapping, beyond the address space).
  // access chooses how page protections are set (page_access.h).
  GlobalSpace(std::uintptr_t base, std::uint64_t bytes, int size,
              AccessControl access = AccessControl::kAuto);

  std::size_t page_bytes() const { return page_bytes_; }
  // The memory file behind both views (a peer of this host maps it: dsm/home_access.h).
  int memory_file() const { return memory_.get(); }
  std::uint64_t page_count() const { return page_count_; }
  std::uintptr_t base() const { return base_; }
  std::uint64_t bytes() const { return page_count_ * page_bytes_; }

  bool Contains(const void* address) const {
    auto value = reinterpret_cast<std::uintptr_t>(address);
    return value >= base_ && value - base_ < bytes();
  }
  PageId PageOf(const void* address) const {
    return (reinterpret_cast<std::uintptr_t>(address) - base_) / page_bytes_;
  }
  std::byte* AppView(PageId page) const { return app_view_.data() + page * page_bytes_; }
  std::byte* SystemView(PageId page) const { return system_view_.data() + page * page_bytes_; }
  // The system view's address of an application address inside the range.
  std::byte* SystemAddress(const void* address) const {
    return system_view_.data() + (reinterpret_cast<std::uintptr_t>(address) - base_);
  }
  void Protect(PageId first, std::uint64_t count, consistency::Access access) {
    access_->Set(AppView(first), count, access);
  }
  // See PageAccess: faults that say read or write, and the repair of a page's entry.
  bool faults_report_access_type() const { return access_->reports_access_type(); }
  void Restore(PageId page, consistency::Access access) { access_->Restore(AppView(page), access); }
  // PageAccess::PrepareUntouched and MapUntouched.
  std::uint64_t PrepareUntouched(PageId first, std::uint64_t count) {
    return access_->PrepareUntouched(AppView(first), count);
  }
  void MapUntouched(PageId page, consistency::Access access) {
    access_->MapUntouched(AppView(page), access);
  }
  // Under mprotect: opens page when it was closed to keep the view's mappings within the kernel's
  // limit (PageAccess::OpenIfNarrowed).
  bool OpenIfNarrowed(PageId page) { return access_->OpenIfNarrowed(AppView(page)); }
  MappingFigures mapping_figures() const { return access_->mapping_figures(); }
  AccessControl access_control() const { return access_->kind(); }

  // Named variables and collective allocations: pages [0, variable_pages()).
  std::uint64_t variable_pages() const { return variable_pages_; }
  // Node r's heap slice: pages [HeapSliceFirst(r), HeapSliceFirst(r) + heap_slice_pages()).
  std::uint64_t heap_slice_pages() const { return heap_slice_pages_; }
  PageId HeapSliceFirst(int rank) const {
    return variable_pages_ + static_cast<std::uint64_t>(rank) * heap_slice_pages_;
  }
  // The node whose slice holds page, or -1 outside every slice.
  int HeapOwnerOf(PageId page) const;

 private:
  std::size_t page_bytes_;
  std::uintptr_t base_;
  std::uint64_t page_count_;
  std::uint64_t variable_pages_;
  std::uint64_t heap_slice_pages_;
  int size_;
  Fd memory_;
  Mapping app_view_;
  Mapping system_view_;
  std::unique_ptr<PageAccess> access_;  // before the views go: it unregisters the range
};

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_GLOBAL_SPACE_H_

#include "dsm/global_space.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "base/error.h"

namespace lmdx::dsm {
namespace {

std::string Hex(std::uintptr_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%lx", static_cast<unsigned long>(value));
  return text;
}

std::string Describe(std::uintptr_t base, std::uint64_t bytes) {
  return "the global range " + Hex(base) + "-" + Hex(base + bytes) + " (" +
         std::to_string(bytes >> 20) + " MiB)";
}

}  // namespace

GlobalSpace::GlobalSpace(std::uintptr_t base, std::uint64_t bytes, int size, AccessControl access)
    : page_bytes_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))), base_(base), size_(size) {
  if (base % page_bytes_ != 0 || bytes < page_bytes_ * 4 * static_cast<std::uint64_t>(size)) {
    throw Error(LMDX_ERR_NO_MEMORY, Describe(base, bytes) +
                                        " is not page aligned or too small for " +
                                        std::to_string(size) + " nodes");
  }
  page_count_ = bytes / page_bytes_;
  variable_pages_ = page_count_ / 4;
  heap_slice_pages_ = (page_count_ - variable_pages_) / static_cast<std::uint64_t>(size);

  // memfd_create reserves nothing: pages are allocated as they are first written.
  memory_.reset(::memfd_create("lmdx-dsm", MFD_CLOEXEC));
  if (!memory_) ThrowSystemError("cannot create the DSM's memory", errno, LMDX_ERR_NO_MEMORY);
  if (::ftruncate(memory_.get(), static_cast<off_t>(this->bytes())) != 0) {
    ThrowSystemError("cannot size the DSM's memory to " + std::to_string(bytes >> 20) + " MiB",
                     errno, LMDX_ERR_NO_MEMORY);
  }
  void* app = ::mmap(reinterpret_cast<void*>(base), this->bytes(), PROT_NONE,
                     MAP_SHARED | MAP_NORESERVE | MAP_FIXED_NOREPLACE, memory_.get(), 0);
  if (app == MAP_FAILED) {
    int saved = errno;
    std::string why = saved == EEXIST
                          ? "something else is already mapped there in this process; choose "
                            "another address with LMDX_DSM_BASE or dsm.base in the configuration"
                          : SystemErrorText("mmap", saved) +
                                "; a smaller LMDX_DSM_SIZE or another LMDX_DSM_BASE may fit";
    throw Error(LMDX_ERR_NO_MEMORY, "cannot reserve " + Describe(base, this->bytes()) + ": " + why);
  }
  app_view_ = Mapping(app, this->bytes());
  if (app != reinterpret_cast<void*>(base)) {
    // Kernels before 4.17 ignore MAP_FIXED_NOREPLACE and treat the address as a hint.
    throw Error(LMDX_ERR_NO_MEMORY, "cannot reserve " + Describe(base, this->bytes()) +
                                        ": the kernel placed it at " +
                                        Hex(reinterpret_cast<std::uintptr_t>(app)));
  }
  void* system = ::mmap(nullptr, this->bytes(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                        memory_.get(), 0);
  if (system == MAP_FAILED) {
    ThrowSystemError("cannot map the DSM's system view", errno, LMDX_ERR_NO_MEMORY);
  }
  system_view_ = Mapping(system, this->bytes());
  // A child of fork() gets neither view: shared memory is the node's, and a child that kept the
  // application view would read pages behind the protocol's back (under userfaultfd the child's
  // copy of the mapping is not registered, so it is plainly readable and writable) or serve its
  // faults on the parent's connections. Without a mapping its first touch faults, and the fault
  // handler ends it with a line that names fork (service.cc). A child that execs loses nothing.
  for (const Mapping* view : {&app_view_, &system_view_}) {
    if (::madvise(view->data(), this->bytes(), MADV_DONTFORK) != 0) {
      ThrowSystemError("cannot keep " + Describe(base, this->bytes()) + " from children of fork",
                       errno, LMDX_ERR_NO_MEMORY);
    }
  }
  access_ = MakePageAccess(access, app_view_.data(), this->bytes(), memory_.get());
}

int GlobalSpace::HeapOwnerOf(PageId page) const {
  if (page < variable_pages_) return -1;
  std::uint64_t owner = (page - variable_pages_) / heap_slice_pages_;
  return owner < static_cast<std::uint64_t>(size_) ? static_cast<int>(owner) : -1;
}

}  // namespace lmdx::dsm

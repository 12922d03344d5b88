#include "dsm/internal/userfault_access.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "base/error.h"

// Debian 12's kernel headers predate these (Linux 6.3 and 6.1).
#ifndef UFFDIO_CONTINUE_MODE_WP
#define UFFDIO_CONTINUE_MODE_WP ((__u64)1 << 1)
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

namespace lmdx::dsm::internal {
namespace {

constexpr std::uint64_t kPresent = std::uint64_t{1} << 63;

std::uint64_t Address(const std::byte* pointer) { return reinterpret_cast<std::uint64_t>(pointer); }

// Kernel faults (a system call handed a shared address) must fail with EFAULT, as under
// mprotect, rather than map a page behind the protocol's back, so UFFD_USER_MODE_ONLY is not
// used; that needs root (or CAP_SYS_PTRACE, or vm.unprivileged_userfaultfd = 1), or access to
// /dev/userfaultfd.
Fd OpenFaultFd(std::string& why) {
  long fd = ::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) return Fd(static_cast<int>(fd));
  int syscall_errno = errno;
  Fd device(::open("/dev/userfaultfd", O_RDWR | O_CLOEXEC));
  if (device) {
    int made = ::ioctl(device.get(), USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
    if (made >= 0) return Fd(made);
  }
  why = SystemErrorText("userfaultfd", syscall_errno) + (syscall_errno == EPERM
                                                             ? " (it needs root, CAP_SYS_PTRACE or "
                                                               "vm.unprivileged_userfaultfd = 1)"
                                                             : "");
  return Fd();
}

}  // namespace

std::unique_ptr<UserfaultAccess> UserfaultAccess::Open(std::byte* view, std::uint64_t bytes,
                                                       int memory, std::string& why) {
  Fd fault_fd = OpenFaultFd(why);
  if (!fault_fd) return nullptr;
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_SIGBUS | UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_MINOR_SHMEM |
                 UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
  if (::ioctl(fault_fd.get(), UFFDIO_API, &api) != 0) {
    why =
        "the kernel's userfaultfd lacks minor faults or write protection on shared memory "
        "(Linux 5.19 or later has both)";
    return nullptr;
  }
  Fd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!pagemap) {
    why = SystemErrorText("open /proc/self/pagemap", errno);
    return nullptr;
  }
  // Opened before it is registered: nothing runs in the range yet, and a failure below closes
  // it again.
  if (::mprotect(view, bytes, PROT_READ | PROT_WRITE) != 0) {
    why = SystemErrorText("mprotect of the shared range", errno);
    return nullptr;
  }
  uffdio_register range{};
  range.range.start = Address(view);
  range.range.len = bytes;
  range.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_MINOR | UFFDIO_REGISTER_MODE_WP;
  const std::uint64_t needed =
      (std::uint64_t{1} << _UFFDIO_CONTINUE) | (std::uint64_t{1} << _UFFDIO_WRITEPROTECT);
  if (::ioctl(fault_fd.get(), UFFDIO_REGISTER, &range) != 0 || (range.ioctls & needed) != needed) {
    why = SystemErrorText("registering the shared range with userfaultfd", errno);
    ::mprotect(view, bytes, PROT_NONE);
    return nullptr;
  }
  std::unique_ptr<UserfaultAccess> access(
      new UserfaultAccess(std::move(fault_fd), std::move(pagemap), view, memory));
  // A read-only entry must be made write-protected at once (UFFDIO_CONTINUE_MODE_WP, Linux 6.3):
  // made writable and protected a moment later, another thread could write it unseen.
  try {
    access->Restore(view, consistency::Access::kRead);
    access->Set(view, 1, consistency::Access::kNone);
  } catch (const Error& error) {
    why = std::string("the kernel cannot map a page write-protected (Linux 6.3 or later can): ") +
          error.what();
    ::mprotect(view, bytes, PROT_NONE);
    return nullptr;
  }
  return access;
}

UserfaultAccess::UserfaultAccess(Fd fault_fd, Fd pagemap, std::byte* view, int memory)
    : fault_fd_(std::move(fault_fd)),
      pagemap_(std::move(pagemap)),
      view_(view),
      memory_(memory),
      page_bytes_(static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE))) {}

void UserfaultAccess::Set(std::byte* first, std::uint64_t pages, consistency::Access access) {
  std::uint64_t bytes = pages * page_bytes_;
  if (access == consistency::Access::kNone) {
    // On a shared mapping this drops the entries only; the contents stay in the memory.
    if (::madvise(first, bytes, MADV_DONTNEED) != 0) {
      ThrowSystemError("dropping " + std::to_string(pages) + " shared pages", errno,
                       LMDX_ERR_INTERNAL);
    }
    return;
  }
  bool read_only = access == consistency::Access::kRead;
  WriteProtect(first, bytes, read_only);
  // A single page is almost always one a thread is about to touch (a fault): it is allocated now
  // rather than at a second fault; ranges (fresh pages, coherence units) stay lazy.
  MapMissing(first, pages, read_only, /*allocate=*/pages == 1);
}

void UserfaultAccess::Restore(std::byte* page, consistency::Access access) {
  if (access == consistency::Access::kNone) {
    Set(page, 1, access);
    return;
  }
  bool read_only = access == consistency::Access::kRead;
  WriteProtect(page, page_bytes_, read_only);
  Continue(page, page + page_bytes_, read_only, /*allocate=*/true);
}

std::uint64_t UserfaultAccess::PrepareUntouched(std::byte* first, std::uint64_t pages) {
  std::vector<std::uint64_t> entries(pages);
  ReadPresence(first, pages, entries.data());
  std::uint64_t untouched = 0;
  while (untouched < pages && (entries[untouched] & kPresent) == 0) ++untouched;
  if (untouched == 0) return 0;
  // Allocates the holes of the run and leaves pages that have contents as they are.
  if (::fallocate(memory_, 0, static_cast<off_t>(first - view_),
                  static_cast<off_t>(untouched * page_bytes_)) != 0) {
    ThrowSystemError("allocating " + std::to_string(untouched) + " shared pages", errno,
                     LMDX_ERR_NO_MEMORY);
  }
  return untouched;
}

void UserfaultAccess::MapUntouched(std::byte* page, consistency::Access access) {
  if (access == consistency::Access::kNone) return;
  // An entry made meanwhile (a fault of another thread, or a protection change) is left as it is.
  Continue(page, page + page_bytes_, access == consistency::Access::kRead, /*allocate=*/true);
}

void UserfaultAccess::WriteProtect(std::byte* first, std::uint64_t bytes, bool protect) {
  uffdio_writeprotect change{};
  change.range.start = Address(first);
  change.range.len = bytes;
  change.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
  while (::ioctl(fault_fd_.get(), UFFDIO_WRITEPROTECT, &change) != 0) {
    if (errno != EAGAIN) {
      ThrowSystemError(std::string(protect ? "write-protecting " : "opening ") +
                           std::to_string(bytes / page_bytes_) + " shared pages",
                       errno, LMDX_ERR_INTERNAL);
    }
  }
}

void UserfaultAccess::ReadPresence(std::byte* first, std::uint64_t pages, std::uint64_t* entries) {
  std::uint64_t want = pages * sizeof *entries;
  auto offset = static_cast<off_t>(Address(first) / page_bytes_ * sizeof *entries);
  std::uint64_t got = 0;
  while (got < want) {
    ssize_t n = ::pread(pagemap_.get(), reinterpret_cast<char*>(entries) + got, want - got,
                        offset + static_cast<off_t>(got));
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      ThrowSystemError("reading /proc/self/pagemap", n < 0 ? errno : EIO, LMDX_ERR_INTERNAL);
    }
    got += static_cast<std::uint64_t>(n);
  }
}

void UserfaultAccess::MapMissing(std::byte* first, std::uint64_t pages, bool read_only,
                                 bool allocate) {
  if (pages == 1) {
    Continue(first, first + page_bytes_, read_only, allocate);
    return;
  }
  // A run of pages that mostly have entries (a downgrade, then an upgrade) would cost one
  // failing ioctl per page: the page table says which to map.
  constexpr std::uint64_t kBatch = 4096;
  std::vector<std::uint64_t> entries(std::min(pages, kBatch));
  for (std::uint64_t done = 0; done < pages;) {
    std::uint64_t batch = std::min(pages - done, kBatch);
    std::byte* base = first + done * page_bytes_;
    ReadPresence(base, batch, entries.data());
    std::uint64_t at = 0;
    while (at < batch) {
      if ((entries[at] & kPresent) != 0) {
        ++at;
        continue;
      }
      std::uint64_t end = at + 1;
      while (end < batch && (entries[end] & kPresent) == 0) ++end;
      Continue(base + at * page_bytes_, base + end * page_bytes_, read_only, allocate);
      at = end;
    }
    done += batch;
  }
}

void UserfaultAccess::Continue(std::byte* first, std::byte* end, bool read_only, bool allocate) {
  std::byte* at = first;
  while (at < end) {
    uffdio_continue request{};
    request.range.start = Address(at);
    request.range.len = static_cast<std::uint64_t>(end - at);
    request.mode = read_only ? UFFDIO_CONTINUE_MODE_WP : 0;
    if (::ioctl(fault_fd_.get(), UFFDIO_CONTINUE, &request) == 0) return;
    int saved = errno;
    at += std::max<std::int64_t>(request.mapped, 0);
    if (at >= end) return;
    if (saved == EAGAIN || saved == EINTR) continue;
    if (saved == EEXIST) {
      // Another thread of this node made the entry meanwhile, with the access it holds.
      at += page_bytes_;
      continue;
    }
    if (saved != EFAULT) {
      ThrowSystemError("mapping " + std::to_string((end - at) / page_bytes_) + " shared pages",
                       saved, LMDX_ERR_INTERNAL);
    }
    // The memory has no page there yet: never touched on this node or any other.
    auto offset = static_cast<off_t>(at - view_);
    if (allocate) {
      if (::fallocate(memory_, 0, offset, static_cast<off_t>(page_bytes_)) != 0) {
        ThrowSystemError("allocating a shared page", errno, LMDX_ERR_NO_MEMORY);
      }
      continue;
    }
    off_t data = ::lseek(memory_, offset, SEEK_DATA);
    if (data < 0 || data >= static_cast<off_t>(end - view_)) return;
    at = view_ + data;
  }
}

}  // namespace lmdx::dsm::internal

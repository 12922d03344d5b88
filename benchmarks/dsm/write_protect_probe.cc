// What userfaultfd's asynchronous write-protect would give the DSM, measured on the kind of
// mapping the DSM uses (a memfd mapped shared), next to the signal path it would replace:
//   bazel run //benchmarks/dsm:write_protect_probe [-- STRIDE]
// It write-protects 2,048 pages, writes one byte into every STRIDE-th page (the kernel resolves
// each write with no signal), lists the written pages with the PAGEMAP_SCAN ioctl (which also
// protects them again), checks that exactly those were listed, and times the same first writes
// caught by SIGSEGV and mprotect. docs/decisions.md says why the DSM does not use it.
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/fd.h"

namespace {

// Linux 6.7's PAGEMAP_SCAN and 6.4's asynchronous write-protect, which Debian 12's headers lack.
#ifndef UFFD_FEATURE_WP_ASYNC
constexpr std::uint64_t UFFD_FEATURE_WP_ASYNC = std::uint64_t{1} << 15;
#endif
struct PageRegion {
  std::uint64_t start, end, categories;
};
struct PmScanArg {
  std::uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted,
      category_mask, category_anyof_mask, return_mask;
};
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PmScanArg);
constexpr std::uint64_t kPageIsWritten = 1 << 1;
constexpr std::uint64_t kScanWpMatching = 1 << 0;
constexpr std::uint64_t kScanCheckWpAsync = 1 << 1;

constexpr int kPages = 2048;
constexpr int kRounds = 5;
long page_bytes = 0;

double Micros(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - since)
      .count();
}

[[noreturn]] void Fail(const char* what) {
  std::perror(what);
  std::exit(1);
}

void OpenPage(int, siginfo_t* info, void*) {
  auto page = reinterpret_cast<std::uintptr_t>(info->si_addr) & ~(page_bytes - 1);
  ::mprotect(reinterpret_cast<void*>(page), page_bytes, PROT_READ | PROT_WRITE);
}

// One mapping of the memory, unmapped when done.
struct Mapping {
  Mapping(int memory, std::size_t bytes)
      : bytes(bytes),
        base(static_cast<char*>(
            ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memory, 0))) {
    if (base == MAP_FAILED) Fail("mmap");
  }
  ~Mapping() { ::munmap(base, bytes); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  std::size_t bytes;
  char* base;
};

}  // namespace

int main(int argc, char** argv) {
  page_bytes = ::sysconf(_SC_PAGESIZE);
  const int stride = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
  const std::size_t bytes = static_cast<std::size_t>(kPages) * page_bytes;
  lmdx::Fd memory(::memfd_create("lmdx-probe", MFD_CLOEXEC));
  if (!memory || ::ftruncate(memory.get(), static_cast<off_t>(bytes)) != 0) Fail("memfd");
  Mapping view(memory.get(), bytes);
  for (int i = 0; i < kPages; ++i) view.base[i * page_bytes] = 1;

  lmdx::Fd fault_fd(static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK)));
  if (!fault_fd) Fail("userfaultfd");
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
  if (::ioctl(fault_fd.get(), UFFDIO_API, &api) != 0) Fail("asynchronous write-protect on shmem");
  uffdio_register range{};
  range.range = {reinterpret_cast<std::uint64_t>(view.base), bytes};
  range.mode = UFFDIO_REGISTER_MODE_WP;
  if (::ioctl(fault_fd.get(), UFFDIO_REGISTER, &range) != 0) Fail("UFFDIO_REGISTER");
  lmdx::Fd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!pagemap) Fail("/proc/self/pagemap");

  double best_write = 1e9, best_scan = 1e9;
  long listed = 0, written = 0;
  std::vector<PageRegion> regions(kPages);
  for (int round = 0; round < kRounds; ++round) {
    uffdio_writeprotect protect{};
    protect.range = range.range;
    protect.mode = UFFDIO_WRITEPROTECT_MODE_WP;
    if (::ioctl(fault_fd.get(), UFFDIO_WRITEPROTECT, &protect) != 0) Fail("UFFDIO_WRITEPROTECT");
    written = 0;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPages; i += stride, ++written) view.base[i * page_bytes + 8] = 2;
    best_write = std::min(best_write, Micros(start) / static_cast<double>(written));
    PmScanArg scan{};
    scan.size = sizeof scan;
    scan.flags = kScanWpMatching | kScanCheckWpAsync;
    scan.start = range.range.start;
    scan.end = range.range.start + bytes;
    scan.vec = reinterpret_cast<std::uint64_t>(regions.data());
    scan.vec_len = regions.size();
    scan.category_mask = kPageIsWritten;
    scan.return_mask = kPageIsWritten;
    start = std::chrono::steady_clock::now();
    long count = ::ioctl(pagemap.get(), kPagemapScan, &scan);
    best_scan = std::min(best_scan, Micros(start));
    if (count < 0) Fail("PAGEMAP_SCAN");
    listed = 0;
    for (long r = 0; r < count; ++r) {
      listed += static_cast<long>((regions[r].end - regions[r].start) / page_bytes);
    }
    if (listed != written) {
      std::printf("wrong: %ld pages written, %ld listed\n", written, listed);
      return 1;
    }
  }
  std::printf(
      "asynchronous write-protect, memfd mapping: a first write costs %.2f us with no signal;"
      " PAGEMAP_SCAN listed the %ld written pages of %d and protected them again in %.0f us\n",
      best_write, listed, kPages, best_scan);

  Mapping plain(memory.get(), bytes);
  struct sigaction action {};
  action.sa_sigaction = OpenPage;
  action.sa_flags = SA_SIGINFO;
  ::sigaction(SIGSEGV, &action, nullptr);
  double best_signal = 1e9;
  for (int round = 0; round < kRounds; ++round) {
    ::mprotect(plain.base, bytes, PROT_READ);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPages; i += stride) plain.base[i * page_bytes + 8] = 3;
    best_signal = std::min(best_signal, Micros(start) / static_cast<double>(written));
  }
  std::printf("the same first writes caught by SIGSEGV and mprotect: %.2f us each\n", best_signal);
  return 0;
}

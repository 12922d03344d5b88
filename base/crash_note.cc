#include "base/crash_note.h"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>

namespace lmdx {
namespace {

std::array<std::atomic<CrashNoteWriter>, 4> writers{};
std::atomic<int> rank{-1};
std::atomic<std::uintptr_t> shared_begin{0};
std::atomic<std::uintptr_t> shared_end{0};
// A crash may pass through the fault handler twice (the faulting instruction runs again before
// the signal raised for it arrives): the note is written once.
std::atomic<bool> written{false};

// msync fails with ENOMEM on an address no mapping covers; it is a plain system call, safe here.
bool Mapped(const void* address) {
  auto page_size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto page = reinterpret_cast<std::uintptr_t>(address) & ~(page_size - 1);
  return ::msync(reinterpret_cast<void*>(page), 1, MS_ASYNC) == 0;
}

// A fault inside the shared range is said by the DSM, which knows its variables; outside it, the
// line tells a pointer into another node's private memory (its stack, a private global) from a
// protection fault on private memory of this one.
void WriteSiteLine(const CrashSite& site) {
  if (!site.address_known || shared_end.load() == 0 || InSharedRange(site.address)) return;
  char line[256];
  int length =
      std::snprintf(line, sizeof line,
                    "lmdx: rank %d: the fault was an access at %p, outside shared memory, %s\n",
                    rank.load(), site.address,
                    Mapped(site.address) ? "in private memory of this process that forbids it"
                                         : "in no mapping of this process");
  if (length > 0) {
    ssize_t out = ::write(STDERR_FILENO, line, static_cast<std::size_t>(length));
    static_cast<void>(out);
  }
}

}  // namespace

void AddCrashNoteWriter(CrashNoteWriter writer) {
  for (auto& slot : writers) {
    CrashNoteWriter empty = nullptr;
    if (slot.load() == writer || slot.compare_exchange_strong(empty, writer)) return;
  }
}

void SetCrashNoteNode(int node_rank, std::uintptr_t begin, std::uintptr_t end) {
  rank.store(node_rank);
  shared_begin.store(begin);
  shared_end.store(end);
}

int CrashNoteRank() { return rank.load(); }

bool InSharedRange(const void* address) {
  auto at = reinterpret_cast<std::uintptr_t>(address);
  return at >= shared_begin.load() && at < shared_end.load();
}

void WriteCrashNote(const CrashSite& site) {
  if (written.exchange(true)) return;
  for (auto& slot : writers) {
    if (CrashNoteWriter writer = slot.load(std::memory_order_acquire)) writer(site);
  }
  WriteSiteLine(site);
}

}  // namespace lmdx

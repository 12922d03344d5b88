#include "dsm/internal/mprotect_access.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
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

std::uint64_t ViewMappingBudget() {
  std::uint64_t limit = 65530;
  std::ifstream file("/proc/sys/vm/max_map_count");
  std::uint64_t read = 0;
  if (file >> read && read > 0) limit = read;
  return std::max<std::uint64_t>(limit - limit / 4, ProtectionRuns::kMinBudget);
}

MprotectAccess::MprotectAccess(std::byte* view, std::uint64_t bytes, std::uint64_t mapping_budget)
    : view_(view),
      page_bytes_(static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE))),
      runs_(bytes / page_bytes_, mapping_budget) {}

void MprotectAccess::Set(std::byte* first, std::uint64_t pages, consistency::Access access) {
  std::lock_guard lock(mutex_);
  runs_.Set(static_cast<std::uint64_t>(first - view_) / page_bytes_, pages, access, changes_);
  Apply();
}

bool MprotectAccess::OpenIfNarrowed(std::byte* page) {
  const std::uint64_t id = static_cast<std::uint64_t>(page - view_) / page_bytes_;
  // Without the lock: most faults are the protocol's, and this look costs them one load.
  if (!runs_.Narrowed(id)) return false;
  std::lock_guard lock(mutex_);
  // Opened, or set again, by another thread meanwhile: the retried access tells.
  if (runs_.Open(id, changes_)) Apply();
  return true;
}

MappingFigures MprotectAccess::mapping_figures() const {
  std::lock_guard lock(mutex_);
  return MappingFigures{runs_.budget(), runs_.runs(), runs_.peak_runs(), runs_.pages_closed()};
}

int MprotectAccess::Protect(const ProtectionRuns::Change& change) {
  std::byte* start = view_ + change.first * page_bytes_;
  return ::mprotect(start, change.count * page_bytes_, ProtectionOf(change.protection)) == 0
             ? 0
             : errno;
}

void MprotectAccess::Apply() {
  for (const ProtectionRuns::Change& change : changes_) {
    int failed = Protect(change);
    if (failed == 0) continue;
    const ProtectionRuns::Change refused = change;
    changes_.clear();
    if (failed == ENOMEM) {
      // The rest of the process holds more mappings than the budget left it. The refused change
      // may have been applied in part, so the bookkeeping no longer says what the view is:
      // closing all of it makes both agree again, with no new mapping, and every page is opened
      // by its next fault. The changes after it are moot, their pages closed too.
      runs_.CloseAll(changes_);
      failed = Protect(changes_.front());
      changes_.clear();
      if (failed == 0) return;
    }
    char where[32];
    std::snprintf(where, sizeof where, "%p",
                  static_cast<void*>(view_ + refused.first * page_bytes_));
    std::string what = "mprotect of " + std::to_string(refused.count) + " pages at " + where;
    if (failed == ENOMEM) {
      throw Error(LMDX_ERR_NO_MEMORY,
                  what +
                      " needs one more memory mapping than the kernel allows a process "
                      "(vm.max_map_count), even with every shared page closed: the rest of the "
                      "process holds nearly that many; run with LMDX_DSM_ACCESS=userfaultfd "
                      "(Linux 6.3 or later), which keeps no mapping per page");
    }
    ThrowSystemError(what, failed, LMDX_ERR_INTERNAL);
  }
  changes_.clear();
}

}  // namespace lmdx::dsm::internal

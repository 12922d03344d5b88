#include "dsm/internal/copy_registry.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>

#include "base/error.h"
#include "base/log.h"

namespace lmdx::dsm::internal {

CopyRegistry::CopyRegistry(int nodes, std::uint64_t page_count) : page_count_(page_count) {
  const std::size_t bytes = static_cast<std::size_t>(nodes) * sizeof(Slot);
  file_.reset(::memfd_create("lmdx-registry", MFD_CLOEXEC));
  if (!file_ || ::ftruncate(file_.get(), static_cast<off_t>(bytes)) != 0) {
    ThrowSystemError("cannot create the DSM's registry of copies", errno, LMDX_ERR_NO_MEMORY);
  }
  void* at = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, file_.get(), 0);
  if (at == MAP_FAILED) {
    ThrowSystemError("cannot map the DSM's registry of copies", errno, LMDX_ERR_NO_MEMORY);
  }
  memory_ = Mapping(at, bytes);
  // A fresh memory file reads as zeros: every count starts at 0.
  slots_ = std::span<Slot>(static_cast<Slot*>(at), static_cast<std::size_t>(nodes));
}

void CopyRegistry::Take(
    const std::function<void(int reader, std::uint64_t first, std::uint64_t count)>& take) {
  std::lock_guard one_take(take_mutex_);
  // Pairs with the reader's fence between its entry and its read of the page (HomeAccess).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (std::size_t reader = 0; reader < slots_.size(); ++reader) {
    Slot& slot = slots_[reader];
    // The head is written by another process (a one-sided write after the entries it covers).
    const std::uint64_t head = std::atomic_ref(slot.head).load(std::memory_order_acquire);
    std::uint64_t tail = slot.tail;
    if (head - tail > kEntries) {
      if (!said_) {
        LogLine("rank " + std::to_string(reader) + " registered " + std::to_string(head - tail) +
                " copies in a ring of " + std::to_string(kEntries) + "; they are ignored");
        said_ = true;
      }
      tail = head;
    }
    for (; tail != head; ++tail) {
      const Entry entry = slot.entries[tail % kEntries];
      if (entry.first >= page_count_ || entry.count > page_count_ - entry.first) {
        if (!said_) {
          LogLine("rank " + std::to_string(reader) + " registered copies of pages past the range");
          said_ = true;
        }
        continue;
      }
      take(static_cast<int>(reader), entry.first, entry.count);
    }
    // The reader reads it one-sidedly before it reuses an entry.
    std::atomic_ref(slot.tail).store(tail, std::memory_order_release);
  }
}

}  // namespace lmdx::dsm::internal

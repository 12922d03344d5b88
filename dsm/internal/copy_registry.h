// A home's record of the copies other nodes took of its pages by reading its memory one-sidedly
// (consistency::PageMemory::RegisterCopies): one ring per reader, which that reader fills with
// one-sided writes and the home empties at its releases, so that a first copy needs no message.
//
// Why a home must hear of a first copy at all: a page nobody else holds is written by its home
// with no fault, and so with no notice; once another node holds a copy, the home's releases must
// name the page whenever it changed. A reader writes its entry before it reads the page, with a
// full fence between, and the home takes the entries at every release after a full fence of its
// own: either the home sees the entry and names the page, or the read came after the home's
// fence and holds every write the release covers (docs/protocols.md, "One-sided first fetches").
//
// Layout, the same in every process of a job: a Slot per reader rank, each an entry count the
// reader advances (head), the count the home has taken (tail), and a ring of runs of pages.
#ifndef LMDX_DSM_INTERNAL_COPY_REGISTRY_H_
#define LMDX_DSM_INTERNAL_COPY_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>

#include "base/fd.h"
#include "base/mapping.h"

namespace lmdx::dsm::internal {

class CopyRegistry {
 public:
  // A fetch registers one run per run of consecutive pages, so a walk's fetch of 128 pages takes
  // one entry; a reader whose ring is full until the home's next release asks by message.
  static constexpr std::uint64_t kEntries = 1024;
  struct Entry {
    std::uint64_t first;
    std::uint64_t count;
  };
  struct alignas(64) Slot {
    std::uint64_t head;              // entries written by the reader, ever
    alignas(64) std::uint64_t tail;  // entries taken by the home, ever
    alignas(64) Entry entries[kEntries];
  };
  static constexpr std::uint64_t HeadOffset(int reader) { return SlotOffset(reader); }
  static constexpr std::uint64_t TailOffset(int reader) {
    return SlotOffset(reader) + offsetof(Slot, tail);
  }
  static constexpr std::uint64_t EntryOffset(int reader, std::uint64_t index) {
    return SlotOffset(reader) + offsetof(Slot, entries) + (index % kEntries) * sizeof(Entry);
  }

  // The slots live in a memory file of their own, which a peer of the same host maps.
  CopyRegistry(int nodes, std::uint64_t page_count);
  CopyRegistry(const CopyRegistry&) = delete;
  CopyRegistry& operator=(const CopyRegistry&) = delete;

  void* base() { return memory_.data(); }
  std::size_t bytes() const { return memory_.size(); }
  int file() const { return file_.get(); }

  // Calls take(reader, first, count) for every entry written since the last call, after a full
  // fence. An entry out of the range, or a count past the ring, is skipped and said once: only
  // the job's own processes hold the key, so it would be a defect of LMDX's.
  void Take(const std::function<void(int reader, std::uint64_t first, std::uint64_t count)>& take);

 private:
  static constexpr std::uint64_t SlotOffset(int reader) {
    return static_cast<std::uint64_t>(reader) * sizeof(Slot);
  }

  std::uint64_t page_count_;
  Fd file_;
  Mapping memory_;
  std::span<Slot> slots_;
  std::mutex take_mutex_;  // one Take at a time: each advances the tails
  bool said_ = false;      // guarded by take_mutex_
};

}  // namespace lmdx::dsm::internal

#endif  // LMDX_DSM_INTERNAL_COPY_REGISTRY_H_

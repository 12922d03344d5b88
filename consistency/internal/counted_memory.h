// A protocol's view of the DSM's memory that counts the protection changes it makes in that
// protocol's own counters, so that a program running several protocols sees what each cost.
#ifndef LMDX_CONSISTENCY_INTERNAL_COUNTED_MEMORY_H_
#define LMDX_CONSISTENCY_INTERNAL_COUNTED_MEMORY_H_

#include "consistency/counters.h"
#include "consistency/protocol.h"

namespace lmdx::consistency::internal {

class CountedMemory final : public PageMemory {
 public:
  CountedMemory(PageMemory& memory, Counters& counters) : memory_(memory), counters_(counters) {}

  std::size_t page_bytes() const override { return memory_.page_bytes(); }
  std::byte* AppView(PageId page) override { return memory_.AppView(page); }
  std::byte* SystemView(PageId page) override { return memory_.SystemView(page); }
  void Protect(PageId first, std::uint64_t count, Access access) override {
    memory_.Protect(first, count, access);
    Counters::Add(counters_.protection_changes);
  }
  Placement PlacementOf(PageId page) override { return memory_.PlacementOf(page); }
  bool ReadHomeCopies(int home, std::span<const PageId> pages, std::byte* into) override {
    return memory_.ReadHomeCopies(home, pages, into);
  }
  bool WriteHomeCopies(int home, std::span<const PageRun> runs) override {
    return memory_.WriteHomeCopies(home, runs);
  }
  bool RegisterCopies(int home, std::span<const PageId> pages) override {
    return memory_.RegisterCopies(home, pages);
  }
  void TakeRegisteredCopies(
      const std::function<void(int node, PageId first, std::uint64_t count)>& take) override {
    memory_.TakeRegisteredCopies(take);
  }

 private:
  PageMemory& memory_;
  Counters& counters_;
};

}  // namespace lmdx::consistency::internal

#endif  // LMDX_CONSISTENCY_INTERNAL_COUNTED_MEMORY_H_

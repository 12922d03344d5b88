// This node's access to every page of the global range, and the per-page state that lets threads
// of one node share a single transaction for a page (blueprint section 5: one fetch per page).
//
// The range holds millions of pages, most never touched, so entries live in chunks allocated on
// first use. Access is read lock-free (the fault handler); it changes only under the page's stripe
// lock, which also guards the "transaction under way" flag that other threads wait on.
#ifndef LMDX_CONSISTENCY_PAGE_TABLE_H_
#define LMDX_CONSISTENCY_PAGE_TABLE_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "consistency/protocol.h"

namespace lmdx::consistency {

class PageTable {
 public:
  explicit PageTable(std::uint64_t page_count);
  ~PageTable();
  PageTable(const PageTable&) = delete;
  PageTable& operator=(const PageTable&) = delete;

  std::uint64_t page_count() const { return page_count_; }

  Access access(PageId page) const;
  // Callers hold the page's stripe lock.
  void set_access(PageId page, Access access);
  bool busy(PageId page) const;
  void set_busy(PageId page, bool busy);

  std::mutex& StripeMutex(PageId page) { return stripes_[StripeOf(page)].mutex; }
  std::condition_variable& StripeChanged(PageId page) { return stripes_[StripeOf(page)].changed; }

 private:
  static constexpr std::uint64_t kChunkShift = 15;  // 32768 pages (128 MiB of 4 KiB pages)
  static constexpr std::uint64_t kChunkPages = std::uint64_t{1} << kChunkShift;
  static constexpr std::size_t kStripes = 256;

  struct Chunk {
    std::array<std::atomic<std::uint8_t>, kChunkPages> access{};
    std::array<std::atomic<bool>, kChunkPages> busy{};
  };
  struct Stripe {
    std::mutex mutex;
    std::condition_variable changed;
  };

  static std::size_t StripeOf(PageId page) { return (page * 0x9E3779B97F4A7C15ull) >> 56; }
  const Chunk* FindChunk(PageId page) const;
  Chunk& ChunkFor(PageId page);

  std::uint64_t page_count_;
  std::unique_ptr<std::atomic<Chunk*>[]> chunks_;  // lock-free lookup
  std::mutex growth_mutex_;
  std::vector<std::unique_ptr<Chunk>> owned_chunks_;
  std::array<Stripe, kStripes> stripes_;
};

}  // namespace lmdx::consistency

#endif  // LMDX_CONSISTENCY_PAGE_TABLE_H_

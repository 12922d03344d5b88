#include "consistency/page_table.h"

#include <string>

#include "base/error.h"

namespace lmdx::consistency {

const char* AccessName(Access access) {
  switch (access) {
    case Access::kNone: return "none";
    case Access::kRead: return "read";
    case Access::kWrite: return "write";
  }
  return "?";
}

PageTable::PageTable(std::uint64_t page_count)
    : page_count_(page_count),
      chunks_(
          std::make_unique<std::atomic<Chunk*>[]>((page_count + kChunkPages - 1) >> kChunkShift)) {}

PageTable::~PageTable() = default;

const PageTable::Chunk* PageTable::FindChunk(PageId page) const {
  if (page >= page_count_) {
    throw Error(LMDX_ERR_INTERNAL, "page " + std::to_string(page) + " is outside the range");
  }
  return chunks_[page >> kChunkShift].load(std::memory_order_acquire);
}

PageTable::Chunk& PageTable::ChunkFor(PageId page) {
  if (const Chunk* found = FindChunk(page)) return *const_cast<Chunk*>(found);
  std::lock_guard lock(growth_mutex_);
  std::atomic<Chunk*>& slot = chunks_[page >> kChunkShift];
  if (Chunk* raced = slot.load(std::memory_order_acquire)) return *raced;
  owned_chunks_.push_back(std::make_unique<Chunk>());
  slot.store(owned_chunks_.back().get(), std::memory_order_release);
  return *owned_chunks_.back();
}

Access PageTable::access(PageId page) const {
  const Chunk* chunk = FindChunk(page);
  if (chunk == nullptr) return Access::kNone;
  return static_cast<Access>(
      chunk->access[page & (kChunkPages - 1)].load(std::memory_order_acquire));
}

void PageTable::set_access(PageId page, Access access) {
  ChunkFor(page).access[page & (kChunkPages - 1)].store(static_cast<std::uint8_t>(access),
                                                        std::memory_order_release);
}

bool PageTable::busy(PageId page) const {
  const Chunk* chunk = FindChunk(page);
  return chunk != nullptr && chunk->busy[page & (kChunkPages - 1)].load(std::memory_order_acquire);
}

void PageTable::set_busy(PageId page, bool busy) {
  ChunkFor(page).busy[page & (kChunkPages - 1)].store(busy, std::memory_order_release);
}

}  // namespace lmdx::consistency

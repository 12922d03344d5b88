#include "dsm/internal/protection_runs.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace lmdx::dsm::internal {

ProtectionRuns::ProtectionRuns(std::uint64_t page_count, std::uint64_t budget)
    : page_count_(page_count),
      budget_(std::max(budget, kMinBudget)),
      chunks_(
          std::make_unique<std::atomic<Chunk*>[]>((page_count + kChunkPages - 1) >> kChunkShift)) {}

ProtectionRuns::~ProtectionRuns() = default;

std::uint8_t ProtectionRuns::StateOf(PageId page) const {
  const Chunk* chunk = chunks_[page >> kChunkShift].load(std::memory_order_acquire);
  if (chunk == nullptr) return 0;
  return chunk->state[page & (kChunkPages - 1)].load(std::memory_order_relaxed);
}

ProtectionRuns::Chunk& ProtectionRuns::ChunkOfBlock(std::uint64_t block) {
  std::atomic<Chunk*>& slot = chunks_[(block * kBlockPages) >> kChunkShift];
  if (Chunk* chunk = slot.load(std::memory_order_relaxed)) return *chunk;
  owned_chunks_.push_back(std::make_unique<Chunk>());
  slot.store(owned_chunks_.back().get(), std::memory_order_release);
  return *owned_chunks_.back();
}

void ProtectionRuns::Store(PageId page, std::uint8_t state) {
  ChunkOfBlock(page / kBlockPages)
      .state[page & (kChunkPages - 1)]
      .store(state, std::memory_order_relaxed);
}

std::uint64_t ProtectionRuns::Boundaries(PageId from, PageId to) const {
  std::uint64_t boundaries = 0;
  std::uint8_t previous = StateOf(from) >> 2;
  for (PageId page = from + 1; page <= to; ++page) {
    std::uint8_t protection = StateOf(page) >> 2;
    boundaries += protection != previous ? 1 : 0;
    previous = protection;
  }
  return boundaries;
}

void ProtectionRuns::CountRuns(std::uint64_t before, std::uint64_t after) {
  runs_ = runs_ + after - before;
  peak_runs_ = std::max(peak_runs_, runs_);
}

// ---- Changes the protocol and faults ask for ------------------------------------------------

ProtectionRuns::Access ProtectionRuns::Resulting(std::uint8_t state, Access access,
                                                 bool keep_closed) {
  const auto was = static_cast<Access>(state & kAccessMask);
  const auto had = static_cast<Access>(state >> 2);
  return keep_closed && access <= was && had < access ? had : access;
}

std::uint64_t ProtectionRuns::BoundariesIfSet(PageId first, PageId end, Access access,
                                              bool keep_closed) const {
  auto protection_of = [&](PageId page) {
    const std::uint8_t state = StateOf(page);
    if (page < first || page >= end) return static_cast<Access>(state >> 2);
    return Resulting(state, access, keep_closed);
  };
  const PageId to = After(end);
  std::uint64_t boundaries = 0;
  Access previous = protection_of(Before(first));
  for (PageId page = Before(first) + 1; page <= to; ++page) {
    const Access protection = protection_of(page);
    boundaries += protection != previous ? 1 : 0;
    previous = protection;
  }
  return boundaries;
}

void ProtectionRuns::Set(PageId first, std::uint64_t count, Access access,
                         std::vector<Change>& changes) {
  if (count == 0) return;
  if (first >= page_count_ || count > page_count_ - first) {
    throw Error(LMDX_ERR_INTERNAL, "pages " + std::to_string(first) + " to " +
                                       std::to_string(first + count) + " are outside the view");
  }
  const PageId end = first + count;
  const std::uint64_t before = Boundaries(Before(first), After(end));
  // Pages take the access as their protection, but a closed page whose access does not rise may
  // stay closed, when that leaves no more runs: no system call then, and the page is not opened
  // only to be closed again. (Readers' copies that all fall to one access merge better opened.)
  bool keep_closed = false;
  for (PageId page = first; page < end && !keep_closed; ++page) {
    keep_closed = Resulting(StateOf(page), access, true) != access;
  }
  if (keep_closed) {
    keep_closed =
        BoundariesIfSet(first, end, access, true) <= BoundariesIfSet(first, end, access, false);
  }
  // One change per stretch of pages that take the access, from its first page whose protection
  // moves to its last: pages between that already have it cost nothing in it, where several
  // changes would cost a system call each.
  PageId stretch_first = end;
  PageId stretch_end = end;
  auto end_stretch = [&] {
    if (stretch_first < stretch_end) {
      changes.push_back(Change{stretch_first, stretch_end - stretch_first, access});
    }
    stretch_first = stretch_end = end;
  };
  std::uint64_t last_touched = kNoBlock;
  for (PageId page = first; page < end; ++page) {
    const std::uint8_t state = StateOf(page);
    const auto had = static_cast<Access>(state >> 2);
    const Access protection = Resulting(state, access, keep_closed);
    const std::uint8_t now = Encode(access, protection);
    if (now != state) Store(page, now);
    if (protection != access) {
      end_stretch();  // kept closed
      continue;
    }
    if (protection == had) continue;
    if (stretch_first == end) stretch_first = page;
    stretch_end = page + 1;
    if (protection > had && page / kBlockPages != last_touched) {
      last_touched = page / kBlockPages;
      Touch(last_touched);
    }
  }
  end_stretch();
  CountRuns(before, Boundaries(Before(first), After(end)));
  Settle(kNoBlock, changes);
}

bool ProtectionRuns::Narrowed(PageId page) const {
  const std::uint8_t state = StateOf(page);
  return (state >> 2) < (state & kAccessMask);
}

bool ProtectionRuns::Open(PageId page, std::vector<Change>& changes) {
  const std::uint8_t state = StateOf(page);
  const auto access = static_cast<Access>(state & kAccessMask);
  if (static_cast<Access>(state >> 2) >= access) return false;
  const std::uint64_t block = page / kBlockPages;
  const PageId block_first = block * kBlockPages;
  const PageId block_end = std::min(block_first + kBlockPages, page_count_);
  PageId first = page;
  while (first > block_first && StateOf(first - 1) == state) --first;
  PageId end = page + 1;
  while (end < block_end && StateOf(end) == state) ++end;
  const std::uint64_t before = Boundaries(Before(first), After(end));
  for (PageId open = first; open < end; ++open) Store(open, Encode(access, access));
  CountRuns(before, Boundaries(Before(first), After(end)));
  Touch(block);
  changes.push_back(Change{first, end - first, access});
  Settle(block, changes);
  return true;
}

void ProtectionRuns::CloseAll(std::vector<Change>& changes) {
  for (const auto& chunk : owned_chunks_) {
    for (auto& page : chunk->state) {
      const std::uint8_t state = page.load(std::memory_order_relaxed);
      if ((state >> 2) == 0) continue;
      ++pages_closed_;
      page.store(state & kAccessMask, std::memory_order_relaxed);
    }
    chunk->listed.fill(false);
  }
  oldest_ = newest_ = kNoBlock;
  listed_blocks_ = 0;
  budget_ = std::max(kMinBudget, std::min(budget_, runs_ / 2));
  runs_ = 1;
  changes.push_back(Change{0, page_count_, Access::kNone});
}

// ---- Blocks, from the least to the most recently opened --------------------------------------

void ProtectionRuns::Touch(std::uint64_t block) {
  if (newest_ == block) return;
  Chunk& chunk = ChunkOfBlock(block);
  const std::uint64_t slot = block % kChunkBlocks;
  if (chunk.listed[slot]) Unlink(block);
  chunk.listed[slot] = true;
  chunk.older[slot] = newest_;
  chunk.newer[slot] = kNoBlock;
  if (newest_ != kNoBlock) {
    ChunkOfBlock(newest_).newer[newest_ % kChunkBlocks] = block;
  } else {
    oldest_ = block;
  }
  newest_ = block;
  ++listed_blocks_;
}

void ProtectionRuns::Unlink(std::uint64_t block) {
  Chunk& chunk = ChunkOfBlock(block);
  const std::uint64_t slot = block % kChunkBlocks;
  const std::uint64_t older = chunk.older[slot];
  const std::uint64_t newer = chunk.newer[slot];
  if (older != kNoBlock) {
    ChunkOfBlock(older).newer[older % kChunkBlocks] = newer;
  } else {
    oldest_ = newer;
  }
  if (newer != kNoBlock) {
    ChunkOfBlock(newer).older[newer % kChunkBlocks] = older;
  } else {
    newest_ = older;
  }
  chunk.listed[slot] = false;
  --listed_blocks_;
}

bool ProtectionRuns::AnyOpen(std::uint64_t block) const {
  const PageId first = block * kBlockPages;
  const PageId end = std::min(first + kBlockPages, page_count_);
  for (PageId page = first; page < end; ++page) {
    if ((StateOf(page) >> 2) != 0) return true;
  }
  return false;
}

std::int64_t ProtectionRuns::GainOfClosing(std::uint64_t block) const {
  const PageId first = block * kBlockPages;
  const PageId end = std::min(first + kBlockPages, page_count_);
  const auto before = static_cast<std::int64_t>(Boundaries(Before(first), After(end)));
  // Closed, the block is one run: what is left are its edges with open neighbours.
  std::int64_t after = 0;
  if (first > 0 && (StateOf(first - 1) >> 2) != 0) ++after;
  if (end < page_count_ && (StateOf(end) >> 2) != 0) ++after;
  return before - after;
}

void ProtectionRuns::Close(std::uint64_t block, std::vector<std::uint64_t>& closed) {
  const std::int64_t gain = GainOfClosing(block);
  runs_ = static_cast<std::uint64_t>(static_cast<std::int64_t>(runs_) - gain);
  peak_runs_ = std::max(peak_runs_, runs_);
  const PageId first = block * kBlockPages;
  const PageId end = std::min(first + kBlockPages, page_count_);
  for (PageId page = first; page < end; ++page) {
    const std::uint8_t state = StateOf(page);
    if ((state >> 2) == 0) continue;
    Store(page, state & kAccessMask);
    ++pages_closed_;
  }
  Unlink(block);
  closed.push_back(block);
}

void ProtectionRuns::Settle(std::uint64_t keep, std::vector<Change>& changes) {
  if (runs_ <= budget_) return;
  const std::uint64_t target = budget_ - budget_ / 8;
  closed_.clear();
  // First the blocks whose closing merges runs, oldest first. A block that merges none is moved
  // behind the others, so that the next pass does not look at it again first; one with no page
  // open (its pages were invalidated since) leaves the list.
  std::uint64_t block = oldest_;
  for (std::uint64_t left = listed_blocks_; left > 0 && block != kNoBlock && runs_ > target;
       --left) {
    const std::uint64_t next = ChunkOfBlock(block).newer[block % kChunkBlocks];
    if (block != keep) {
      if (!AnyOpen(block)) {
        Unlink(block);
      } else if (GainOfClosing(block) > 0) {
        Close(block, closed_);
      } else {
        Touch(block);
      }
    }
    block = next;
  }
  // Then any block, oldest first: closed blocks next to each other merge.
  block = oldest_;
  while (block != kNoBlock && runs_ > target) {
    const std::uint64_t next = ChunkOfBlock(block).newer[block % kChunkBlocks];
    if (block != keep) Close(block, closed_);
    block = next;
  }
  if (closed_.empty()) return;
  // One change per stretch of neighbouring blocks: a sweep closes long stretches, one mprotect
  // each.
  std::sort(closed_.begin(), closed_.end());
  std::size_t at = 0;
  while (at < closed_.size()) {
    std::size_t end = at + 1;
    while (end < closed_.size() && closed_[end] == closed_[end - 1] + 1) ++end;
    const PageId first = closed_[at] * kBlockPages;
    const PageId last = std::min((closed_[end - 1] + 1) * kBlockPages, page_count_);
    changes.push_back(Change{first, last - first, Access::kNone});
    at = end;
  }
}

}  // namespace lmdx::dsm::internal

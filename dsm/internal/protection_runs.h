// The application's view under mprotect, page by page: the access the protocol set, the
// protection the view really has, and how many mappings that takes.
//
// Each run of pages with one protection is a memory mapping of its own, and the kernel allows a
// process vm.max_map_count of them (65,530 by default): a 140,000-page variable whose homes
// alternate between 2 nodes, each node's own pages writable and the others' not, needed one per
// page and ended the job. ProtectionRuns counts the runs and keeps them within a budget below the
// limit by closing pages: a page's protection may be stricter than its access, never looser. A
// fault on a closed page is local: it is opened again to its access with no protocol work.
//
// What is closed: blocks of kBlockPages pages, least recently opened first. A block whose
// closing merges no runs (one inside a run of a single protection, a large region opened at once)
// is passed over while closing others merges some; when none does, any block is closed, oldest
// first: closed blocks next to each other merge, and a view closed everywhere is one mapping, so
// the count always comes back within the budget. A pass closes down to an eighth below the budget,
// so that the cost of closing (a few mprotect calls over many pages) is paid once per thousands of
// openings.
//
// Bookkeeping only, no system call: MprotectAccess applies the changes in the order given, under
// the lock it holds for every mutator here. Narrowed is lock-free: the fault handler's first look.
#ifndef LMDX_DSM_INTERNAL_PROTECTION_RUNS_H_
#define LMDX_DSM_INTERNAL_PROTECTION_RUNS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "consistency/protocol.h"

namespace lmdx::dsm::internal {

class ProtectionRuns {
 public:
  using Access = consistency::Access;
  using PageId = consistency::PageId;

  // One mprotect: pages [first, first + count) get `protection`.
  struct Change {
    PageId first = 0;
    std::uint64_t count = 0;
    Access protection = Access::kNone;
    bool operator==(const Change&) const = default;
  };

  // 64 KiB of 4 KiB pages: small, so that a block closed for its runs takes few other pages with
  // it, and large enough that closing one where protections alternate merges a dozen runs or more.
  static constexpr std::uint64_t kBlockPages = 16;
  // Below this a block kept open by the fault being served could fill the budget alone.
  static constexpr std::uint64_t kMinBudget = 64;

  // A view of page_count pages, all closed (as it is mapped), which may take budget mappings.
  ProtectionRuns(std::uint64_t page_count, std::uint64_t budget);
  ~ProtectionRuns();
  ProtectionRuns(const ProtectionRuns&) = delete;
  ProtectionRuns& operator=(const ProtectionRuns&) = delete;

  // The protocol sets the access of pages [first, first + count), which becomes their
  // protection. A page whose access rises is opened (a thread waits for it); a closed page whose
  // access does not rise stays closed when that leaves no more runs than opening it would.
  // Appends the changes to apply, then those of any closing the budget asks for.
  void Set(PageId first, std::uint64_t count, Access access, std::vector<Change>& changes);
  // Lock-free: page's protection is stricter than its access, so a fault on it is local.
  bool Narrowed(PageId page) const;
  // Opens a narrowed page to its access, with the pages next to it in its block that were closed
  // with the same access (a sweep would fault on them one by one). False when page is not
  // narrowed: nothing changes.
  bool Open(PageId page, std::vector<Change>& changes);
  // The kernel refused a change: the rest of the process holds more mappings than the budget
  // leaves it. Every page is closed, in one change over the whole view (whose ends are mapping
  // ends, so it needs no new mapping), and the budget is halved.
  void CloseAll(std::vector<Change>& changes);

  Access access(PageId page) const { return static_cast<Access>(StateOf(page) & kAccessMask); }
  Access protection(PageId page) const { return static_cast<Access>(StateOf(page) >> 2); }
  std::uint64_t page_count() const { return page_count_; }
  // Runs of pages with one protection: the mappings the view takes.
  std::uint64_t runs() const { return runs_; }
  std::uint64_t budget() const { return budget_; }
  std::uint64_t peak_runs() const { return peak_runs_; }
  // Pages whose protection was made stricter than their access, each time it was.
  std::uint64_t pages_closed() const { return pages_closed_; }

 private:
  static constexpr std::uint64_t kChunkShift = 15;  // 32,768 pages: 128 MiB of 4 KiB pages
  static constexpr std::uint64_t kChunkPages = std::uint64_t{1} << kChunkShift;
  static constexpr std::uint64_t kChunkBlocks = kChunkPages / kBlockPages;
  static constexpr std::uint64_t kNoBlock = ~std::uint64_t{0};
  static constexpr std::uint8_t kAccessMask = 3;

  // Most of the range is never touched, so pages live in chunks made on first use. A page's
  // state is its access in bits 0-1 and its protection in bits 2-3; blocks are linked from the
  // least to the most recently opened.
  struct Chunk {
    std::array<std::atomic<std::uint8_t>, kChunkPages> state{};
    std::array<std::uint64_t, kChunkBlocks> older{};
    std::array<std::uint64_t, kChunkBlocks> newer{};
    std::array<bool, kChunkBlocks> listed{};
  };

  static std::uint8_t Encode(Access access, Access protection) {
    return static_cast<std::uint8_t>(static_cast<unsigned>(access) |
                                     static_cast<unsigned>(protection) << 2);
  }
  // The protection a Set of access gives a page in state; with keep_closed, a closed page whose
  // access does not rise keeps its protection.
  static Access Resulting(std::uint8_t state, Access access, bool keep_closed);
  // The boundaries around [first, end) if a Set of access gave its pages Resulting's protection.
  std::uint64_t BoundariesIfSet(PageId first, PageId end, Access access, bool keep_closed) const;
  std::uint8_t StateOf(PageId page) const;
  void Store(PageId page, std::uint8_t state);
  Chunk& ChunkOfBlock(std::uint64_t block);
  // Pages p in (from, to] whose protection differs from page p - 1's.
  std::uint64_t Boundaries(PageId from, PageId to) const;
  // The pages whose boundaries a change of [first, end) may move: one on each side.
  PageId Before(PageId first) const { return first == 0 ? 0 : first - 1; }
  PageId After(PageId end) const { return end < page_count_ ? end : page_count_ - 1; }
  void CountRuns(std::uint64_t before, std::uint64_t after);

  // The block becomes the most recently opened.
  void Touch(std::uint64_t block);
  void Unlink(std::uint64_t block);
  bool AnyOpen(std::uint64_t block) const;
  // How many runs closing block would merge (negative when it splits one).
  std::int64_t GainOfClosing(std::uint64_t block) const;
  void Close(std::uint64_t block, std::vector<std::uint64_t>& closed);
  // Closes blocks until the runs are an eighth below the budget, never block keep (the one a
  // fault is being served in). Appends one change per stretch of closed blocks.
  void Settle(std::uint64_t keep, std::vector<Change>& changes);

  std::uint64_t page_count_;
  std::uint64_t budget_;
  std::uint64_t runs_ = 1;  // the view is mapped with no access, one mapping
  std::uint64_t peak_runs_ = 1;
  std::uint64_t pages_closed_ = 0;
  std::unique_ptr<std::atomic<Chunk*>[]> chunks_;  // read without the lock by Narrowed
  std::vector<std::unique_ptr<Chunk>> owned_chunks_;
  std::uint64_t oldest_ = kNoBlock;
  std::uint64_t newest_ = kNoBlock;
  std::uint64_t listed_blocks_ = 0;
  std::vector<std::uint64_t> closed_;  // reused by Settle
};

}  // namespace lmdx::dsm::internal

#endif  // LMDX_DSM_INTERNAL_PROTECTION_RUNS_H_

#include "dsm/shared_heap.h"

#include <jemalloc/jemalloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"

namespace lmdx::dsm {
namespace {

constexpr std::size_t kKiB = std::size_t{1} << 10;
constexpr std::size_t kMiB = std::size_t{1} << 20;

std::string Address(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

// An anonymous read-write mapping standing in for a node's slice of the global range, 2 MiB
// aligned like the real range.
class Region {
 public:
  explicit Region(std::size_t bytes) : bytes_(bytes) {
    const std::size_t extra = 2 * kMiB;
    void* raw = mmap(nullptr, bytes + extra, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) throw std::runtime_error("mmap: " + std::string(strerror(errno)));
    auto* base = static_cast<std::byte*>(raw);
    const auto address = reinterpret_cast<std::uintptr_t>(base);
    begin_ = base + ((extra - address % extra) % extra);
    if (begin_ > base) munmap(base, begin_ - base);
    std::byte* tail = begin_ + bytes;
    if (base + bytes + extra > tail) munmap(tail, base + bytes + extra - tail);
  }
  ~Region() { munmap(begin_, bytes_); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  std::byte* begin() const { return begin_; }
  std::byte* end() const { return begin_ + bytes_; }
  std::size_t size() const { return bytes_; }

 private:
  std::byte* begin_ = nullptr;
  std::size_t bytes_;
};

struct Piece {
  std::byte* start;
  std::size_t length;
};

// Records every piece a heap reports through on_new_extent.
class Carvings {
 public:
  SharedHeap::NewExtentCallback Callback() {
    return [this](std::byte* start, std::size_t length) {
      std::lock_guard<std::mutex> lock(mutex_);
      pieces_.push_back({start, length});
    };
  }

  std::vector<Piece> Pieces() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pieces_;
  }

  std::size_t Total() const {
    std::size_t total = 0;
    for (const Piece& piece : Pieces()) total += piece.length;
    return total;
  }

  // Every piece is page aligned, inside the region, and no two overlap.
  void ExpectWellFormed(const Region& region) const {
    std::vector<Piece> pieces = Pieces();
    std::sort(pieces.begin(), pieces.end(),
              [](const Piece& a, const Piece& b) { return a.start < b.start; });
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pieces[i].start) % 4096, 0u);
      EXPECT_EQ(pieces[i].length % 4096, 0u);
      EXPECT_GT(pieces[i].length, 0u);
      EXPECT_GE(pieces[i].start, region.begin());
      EXPECT_LE(pieces[i].start + pieces[i].length, region.end());
      if (i > 0) {
        EXPECT_LE(pieces[i - 1].start + pieces[i - 1].length, pieces[i].start)
            << "pieces at " << Address(pieces[i - 1].start) << " and " << Address(pieces[i].start)
            << " overlap";
      }
    }
  }

  // [p, p + n) lies inside the reported pieces (jemalloc merges adjacent extents, so a block may
  // span two adjacent pieces).
  bool Covers(const void* p, std::size_t n) const {
    std::vector<Piece> pieces = Pieces();
    std::sort(pieces.begin(), pieces.end(),
              [](const Piece& a, const Piece& b) { return a.start < b.start; });
    const auto* first = static_cast<const std::byte*>(p);
    const std::byte* last = first + n;
    for (const Piece& piece : pieces) {
      if (piece.start + piece.length <= first) continue;
      if (piece.start > first) return false;  // a gap before the rest of the block
      first = piece.start + piece.length;
      if (first >= last) return true;
    }
    return false;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Piece> pieces_;
};

// Fills a whole block (its usable size) with one 64-bit tag, so that two overlapping blocks
// cannot both keep their own.
void Fill(void* p, std::size_t usable, std::uint64_t tag) {
  auto* words = static_cast<std::uint64_t*>(p);
  std::fill(words, words + usable / sizeof(std::uint64_t), tag);
}

bool Holds(const void* p, std::size_t usable, std::uint64_t tag) {
  const auto* words = static_cast<const std::uint64_t*>(p);
  return std::all_of(words, words + usable / sizeof(std::uint64_t),
                     [tag](std::uint64_t word) { return word == tag; });
}

struct Block {
  void* p;
  std::size_t usable;
  std::uint64_t tag;
};

// Blocks lie in the slice, inside carved pieces, and no two overlap.
void ExpectDisjointAndCovered(std::vector<Block> blocks, const Region& region,
                              const Carvings& carvings) {
  std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.p < b.p; });
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto* start = static_cast<const std::byte*>(blocks[i].p);
    ASSERT_GE(start, region.begin());
    ASSERT_LE(start + blocks[i].usable, region.end());
    ASSERT_TRUE(carvings.Covers(start, blocks[i].usable))
        << Address(start) << " (" << blocks[i].usable << " bytes) is not in a carved piece";
    if (i > 0) {
      ASSERT_LE(static_cast<const std::byte*>(blocks[i - 1].p) + blocks[i - 1].usable, start)
          << "blocks at " << Address(blocks[i - 1].p) << " and " << Address(start) << " overlap";
    }
  }
}

// 1 B to 256 KiB, spread over the powers of two; 3 in 1,000 from 256 KiB to 4 MiB.
std::size_t RandomSize(std::mt19937_64& random) {
  if (random() % 1000 < 3) return 256 * kKiB + random() % (4 * kMiB - 256 * kKiB + 1);
  const unsigned bits = static_cast<unsigned>(random() % 18) + 1;
  return 1 + random() % (std::size_t{1} << bits);
}

template <typename F>
Error CatchError(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return Error(LMDX_ERR_INTERNAL, "no lmdx::Error was thrown");
}

TEST(SharedHeapTest, BlocksLieInsideTheSliceAndInsideCarvedPieces) {
  Region region(256 * kMiB);
  Carvings carvings;
  SharedHeap heap(region.begin(), region.size(), carvings.Callback());
  EXPECT_EQ(heap.metadata(), HeapMetadata::kPrivate);
  // Metadata outside the slice: creating the heap carves nothing.
  EXPECT_EQ(heap.CarvedBytes(), 0u);
  EXPECT_TRUE(carvings.Pieces().empty());

  // The first allocation makes jemalloc take its first piece: 2 MiB, at the start of the slice.
  void* first = heap.Allocate(100);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(carvings.Pieces().size(), 1u);
  EXPECT_EQ(carvings.Pieces()[0].start, region.begin());
  EXPECT_EQ(carvings.Pieces()[0].length, 2 * kMiB);
  EXPECT_EQ(heap.CarvedBytes(), 2 * kMiB);
  heap.Free(first);

  std::mt19937_64 random(1);
  std::vector<Block> blocks;
  std::size_t usable_total = 0;
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const std::size_t bytes = i < 3 ? i : RandomSize(random);
    void* p = heap.Allocate(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    ASSERT_TRUE(heap.Contains(p));
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % SharedHeap::kMinAlignment, 0u) << bytes;
    const std::size_t usable = heap.BlockSize(p);
    ASSERT_GE(usable, std::max<std::size_t>(bytes, 1));
    ASSERT_EQ(usable, sallocx(p, 0));
    Fill(p, usable, 0x5348000000000000u + i);
    blocks.push_back({p, usable, 0x5348000000000000u + i});
    usable_total += usable;
  }
  EXPECT_EQ(heap.LiveBlocks(), blocks.size());
  EXPECT_EQ(heap.LiveBytes(), usable_total);
  carvings.ExpectWellFormed(region);
  EXPECT_EQ(carvings.Total(), heap.CarvedBytes());
  EXPECT_GE(heap.CarvedBytes(), usable_total);
  ExpectDisjointAndCovered(blocks, region, carvings);
  for (const Block& block : blocks) {
    ASSERT_TRUE(Holds(block.p, block.usable, block.tag)) << Address(block.p);
  }
  for (const Block& block : blocks) heap.Free(block.p);
  EXPECT_EQ(heap.LiveBlocks(), 0u);
  EXPECT_EQ(heap.LiveBytes(), 0u);
  EXPECT_FALSE(heap.Contains(region.end()));
  EXPECT_FALSE(heap.Contains(region.begin() - 1));
  EXPECT_TRUE(heap.Contains(region.end() - 1));
}

TEST(SharedHeapTest, AlignedAllocationsHonourTheirAlignment) {
  Region region(256 * kMiB);
  Carvings carvings;
  SharedHeap heap(region.begin(), region.size(), carvings.Callback());
  std::vector<Block> blocks;
  std::uint64_t tag = 1;
  for (std::size_t alignment = 1; alignment <= 4 * kMiB; alignment *= 2) {
    for (std::size_t bytes : {std::size_t{1}, std::size_t{100}, 5 * kKiB, 3 * kMiB}) {
      void* p = heap.AllocateAligned(bytes, alignment);
      ASSERT_NE(p, nullptr) << bytes << " aligned to " << alignment;
      const std::size_t expected = std::max(alignment, SharedHeap::kMinAlignment);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % expected, 0u)
          << bytes << " aligned to " << alignment;
      ASSERT_GE(heap.BlockSize(p), bytes);
      Fill(p, heap.BlockSize(p), tag);
      blocks.push_back({p, heap.BlockSize(p), tag++});
    }
  }
  ExpectDisjointAndCovered(blocks, region, carvings);
  carvings.ExpectWellFormed(region);
  EXPECT_EQ(carvings.Total(), heap.CarvedBytes());
  for (const Block& block : blocks) {
    ASSERT_TRUE(Holds(block.p, block.usable, block.tag));
    heap.Free(block.p);
  }
  Error bad = CatchError([&] { heap.AllocateAligned(64, 48); });
  EXPECT_EQ(bad.code(), LMDX_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bad.what()).find("48"), std::string::npos) << bad.what();
  bad = CatchError([&] { heap.AllocateAligned(64, 0); });
  EXPECT_EQ(bad.code(), LMDX_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(heap.AllocateAligned(64, 512 * kMiB), nullptr);
  EXPECT_EQ(heap.LiveBlocks(), 0u);
}

// 100,000 random-size allocations and their frees from 4 threads, each block checked for its own
// contents before it is freed; the blocks live at the end are checked against each other.
TEST(SharedHeapTest, FourThreadsOfRandomSizes) {
  Region region(256 * kMiB);
  Carvings carvings;
  SharedHeap heap(region.begin(), region.size(), carvings.Callback());
  constexpr int kThreads = 4;
  constexpr int kAllocationsPerThread = 25000;
  constexpr std::size_t kMaxLivePerThread = 64;

  std::vector<std::vector<Block>> remaining(kThreads);
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(100 + t);
      std::vector<Block>& live = remaining[t];
      int allocations = 0;
      while (allocations < kAllocationsPerThread) {
        if (live.size() < kMaxLivePerThread && (live.empty() || random() % 2 == 0)) {
          const std::size_t bytes = RandomSize(random);
          void* p = heap.Allocate(bytes);
          if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 != 0 || !heap.Contains(p) ||
              heap.BlockSize(p) < bytes) {
            failures[t] = "bad block " + Address(p) + " for " + std::to_string(bytes) + " bytes";
            return;
          }
          const std::uint64_t tag = (static_cast<std::uint64_t>(t) << 32) | allocations++;
          Fill(p, heap.BlockSize(p), tag);
          live.push_back({p, heap.BlockSize(p), tag});
        } else {
          const std::size_t i = random() % live.size();
          const Block block = live[i];
          live[i] = live.back();
          live.pop_back();
          if (!Holds(block.p, block.usable, block.tag)) {
            failures[t] = "block " + Address(block.p) + " was overwritten";
            return;
          }
          heap.Free(block.p);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& failure : failures) ASSERT_EQ(failure, "");

  std::vector<Block> all;
  std::size_t usable_total = 0;
  for (const auto& blocks : remaining) {
    for (const Block& block : blocks) {
      all.push_back(block);
      usable_total += block.usable;
    }
  }
  EXPECT_EQ(heap.LiveBlocks(), all.size());
  EXPECT_EQ(heap.LiveBytes(), usable_total);
  ExpectDisjointAndCovered(all, region, carvings);
  carvings.ExpectWellFormed(region);
  EXPECT_EQ(carvings.Total(), heap.CarvedBytes());
  // At most 4 x 64 blocks live at once, mostly small: the slice did not grow with the 100,000
  // allocations. (Measured: 28 MiB.)
  EXPECT_LT(heap.CarvedBytes(), 128 * kMiB);
  for (const Block& block : all) {
    ASSERT_TRUE(Holds(block.p, block.usable, block.tag)) << Address(block.p);
    heap.Free(block.p);
  }
  EXPECT_EQ(heap.LiveBlocks(), 0u);
  EXPECT_EQ(heap.LiveBytes(), 0u);
}

// The same 500 blocks allocated and freed 100 times: after the first rounds, the heap serves them
// from memory it carved before, to the byte.
TEST(SharedHeapTest, FreedMemoryIsReused) {
  Region region(256 * kMiB);
  Carvings carvings;
  SharedHeap heap(region.begin(), region.size(), carvings.Callback());
  std::mt19937_64 random(7);
  std::vector<std::size_t> sizes;
  std::size_t round_bytes = 0;
  for (int i = 0; i < 500; ++i) {
    sizes.push_back(RandomSize(random));
    round_bytes += sizes.back();
  }
  sizes[100] = 4 * kMiB;
  sizes[300] = 3 * kMiB;
  std::size_t carved_after_warm_up = 0;
  for (int round = 0; round < 100; ++round) {
    std::vector<void*> blocks;
    for (std::size_t bytes : sizes) {
      void* p = heap.Allocate(bytes);
      ASSERT_NE(p, nullptr);
      std::memset(p, round, bytes);
      blocks.push_back(p);
    }
    for (void* p : blocks) heap.Free(p);
    if (round == 2) carved_after_warm_up = heap.CarvedBytes();
  }
  EXPECT_EQ(heap.CarvedBytes(), carved_after_warm_up);
  EXPECT_LT(heap.CarvedBytes(), 4 * round_bytes);
  EXPECT_EQ(carvings.Total(), heap.CarvedBytes());
}

// Freed memory keeps its contents: the heap never purges, even when jemalloc is told to.
TEST(SharedHeapTest, FreedMemoryIsNeverPurged) {
  Region region(64 * kMiB);
  SharedHeap heap(region.begin(), region.size(), nullptr);
  void* large = heap.Allocate(3 * kMiB);
  void* small = heap.Allocate(100);
  ASSERT_NE(large, nullptr);
  ASSERT_NE(small, nullptr);
  std::memset(large, 0xab, 3 * kMiB);
  std::memset(small, 0xcd, 100);
  heap.Free(large);
  heap.Free(small);
  const std::string purge = "arena." + std::to_string(heap.arena_index()) + ".purge";
  ASSERT_EQ(mallctl(purge.c_str(), nullptr, nullptr, nullptr, 0), 0);
  const auto* bytes = static_cast<const unsigned char*>(large);
  EXPECT_TRUE(std::all_of(bytes, bytes + 3 * kMiB, [](unsigned char c) { return c == 0xab; }));
  // The region is private anonymous memory: a purge (MADV_DONTNEED) would have zeroed it.
  EXPECT_EQ(static_cast<const unsigned char*>(small)[99], 0xcd);
}

// Blocks of 64 KiB until the slice is full, then all freed, three times over: each round gets
// the same number of blocks, from memory carved in the first.
TEST(SharedHeapTest, AnExhaustedSliceGivesNullptrAndRecovers) {
  Region region(8 * kMiB);
  Carvings carvings;
  SharedHeap heap(region.begin(), region.size(), carvings.Callback());
  EXPECT_EQ(heap.Allocate(9 * kMiB), nullptr);
  EXPECT_EQ(heap.Allocate(8 * kMiB + 1), nullptr);
  EXPECT_EQ(heap.Allocate(SIZE_MAX), nullptr);
  EXPECT_EQ(heap.AllocateAligned(100, 16 * kMiB), nullptr);
  EXPECT_EQ(heap.LiveBlocks(), 0u);

  std::size_t first_count = 0;
  std::size_t first_carved = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<void*> blocks;
    std::size_t usable_total = 0;
    for (int i = 0; i < 1000; ++i) {
      void* p = heap.Allocate(64 * kKiB);
      if (p == nullptr) break;
      std::memset(p, round, 64 * kKiB);
      usable_total += heap.BlockSize(p);
      blocks.push_back(p);
    }
    ASSERT_LT(blocks.size(), 1000u) << "an 8 MiB slice held 1,000 blocks of 64 KiB";
    // Nearly all of the slice was usable (a large block carries a page of padding).
    EXPECT_GE(usable_total, 7 * kMiB);
    EXPECT_LE(heap.CarvedBytes(), 8 * kMiB);
    EXPECT_EQ(heap.Allocate(64 * kKiB), nullptr);  // still exhausted
    if (round == 0) {
      first_count = blocks.size();
      first_carved = heap.CarvedBytes();
      // One freed block makes room for one more.
      heap.Free(blocks.back());
      blocks.back() = heap.Allocate(64 * kKiB);
      ASSERT_NE(blocks.back(), nullptr);
    } else {
      EXPECT_EQ(blocks.size(), first_count);
      EXPECT_EQ(heap.CarvedBytes(), first_carved);
    }
    for (void* p : blocks) heap.Free(p);
  }
  carvings.ExpectWellFormed(region);
  EXPECT_EQ(carvings.Total(), heap.CarvedBytes());
  EXPECT_EQ(heap.LiveBlocks(), 0u);
}

TEST(SharedHeapTest, MisuseThrowsNamesTheAddressAndChangesNothing) {
  Region region(64 * kMiB);
  SharedHeap heap(region.begin(), region.size(), nullptr);
  auto* block = static_cast<std::byte*>(heap.Allocate(100));
  ASSERT_NE(block, nullptr);
  std::memset(block, 7, 100);
  void* other = heap.Allocate(200);
  ASSERT_NE(other, nullptr);
  heap.Free(other);
  const std::size_t usable = heap.BlockSize(block);

  // Double free.
  Error error = CatchError([&] { heap.Free(other); });
  EXPECT_EQ(error.code(), LMDX_ERR_MISUSE);
  EXPECT_EQ(std::string(error.what()),
            Address(other) +
                " is not a live block of this node's shared heap (double free or foreign pointer)");

  // Foreign pointer: outside the slice.
  int local = 0;
  error = CatchError([&] { heap.Free(&local); });
  EXPECT_EQ(error.code(), LMDX_ERR_MISUSE);
  EXPECT_EQ(std::string(error.what()),
            Address(&local) +
                " is not a live block of this node's shared heap (foreign pointer: "
                "outside this node's slice [" +
                Address(region.begin()) + ", " + Address(region.end()) + "))");

  // Inside the slice, never allocated.
  std::byte* untouched = region.end() - 4096;
  error = CatchError([&] { heap.Free(untouched); });
  EXPECT_EQ(error.code(), LMDX_ERR_MISUSE);
  EXPECT_EQ(std::string(error.what()),
            Address(untouched) +
                " is not a live block of this node's shared heap (double free or foreign pointer)");

  // Interior pointer.
  error = CatchError([&] { heap.Free(block + 40); });
  EXPECT_EQ(error.code(), LMDX_ERR_MISUSE);
  EXPECT_EQ(std::string(error.what()),
            Address(block + 40) +
                " is not a live block of this node's shared heap (interior pointer: 40 bytes into "
                "the live block at " +
                Address(block) + " of " + std::to_string(usable) + " bytes)");

  error = CatchError([&] { heap.BlockSize(other); });
  EXPECT_EQ(error.code(), LMDX_ERR_MISUSE);
  EXPECT_NE(std::string(error.what()).find(Address(other)), std::string::npos);
  error = CatchError([&] { heap.BlockSize(block + 1); });
  EXPECT_EQ(error.code(), LMDX_ERR_MISUSE);

  // Nothing changed: the block is still live with its contents, and the heap keeps working.
  EXPECT_EQ(heap.LiveBlocks(), 1u);
  EXPECT_EQ(heap.LiveBytes(), usable);
  EXPECT_EQ(heap.BlockSize(block), usable);
  EXPECT_EQ(block[99], std::byte{7});
  heap.Free(nullptr);
  heap.Free(block);
  EXPECT_EQ(heap.LiveBlocks(), 0u);
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i) {
    blocks.push_back(heap.Allocate(100));
    ASSERT_NE(blocks.back(), nullptr);
  }
  for (void* p : blocks) heap.Free(p);
  EXPECT_EQ(heap.LiveBlocks(), 0u);
}

TEST(SharedHeapTest, TwoHeapsInOneProcessStayIndependent) {
  Region region_a(64 * kMiB);
  Region region_b(64 * kMiB);
  Carvings carvings_a;
  Carvings carvings_b;
  std::vector<Block> blocks_a;
  std::vector<Block> blocks_b;
  SharedHeap heap_a(region_a.begin(), region_a.size(), carvings_a.Callback());
  {
    SharedHeap heap_b(region_b.begin(), region_b.size(), carvings_b.Callback());
    EXPECT_NE(heap_a.arena_index(), heap_b.arena_index());
    std::mt19937_64 random(3);
    for (std::uint64_t i = 0; i < 1000; ++i) {
      SharedHeap& heap = i % 2 == 0 ? heap_a : heap_b;
      std::vector<Block>& blocks = i % 2 == 0 ? blocks_a : blocks_b;
      void* p = heap.Allocate(1 + random() % (64 * kKiB));
      ASSERT_NE(p, nullptr);
      Fill(p, heap.BlockSize(p), i);
      blocks.push_back({p, heap.BlockSize(p), i});
    }
    ExpectDisjointAndCovered(blocks_a, region_a, carvings_a);
    ExpectDisjointAndCovered(blocks_b, region_b, carvings_b);
    carvings_a.ExpectWellFormed(region_a);
    carvings_b.ExpectWellFormed(region_b);
    EXPECT_EQ(carvings_a.Total(), heap_a.CarvedBytes());
    EXPECT_EQ(carvings_b.Total(), heap_b.CarvedBytes());
    EXPECT_EQ(heap_a.LiveBlocks(), 500u);
    EXPECT_EQ(heap_b.LiveBlocks(), 500u);

    // A block of one heap is foreign to the other, and stays live in its own.
    const Error error = CatchError([&] { heap_a.Free(blocks_b[0].p); });
    EXPECT_EQ(error.code(), LMDX_ERR_MISUSE);
    EXPECT_NE(std::string(error.what()).find("foreign pointer"), std::string::npos);
    EXPECT_EQ(heap_b.BlockSize(blocks_b[0].p), blocks_b[0].usable);

    for (const Block& block : blocks_b) {
      ASSERT_TRUE(Holds(block.p, block.usable, block.tag));
      heap_b.Free(block.p);
    }
  }  // heap_b destroyed (empty): its arena goes
  for (const Block& block : blocks_a) ASSERT_TRUE(Holds(block.p, block.usable, block.tag));
  EXPECT_EQ(heap_a.LiveBlocks(), 500u);
  void* p = heap_a.Allocate(1000);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(heap_a.Contains(p));
  heap_a.Free(p);
  for (const Block& block : blocks_a) heap_a.Free(block.p);
  EXPECT_EQ(heap_a.LiveBlocks(), 0u);
}

TEST(SharedHeapTest, DestroyingAHeapWithLiveBlocksLeavesThemAlone) {
  // The arena stays for the rest of the process and still describes this memory, so the region
  // stays mapped until the end too (no later mapping may take its addresses).
  static Region region(16 * kMiB);
  std::vector<Block> blocks;
  {
    SharedHeap heap(region.begin(), region.size(), nullptr);
    for (std::uint64_t i = 0; i < 50; ++i) {
      void* p = heap.Allocate(100 + i * 1000);
      ASSERT_NE(p, nullptr);
      Fill(p, heap.BlockSize(p), i);
      blocks.push_back({p, heap.BlockSize(p), i});
    }
  }
  for (const Block& block : blocks) ASSERT_TRUE(Holds(block.p, block.usable, block.tag));
  // Another heap on another slice works as before.
  Region other_region(16 * kMiB);
  SharedHeap other(other_region.begin(), other_region.size(), nullptr);
  void* p = other.Allocate(1000);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(other.Contains(p));
  other.Free(p);
}

// With kInSlice, jemalloc 5.3 takes its metadata through the hooks too: one 2 MiB block while the
// arena is created, reported like any piece.
TEST(SharedHeapTest, MetadataInTheSliceIsCarvedThroughTheHooks) {
  Region region(64 * kMiB);
  Carvings carvings;
  SharedHeap heap(region.begin(), region.size(), carvings.Callback(), HeapMetadata::kInSlice);
  EXPECT_EQ(heap.metadata(), HeapMetadata::kInSlice);
  ASSERT_EQ(carvings.Pieces().size(), 1u);
  EXPECT_EQ(carvings.Pieces()[0].start, region.begin());
  EXPECT_EQ(carvings.Pieces()[0].length, 2 * kMiB);
  EXPECT_EQ(heap.CarvedBytes(), 2 * kMiB);

  std::vector<Block> blocks;
  for (std::uint64_t i = 0; i < 200; ++i) {
    void* p = heap.Allocate(1 + i * 300);
    ASSERT_NE(p, nullptr);
    EXPECT_GE(static_cast<std::byte*>(p), region.begin() + 2 * kMiB);  // not in the metadata
    Fill(p, heap.BlockSize(p), i);
    blocks.push_back({p, heap.BlockSize(p), i});
  }
  ExpectDisjointAndCovered(blocks, region, carvings);
  carvings.ExpectWellFormed(region);
  EXPECT_EQ(carvings.Total(), heap.CarvedBytes());
  for (const Block& block : blocks) {
    ASSERT_TRUE(Holds(block.p, block.usable, block.tag));
    heap.Free(block.p);
  }

  // A slice too small for the first metadata block: jemalloc cannot create the arena.
  Region tiny(1 * kMiB);
  const Error error =
      CatchError([&] { SharedHeap(tiny.begin(), tiny.size(), nullptr, HeapMetadata::kInSlice); });
  EXPECT_EQ(error.code(), LMDX_ERR_INTERNAL);
}

// A callback that throws refuses the piece; jemalloc asks again and the piece is carved later.
TEST(SharedHeapTest, ACallbackThatThrowsRefusesThePiece) {
  Region region(64 * kMiB);
  Carvings carvings;
  int calls = 0;
  auto record = carvings.Callback();
  SharedHeap heap(region.begin(), region.size(), [&](std::byte* start, std::size_t length) {
    if (calls++ == 0) throw std::runtime_error("no page table yet");
    record(start, length);
  });
  void* p = heap.Allocate(100);
  ASSERT_NE(p, nullptr);
  EXPECT_GE(calls, 2);
  EXPECT_EQ(carvings.Total(), heap.CarvedBytes());
  EXPECT_TRUE(carvings.Covers(p, heap.BlockSize(p)));
  carvings.ExpectWellFormed(region);
  heap.Free(p);
}

TEST(SharedHeapTest, TheSliceMustBeWholePages) {
  Region region(4 * kMiB);
  Error error = CatchError([&] { SharedHeap(region.begin() + 16, kMiB, nullptr); });
  EXPECT_EQ(error.code(), LMDX_ERR_INVALID_ARGUMENT);
  error = CatchError([&] { SharedHeap(region.begin(), kMiB + 100, nullptr); });
  EXPECT_EQ(error.code(), LMDX_ERR_INVALID_ARGUMENT);
  error = CatchError([&] { SharedHeap(region.begin(), 0, nullptr); });
  EXPECT_EQ(error.code(), LMDX_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace lmdx::dsm

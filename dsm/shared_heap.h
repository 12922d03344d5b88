// The shared heap of one node: allocations from this node's slice of the global address range.
//
// Every node reserves the global range at the same virtual address; the heap part of it is split
// into one slice per node, and node r allocates only from slice r, so allocation never takes a
// global lock and a pointer means the same memory on every node. A SharedHeap serves its slice
// through a jemalloc arena of its own whose extent hooks only carve addresses out of the slice: the
// DSM owns the pages (it protects them, moves their contents between nodes), so the heap never
// maps, unmaps, purges, decommits or madvises anything. See docs/dsm_heap.md.
#ifndef LMDX_DSM_SHARED_HEAP_H_
#define LMDX_DSM_SHARED_HEAP_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace lmdx::dsm {

// Where jemalloc keeps the arena's own metadata: its "base" blocks, which hold the arena
// structure and the descriptor of every extent.
enum class HeapMetadata {
  // In private memory jemalloc maps for itself, outside the slice (jemalloc 5.3's
  // experimental.arenas_create_ext with metadata_use_hooks off). The slice then holds user blocks
  // only: jemalloc never writes into it. The default.
  kPrivate,
  // Carved from the slice through the hooks like user extents (plain arenas.create). The first
  // block is 2 MiB, 2 MiB aligned, carved while the arena is created; more come when the metadata
  // outgrows it. Every such block is reported through on_new_extent too.
  kInSlice,
};

class SharedHeap {
 public:
  // Called with (start, length) each time the heap takes a never-used, page-aligned piece of the
  // slice, before jemalloc reads or writes it: the DSM opens those pages for writing on this node.
  // It runs inside jemalloc (under the arena's locks and this heap's carving lock), so it must not
  // allocate from or free into this heap; an exception it throws refuses the piece (it stays
  // available; jemalloc may ask again, with another size, or the allocation returns nullptr).
  using NewExtentCallback = std::function<void(std::byte*, std::size_t)>;

  // Serves allocations from [begin, begin + bytes) (page aligned, contents zero: a fresh slice
  // that no heap used before) through a jemalloc arena of its own whose extent hooks carve that
  // slice. Metadata is kept outside the slice (HeapMetadata::kPrivate), so creating the heap
  // carves nothing. Throws lmdx::Error(LMDX_ERR_INVALID_ARGUMENT) for a misaligned or empty slice,
  // lmdx::Error(LMDX_ERR_INTERNAL) if jemalloc refuses to create or configure the arena.
  SharedHeap(std::byte* begin, std::size_t bytes, NewExtentCallback on_new_extent);
  // The same, choosing where jemalloc keeps the arena's metadata. kPrivate falls back to kInSlice
  // when the jemalloc in use does not offer experimental.arenas_create_ext; metadata() says which
  // placement the heap got.
  SharedHeap(std::byte* begin, std::size_t bytes, NewExtentCallback on_new_extent,
             HeapMetadata metadata);

  // With no live block, destroys the arena (jemalloc drops its bookkeeping; the hooks refuse to
  // give anything back, so the slice is left exactly as it is). With live blocks, leaves the arena
  // and its hooks in place for the rest of the process, so nothing jemalloc may still hold can
  // dangle; the blocks' memory stays as it is. Never touches the slice's pages either way. No
  // other call on this heap may run concurrently with the destructor.
  ~SharedHeap();

  SharedHeap(const SharedHeap&) = delete;
  SharedHeap& operator=(const SharedHeap&) = delete;

  // nullptr when the slice is exhausted (or bytes exceeds the slice). Alignment: at least
  // kMinAlignment. Allocate(0) returns a distinct block of kMinAlignment bytes. Thread safe.
  void* Allocate(std::size_t bytes);
  // alignment: a power of two (else LMDX_ERR_INVALID_ARGUMENT); below kMinAlignment it is raised
  // to kMinAlignment. nullptr when the slice cannot hold such a block.
  void* AllocateAligned(std::size_t bytes, std::size_t alignment);

  // Frees a block returned by Allocate or AllocateAligned; nullptr is ignored (as by free()).
  // Anything else (a foreign pointer, a double free, a pointer into the middle of a block) throws
  // lmdx::Error(LMDX_ERR_MISUSE) naming the address and which of these it is, and changes nothing:
  // jemalloc never sees such a pointer. Thread safe.
  void Free(void* p);

  // Whether p lies inside this heap's slice (a live block or not).
  bool Contains(const void* p) const;
  // Usable size of the live block that starts at p (at least what was asked); throws like Free
  // for anything else.
  std::size_t BlockSize(const void* p) const;

  // Figures for statistics.
  // Bytes of the slice handed to jemalloc so far (the sum of every on_new_extent length). Memory
  // freed by the program stays carved: jemalloc reuses it for later blocks.
  std::size_t CarvedBytes() const;
  std::size_t LiveBlocks() const;
  // Sum of the usable sizes of the live blocks.
  std::size_t LiveBytes() const;

  std::byte* begin() const { return begin_; }
  std::size_t size() const { return bytes_; }
  unsigned arena_index() const { return arena_; }
  HeapMetadata metadata() const { return metadata_; }

  static constexpr std::size_t kMinAlignment = alignof(std::max_align_t);

 private:
  struct Slice;  // the extent hooks and the carving state (shared_heap.cc)

  void* Track(void* p);
  // Why p is not a live block, for the MISUSE text. Requires mutex_.
  std::string NotALiveBlock(const void* p) const;

  std::byte* const begin_;
  const std::size_t bytes_;
  std::unique_ptr<Slice> slice_;
  unsigned arena_ = 0;
  int flags_ = 0;  // MALLOCX_ARENA(arena_) | MALLOCX_TCACHE_NONE
  HeapMetadata metadata_ = HeapMetadata::kPrivate;

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> live_;  // start of each live block -> its usable size
  std::size_t live_bytes_ = 0;
};

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_SHARED_HEAP_H_

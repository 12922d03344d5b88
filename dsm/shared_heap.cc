#include "dsm/shared_heap.h"

#include <jemalloc/jemalloc.h>
#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <vector>

#include "base/error.h"
#include "base/log.h"

namespace lmdx::dsm {

namespace {

// jemalloc 5.3's arena_config_t (include/jemalloc/internal/arena_types.h), the argument of
// experimental.arenas_create_ext. It is not in the public header; the control checks the size it
// is given, so a jemalloc whose structure differs answers EINVAL instead of misreading it.
struct ArenaConfig {
  extent_hooks_t* extent_hooks;
  bool metadata_use_hooks;
};

std::string Address(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

std::size_t PageSize() {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

std::uintptr_t AlignUp(std::uintptr_t value, std::size_t alignment) {
  return (value + alignment - 1) & ~static_cast<std::uintptr_t>(alignment - 1);
}

int Mallctl(const std::string& name, void* old_value, std::size_t* old_length, void* new_value,
            std::size_t new_length) {
  return mallctl(name.c_str(), old_value, old_length, new_value, new_length);
}

}  // namespace

// The extent hooks of one heap and the state they carve with. jemalloc calls the hooks with the
// extent_hooks_t pointer it was given and no other context: that pointer is the base subobject of
// this Slice, so a static_cast finds the heap's state (several heaps may live in one process).
//
// What jemalloc 5.3 does with the hooks, and what each answers:
// - alloc: carve a never-used piece of the slice (see Carve). Fresh pieces are zero (the slice is
//   fresh) and always accessible, so *zero and *commit are set true.
// - dalloc, decommit, purge_lazy, purge_forced: refuse (return true). jemalloc then keeps the
//   extent, committed and with its contents, as "retained" and reuses it for later allocations;
//   nothing is ever given back, decommitted, purged or madvised. (The arena decays at once, so
//   every freed extent takes that path straight away; see the constructor.)
// - destroy: nothing (called for retained extents when the arena is destroyed; the slice stays).
// - commit: success (never needed, since nothing is ever decommitted).
// - split, merge: success. The whole slice is one mapping the DSM made, so any extent can be split
//   and any two adjacent extents of this arena merged; jemalloc needs split to carve the large
//   pieces it asks for (opt.retain grows in 2 MiB and larger steps) into extents.
//
// Metadata ("base" blocks): jemalloc 5.3 allocates an arena's base blocks through the arena's
// extent hooks when the arena comes from arenas.create (arena_config_default has
// metadata_use_hooks = true; base_new() then calls the alloc hook for a 2 MiB, 2 MiB-aligned block
// before the arena exists, and again whenever the metadata outgrows its blocks). Those blocks are
// written by jemalloc under the arena's locks, so a DSM that protected one of those pages would
// fault inside the allocator. HeapMetadata::kPrivate therefore creates the arena through
// experimental.arenas_create_ext with metadata_use_hooks = false: base blocks come from jemalloc's
// own private mmap, and the slice holds nothing but user blocks (jemalloc 5.3 keeps slab bitmaps
// in the extent descriptors, not in the slabs). With kInSlice, base blocks go through alloc like
// any extent, so on_new_extent covers them as well: either way every piece of the slice jemalloc
// ever writes was reported first.
struct SharedHeap::Slice : extent_hooks_t {
  // Pieces skipped to honour an alignment or a new_addr: never used, carved later first.
  struct Hole {
    std::uintptr_t begin;
    std::uintptr_t end;
  };
  static constexpr std::size_t kMaxHoles = 32;

  Slice(std::byte* slice_begin, std::size_t bytes, NewExtentCallback callback)
      : extent_hooks_t{},
        begin(reinterpret_cast<std::uintptr_t>(slice_begin)),
        end(begin + bytes),
        on_new_extent(std::move(callback)),
        next(begin) {
    alloc = &Alloc;
    dalloc = &Refuse;
    destroy = &Destroy;
    commit = &Commit;
    decommit = &RefuseRange;
    purge_lazy = &RefuseRange;
    purge_forced = &RefuseRange;
    split = &Split;
    merge = &Merge;
  }

  static Slice* Of(extent_hooks_t* hooks) { return static_cast<Slice*>(hooks); }

  static void* Alloc(extent_hooks_t* hooks, void* new_addr, std::size_t size, std::size_t alignment,
                     bool* zero, bool* commit, unsigned /*arena*/) {
    Slice* slice = Of(hooks);
    std::lock_guard<std::mutex> lock(slice->mutex);
    if (slice->retired || size == 0) return nullptr;
    const std::uintptr_t start =
        slice->Carve(reinterpret_cast<std::uintptr_t>(new_addr), size, alignment);
    if (start == 0) return nullptr;
    auto* piece = reinterpret_cast<std::byte*>(start);
    if (slice->on_new_extent) {
      try {
        slice->on_new_extent(piece, size);
      } catch (const std::exception& e) {
        slice->AddHole(start, start + size);  // still never used
        LogLine("shared heap: refused to carve " + std::to_string(size) + " bytes at " +
                Address(piece) + ": " + e.what());
        return nullptr;
      } catch (...) {
        slice->AddHole(start, start + size);
        LogLine("shared heap: refused to carve " + std::to_string(size) + " bytes at " +
                Address(piece) + ": the new-extent callback threw");
        return nullptr;
      }
    }
    slice->carved.fetch_add(size, std::memory_order_relaxed);
    *zero = true;
    *commit = true;
    return piece;
  }

  static bool Refuse(extent_hooks_t*, void*, std::size_t, bool, unsigned) { return true; }
  static void Destroy(extent_hooks_t*, void*, std::size_t, bool, unsigned) {}
  static bool Commit(extent_hooks_t*, void*, std::size_t, std::size_t, std::size_t, unsigned) {
    return false;
  }
  static bool RefuseRange(extent_hooks_t*, void*, std::size_t, std::size_t, std::size_t, unsigned) {
    return true;
  }
  static bool Split(extent_hooks_t*, void*, std::size_t, std::size_t, std::size_t, bool, unsigned) {
    return false;
  }
  static bool Merge(extent_hooks_t*, void*, std::size_t, void*, std::size_t, bool, unsigned) {
    return false;
  }

  // Takes size bytes at `want` (when not 0: jemalloc's new_addr, exactly that address or nothing)
  // or anywhere aligned to `alignment`, from the holes first, then from the never-used top of the
  // slice. Returns 0 when it cannot. Requires mutex.
  std::uintptr_t Carve(std::uintptr_t want, std::size_t size, std::size_t alignment) {
    if (alignment == 0 || !std::has_single_bit(alignment)) return 0;
    if (want != 0 && want % alignment != 0) return 0;
    for (std::size_t i = 0; i < hole_count; ++i) {
      const Hole hole = holes[i];
      const std::uintptr_t start = want != 0 ? want : AlignUp(hole.begin, alignment);
      if (start < hole.begin || start >= hole.end || hole.end - start < size) continue;
      holes[i] = holes[--hole_count];
      AddHole(hole.begin, start);
      AddHole(start + size, hole.end);
      return start;
    }
    const std::uintptr_t start = want != 0 ? want : AlignUp(next, alignment);
    if (start < next || start > end || end - start < size) return 0;
    AddHole(next, start);
    next = start + size;
    return start;
  }

  // Keeps [from, to) for later carving. With every slot taken, the smallest range is dropped (it
  // is simply never used).
  void AddHole(std::uintptr_t from, std::uintptr_t to) {
    if (to <= from) return;
    if (hole_count < kMaxHoles) {
      holes[hole_count++] = {from, to};
      return;
    }
    std::size_t smallest = 0;
    for (std::size_t i = 1; i < hole_count; ++i) {
      if (holes[i].end - holes[i].begin < holes[smallest].end - holes[smallest].begin) {
        smallest = i;
      }
    }
    if (to - from > holes[smallest].end - holes[smallest].begin) holes[smallest] = {from, to};
  }

  // Keeps a slice whose arena outlives its heap (blocks were still live when the heap was
  // destroyed): jemalloc holds a pointer to its hooks for as long as the arena exists, which is the
  // rest of the process, so it stays allocated, and reachable from here. The list is never
  // destroyed (no exit-time order to get wrong).
  static void Retire(std::unique_ptr<Slice> slice) {
    static std::mutex retired_mutex;
    static auto* retired = new std::vector<std::unique_ptr<Slice>>();
    std::lock_guard<std::mutex> lock(retired_mutex);
    retired->push_back(std::move(slice));
  }

  const std::uintptr_t begin;
  const std::uintptr_t end;
  NewExtentCallback on_new_extent;  // guarded by mutex
  std::atomic<std::size_t> carved{0};

  std::mutex mutex;
  bool retired = false;  // guarded by mutex: the heap is gone, the arena was left in place
  std::uintptr_t next;   // guarded by mutex: everything from here to end was never carved
  std::array<Hole, kMaxHoles> holes{};  // guarded by mutex
  std::size_t hole_count = 0;           // guarded by mutex
};

SharedHeap::SharedHeap(std::byte* begin, std::size_t bytes, NewExtentCallback on_new_extent)
    : SharedHeap(begin, bytes, std::move(on_new_extent), HeapMetadata::kPrivate) {}

SharedHeap::SharedHeap(std::byte* begin, std::size_t bytes, NewExtentCallback on_new_extent,
                       HeapMetadata metadata)
    : begin_(begin), bytes_(bytes), metadata_(metadata) {
  const std::size_t page = PageSize();
  const auto address = reinterpret_cast<std::uintptr_t>(begin);
  if (begin == nullptr || bytes == 0 || address % page != 0 || bytes % page != 0 ||
      address + bytes < address) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "shared heap: the slice [" + Address(begin) + ", +" +
                                               std::to_string(bytes) +
                                               ") is not a non-empty range of whole pages");
  }
  slice_ = std::make_unique<Slice>(begin, bytes, std::move(on_new_extent));

  extent_hooks_t* hooks = slice_.get();
  std::size_t index_length = sizeof arena_;
  int rc = ENOENT;
  const char* control = "experimental.arenas_create_ext";
  if (metadata == HeapMetadata::kPrivate) {
    ArenaConfig config{hooks, /*metadata_use_hooks=*/false};
    rc = mallctl(control, &arena_, &index_length, &config, sizeof config);
    // ENOENT: this jemalloc has no such control; EINVAL: its arena_config_t is another shape.
    if (rc == ENOENT || rc == EINVAL) {
      DebugLine("shared heap: experimental.arenas_create_ext unavailable (error " +
                std::to_string(rc) + "): the arena's metadata goes into the slice");
      metadata_ = HeapMetadata::kInSlice;
    }
  }
  if (metadata_ == HeapMetadata::kInSlice) {
    index_length = sizeof arena_;
    control = "arenas.create";
    rc = mallctl(control, &arena_, &index_length, &hooks, sizeof(extent_hooks_t*));
  }
  if (rc != 0) {
    // No arena holds the hooks, so the slice can go with this object. (A failed creation may have
    // carved a metadata block; it is simply never used.)
    throw Error(LMDX_ERR_INTERNAL,
                "shared heap: jemalloc refused to create an arena for the slice [" +
                    Address(begin) + ", +" + std::to_string(bytes) +
                    "): " + SystemErrorText(control, rc));
  }
  flags_ = MALLOCX_ARENA(arena_) | MALLOCX_TCACHE_NONE;

  // Immediate decay. jemalloc coalesces the free extents of its "dirty" set only when it evicts
  // them (decay), so with decay off a full slice could not serve a large block even after every
  // small one was freed. With decay at 0, a freed extent is evicted at once: the hooks refuse to
  // purge or give it back, so it lands, untouched and committed, in the arena's retained set,
  // which coalesces neighbours immediately and is searched before the slice grows.
  const std::string prefix = "arena." + std::to_string(arena_) + ".";
  for (const char* decay : {"dirty_decay_ms", "muzzy_decay_ms"}) {
    ssize_t immediately = 0;
    rc = Mallctl(prefix + decay, nullptr, nullptr, &immediately, sizeof immediately);
    if (rc != 0) {
      if (Mallctl(prefix + "destroy", nullptr, nullptr, nullptr, 0) != 0) {
        Slice::Retire(std::move(slice_));
      }
      throw Error(LMDX_ERR_INTERNAL, "shared heap: jemalloc refused to configure arena " +
                                         std::to_string(arena_) + ": " +
                                         SystemErrorText(prefix + decay, rc));
    }
  }
}

SharedHeap::~SharedHeap() {
  std::size_t live;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live = live_.size();
  }
  const bool empty = live == 0;
  // Destroying the arena discards whatever it still holds. That is done only when no block is
  // live: a live block may still be in use (at exit, by threads that are still running), and the
  // arena then stays, describing that memory, rather than being torn down under it. (Destruction
  // also requires that no thread cache holds blocks of the arena and no thread is bound to it:
  // this heap never uses a thread cache and never binds threads.)
  if (empty &&
      Mallctl("arena." + std::to_string(arena_) + ".destroy", nullptr, nullptr, nullptr, 0) == 0) {
    return;  // the hooks are no longer referenced: slice_ goes with this object
  }
  if (!empty) {
    DebugLine("shared heap: " + std::to_string(live) + " blocks still live in arena " +
              std::to_string(arena_) + "; the arena stays");
  }
  NewExtentCallback callback;  // released outside the lock: it may own anything
  {
    std::lock_guard<std::mutex> lock(slice_->mutex);
    slice_->retired = true;
    callback.swap(slice_->on_new_extent);
  }
  Slice::Retire(std::move(slice_));
}

void* SharedHeap::Allocate(std::size_t bytes) {
  if (bytes > bytes_) return nullptr;
  return Track(mallocx(bytes == 0 ? 1 : bytes, flags_ | MALLOCX_ALIGN(kMinAlignment)));
}

void* SharedHeap::AllocateAligned(std::size_t bytes, std::size_t alignment) {
  if (!std::has_single_bit(alignment)) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                "shared heap: alignment " + std::to_string(alignment) + " is not a power of two");
  }
  if (alignment < kMinAlignment) alignment = kMinAlignment;
  if (bytes > bytes_ || alignment > bytes_) return nullptr;
  return Track(
      mallocx(bytes == 0 ? 1 : bytes, flags_ | MALLOCX_LG_ALIGN(std::countr_zero(alignment))));
}

void* SharedHeap::Track(void* p) {
  if (p == nullptr) return nullptr;
  const std::size_t usable = sallocx(p, 0);
  if (!Contains(p) || !Contains(static_cast<std::byte*>(p) + usable - 1)) {
    dallocx(p, MALLOCX_TCACHE_NONE);
    throw Error(LMDX_ERR_INTERNAL, "shared heap: jemalloc served " + Address(p) +
                                       " from outside the slice of arena " +
                                       std::to_string(arena_));
  }
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool added = live_.emplace(reinterpret_cast<std::uintptr_t>(p), usable).second;
    if (!added) {
      throw Error(LMDX_ERR_INTERNAL,
                  "shared heap: jemalloc served " + Address(p) + ", which is live already");
    }
    live_bytes_ += usable;
  } catch (...) {
    dallocx(p, MALLOCX_TCACHE_NONE);
    throw;
  }
  return p;
}

void SharedHeap::Free(void* p) {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = live_.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == live_.end()) throw Error(LMDX_ERR_MISUSE, NotALiveBlock(p));
    live_bytes_ -= it->second;
    live_.erase(it);
  }
  // Out of the record before jemalloc has it back, so the address cannot be served again (and
  // recorded) while it is still listed.
  dallocx(p, MALLOCX_TCACHE_NONE);
}

bool SharedHeap::Contains(const void* p) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const auto first = reinterpret_cast<std::uintptr_t>(begin_);
  return address >= first && address - first < bytes_;
}

std::size_t SharedHeap::BlockSize(const void* p) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = live_.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == live_.end()) throw Error(LMDX_ERR_MISUSE, NotALiveBlock(p));
  return it->second;
}

std::string SharedHeap::NotALiveBlock(const void* p) const {
  const std::string head = Address(p) + " is not a live block of this node's shared heap ";
  if (!Contains(p)) {
    return head + "(foreign pointer: outside this node's slice [" + Address(begin_) + ", " +
           Address(begin_ + bytes_) + "))";
  }
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto it = live_.upper_bound(address);
  if (it != live_.begin()) {
    --it;
    if (address - it->first < it->second) {
      return head + "(interior pointer: " + std::to_string(address - it->first) +
             " bytes into the live block at " + Address(reinterpret_cast<const void*>(it->first)) +
             " of " + std::to_string(it->second) + " bytes)";
    }
  }
  return head + "(double free or foreign pointer)";
}

std::size_t SharedHeap::CarvedBytes() const {
  return slice_->carved.load(std::memory_order_relaxed);
}

std::size_t SharedHeap::LiveBlocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_.size();
}

std::size_t SharedHeap::LiveBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_bytes_;
}

}  // namespace lmdx::dsm

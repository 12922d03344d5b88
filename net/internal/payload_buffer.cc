#include "net/internal/payload_buffer.h"

#include <sys/mman.h>

#include <mutex>
#include <utility>
#include <vector>

namespace lmdx::net::internal {
namespace {

constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

struct CachedBuffer {
  std::unique_ptr<std::uint8_t[]> bytes;
  std::uint64_t capacity = 0;
};

// Freed large buffers, the most recently freed last.
class PayloadCache {
 public:
  // A kept buffer of at least length bytes and at most twice that (a small payload must not pin
  // a much larger buffer), the best fit; an empty one when none fits.
  CachedBuffer Take(std::uint64_t length) {
    std::lock_guard lock(mutex_);
    auto best = buffers_.end();
    for (auto it = buffers_.begin(); it != buffers_.end(); ++it) {
      if (it->capacity < length || it->capacity / 2 > length) continue;
      if (best == buffers_.end() || it->capacity < best->capacity) best = it;
    }
    if (best == buffers_.end()) return {};
    CachedBuffer taken = std::move(*best);
    buffers_.erase(best);
    held_ -= taken.capacity;
    return taken;
  }
  void Keep(CachedBuffer buffer) {
    if (buffer.capacity > kCachedPayloadLimit) return;  // freed here, outside the lock
    std::vector<CachedBuffer> evicted;
    std::lock_guard lock(mutex_);
    held_ += buffer.capacity;
    buffers_.push_back(std::move(buffer));
    while (held_ > kCachedPayloadLimit) {
      held_ -= buffers_.front().capacity;
      evicted.push_back(std::move(buffers_.front()));
      buffers_.erase(buffers_.begin());
    }
  }
  void Clear() {
    std::vector<CachedBuffer> freed;
    std::lock_guard lock(mutex_);
    freed.swap(buffers_);
    held_ = 0;
  }
  std::uint64_t Held() {
    std::lock_guard lock(mutex_);
    return held_;
  }

 private:
  std::mutex mutex_;
  std::vector<CachedBuffer> buffers_;
  std::uint64_t held_ = 0;
};

PayloadCache& Cache() {
  // Never destroyed: a thread that outlives static destruction may still free a payload.
  static PayloadCache* const cache = new PayloadCache();
  return *cache;
}

std::unique_ptr<std::uint8_t[]> FreshBuffer(std::uint64_t length) {
  auto buffer = std::make_unique_for_overwrite<std::uint8_t[]>(length);
  if (length >= kHugePayloadBytes) {
    // Only the whole huge pages inside the buffer: the allocator owns the bytes around it.
    auto start = reinterpret_cast<std::uintptr_t>(buffer.get());
    std::uintptr_t first = (start + kHugePage - 1) & ~(kHugePage - 1);
    std::uintptr_t last = (start + length) & ~(kHugePage - 1);
    // Advice only: where transparent huge pages are off, the buffer works as before.
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
  return buffer;
}

}  // namespace

void PayloadRelease::operator()(std::uint8_t* bytes) const {
  std::unique_ptr<std::uint8_t[]> owned(bytes);
  if (owned && capacity_ >= kHugePayloadBytes) Cache().Keep({std::move(owned), capacity_});
}

PayloadBuffer AllocatePayload(std::uint64_t length) {
  if (length >= kHugePayloadBytes) {
    CachedBuffer kept = Cache().Take(length);
    if (kept.bytes) return PayloadBuffer(kept.bytes.release(), PayloadRelease(kept.capacity));
  }
  return PayloadBuffer(FreshBuffer(length).release(), PayloadRelease(length));
}

std::uint64_t CachedPayloadBytes() { return Cache().Held(); }

void FreeCachedPayloads() { Cache().Clear(); }

}  // namespace lmdx::net::internal

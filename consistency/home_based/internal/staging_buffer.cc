#include "consistency/home_based/internal/staging_buffer.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace lmdx::consistency::internal {
namespace {

// A thread's spare buffers. A fetch uses at most two per home at once, and most fetches go to
// one home; beyond this many, or this many bytes in all, the smallest go back to the allocator.
constexpr std::size_t kSpares = 4;
constexpr std::size_t kSpareBytes = std::size_t{8} << 20;

struct Spare {
  std::unique_ptr<std::byte[]> bytes;
  std::size_t capacity;
};

std::vector<Spare>& Spares() {
  thread_local std::vector<Spare> spares;
  return spares;
}

}  // namespace

StagingBuffer::StagingBuffer(std::size_t bytes) : size_(bytes) {
  std::vector<Spare>& spares = Spares();
  // The smallest spare that fits, so that large ones stay for large fetches.
  auto best = spares.end();
  for (auto spare = spares.begin(); spare != spares.end(); ++spare) {
    if (spare->capacity >= bytes && (best == spares.end() || spare->capacity < best->capacity)) {
      best = spare;
    }
  }
  if (best != spares.end()) {
    bytes_ = std::move(best->bytes);
    capacity_ = best->capacity;
    spares.erase(best);
    return;
  }
  bytes_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
  capacity_ = bytes;
}

StagingBuffer::StagingBuffer(StagingBuffer&& other) noexcept
    : bytes_(std::move(other.bytes_)),
      capacity_(std::exchange(other.capacity_, 0)),
      size_(std::exchange(other.size_, 0)) {}

StagingBuffer& StagingBuffer::operator=(StagingBuffer&& other) noexcept {
  if (this != &other) {
    GiveBack();
    bytes_ = std::move(other.bytes_);
    capacity_ = std::exchange(other.capacity_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

StagingBuffer::~StagingBuffer() { GiveBack(); }

void StagingBuffer::GiveBack() {
  if (!bytes_) return;
  std::vector<Spare>& spares = Spares();
  spares.push_back({std::move(bytes_), capacity_});
  capacity_ = 0;
  size_ = 0;
  // Largest first; the smallest go when there are too many or too many bytes.
  std::sort(spares.begin(), spares.end(),
            [](const Spare& a, const Spare& b) { return a.capacity > b.capacity; });
  std::size_t kept_bytes = 0;
  std::size_t kept = 0;
  while (kept < spares.size() && kept < kSpares &&
         kept_bytes + spares[kept].capacity <= kSpareBytes) {
    kept_bytes += spares[kept].capacity;
    ++kept;
  }
  spares.resize(kept);
}

}  // namespace lmdx::consistency::internal

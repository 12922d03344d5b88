#include "net/internal/payload_buffer.h"

#include <sys/mman.h>

namespace lmdx::net::internal {
namespace {

constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

}  // namespace

std::unique_ptr<std::uint8_t[]> AllocatePayload(std::uint64_t length) {
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

}  // namespace lmdx::net::internal

#include "net/udp/internal/udp_splice_slots.h"

#include <sys/mman.h>

#include <cstring>

namespace lmdx::net::internal {

std::uint8_t* SpliceSlots::Address(std::uint32_t index) const {
  return reinterpret_cast<std::uint8_t*>(chunks_[index / kSlotsPerChunk].data()) +
         (index % kSlotsPerChunk) * kSlotBytes;
}

bool SpliceSlots::MakeOneFree(std::int64_t now_ms) {
  while (!quarantined_.empty() && quarantined_.front().until_ms <= now_ms) {
    free_.push_back(quarantined_.front().index);
    quarantined_.pop_front();
  }
  if (!free_.empty()) return true;
  if (slots() + kSlotsPerChunk > kMaxSlots) return false;
  // A mapping of its own: unmapped with the transport, its pages stay as they are for a
  // datagram still unread, where memory handed back to the allocator would be written.
  void* address =
      ::mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (address == MAP_FAILED) return false;
  auto first = static_cast<std::uint32_t>(slots());
  chunks_.emplace_back(address, kChunkBytes);
  // Handed out from the chunk's start: consecutive datagrams share its pages.
  for (std::size_t i = kSlotsPerChunk; i > 0; --i) {
    free_.push_back(first + static_cast<std::uint32_t>(i - 1));
  }
  return true;
}

std::optional<SpliceSlots::Slot> SpliceSlots::Fill(std::span<const iovec> own,
                                                   std::int64_t now_ms) {
  std::size_t bytes = 0;
  for (const iovec& piece : own) bytes += piece.iov_len;
  if (bytes > kSlotBytes || (free_.empty() && !MakeOneFree(now_ms))) return std::nullopt;
  std::uint32_t index = free_.back();
  free_.pop_back();
  std::uint8_t* to = Address(index);
  std::size_t at = 0;
  for (const iovec& piece : own) {
    std::memcpy(to + at, piece.iov_base, piece.iov_len);
    at += piece.iov_len;
  }
  return Slot{index, std::span<const std::uint8_t>(to, bytes)};
}

void SpliceSlots::Free(std::uint32_t index) { free_.push_back(index); }

void SpliceSlots::Quarantine(std::uint32_t index, std::int64_t now_ms) {
  quarantined_.push_back(Held{now_ms + kQuarantineMs, index});
}

}  // namespace lmdx::net::internal

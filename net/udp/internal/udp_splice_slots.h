#ifndef LMDX_NET_UDP_INTERNAL_UDP_SPLICE_SLOTS_H_
#define LMDX_NET_UDP_INTERNAL_UDP_SPLICE_SLOTS_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "base/mapping.h"

namespace lmdx::net::internal {

// Memory that holds a spliced datagram's own bytes (its header and the segment's copied part)
// for as long as the kernel may read them, so that they go into the pipe as pages, with the lent
// bytes in the same vmsplice, rather than written into it. A write into a pipe takes a fresh page
// for the few bytes, and the receiver's core frees it: on loopback that page cost a 1 MiB
// message a fifth of its time (a plain program: 139-155 us per MiB with the header written,
// 113-123 with it spliced from memory of its own).
//
// The kernel reads a slot when the receiver reads the datagram, which may be after the sender
// has moved on; a slot must not change while any datagram that carries it may still be unread.
// A slot used by the one datagram ever sent of its segment is free again once the segment is
// acknowledged: the receiver read that datagram. A slot whose segment went more than once (a
// resend, an injected duplicate) may still have a copy waiting behind the one that was read; it
// is kept unchanged for kQuarantineMs, three times the time after which an unanswering peer is
// lost to the job, and only then used again. The slots are few (kMaxSlots); when none is free the
// own bytes are written into the pipe as before.
class SpliceSlots {
 public:
  static constexpr std::size_t kSlotBytes = 256;
  static constexpr std::size_t kChunkBytes = 64 * 1024;
  static constexpr std::size_t kMaxSlots = 4096;
  static constexpr std::int64_t kQuarantineMs = 60'000;

  struct Slot {
    std::uint32_t index = 0;
    std::span<const std::uint8_t> bytes;  // the own bytes, copied in
  };
  // A free slot holding a copy of own; nullopt when own is longer than a slot or none is free.
  std::optional<Slot> Fill(std::span<const iovec> own, std::int64_t now_ms);
  // The only datagram that carried slot has been read: it may take new bytes at once.
  void Free(std::uint32_t index);
  // Another datagram of its segment may still be unread somewhere: kept as it is for a while.
  void Quarantine(std::uint32_t index, std::int64_t now_ms);

  std::size_t slots() const { return chunks_.size() * kSlotsPerChunk; }
  std::size_t quarantined() const { return quarantined_.size(); }

 private:
  static constexpr std::size_t kSlotsPerChunk = kChunkBytes / kSlotBytes;
  std::uint8_t* Address(std::uint32_t index) const;
  // Quarantined slots whose time is up go back to the free list; a new chunk is mapped when none
  // is free and the limit allows. False when still none is free.
  bool MakeOneFree(std::int64_t now_ms);

  std::vector<Mapping> chunks_;
  std::vector<std::uint32_t> free_;
  struct Held {
    std::int64_t until_ms;
    std::uint32_t index;
  };
  std::deque<Held> quarantined_;  // in the order their times end: all are held equally long
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_UDP_INTERNAL_UDP_SPLICE_SLOTS_H_

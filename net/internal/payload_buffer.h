#ifndef LMDX_NET_INTERNAL_PAYLOAD_BUFFER_H_
#define LMDX_NET_INTERNAL_PAYLOAD_BUFFER_H_

#include <cstdint>
#include <memory>

namespace lmdx::net::internal {

// Payloads of this size and more are backed by huge pages where the kernel allows, and their
// buffers are kept for reuse when freed.
inline constexpr std::uint64_t kHugePayloadBytes = std::uint64_t{4} << 20;
// The most a process keeps in freed payload buffers for reuse.
inline constexpr std::uint64_t kCachedPayloadLimit = std::uint64_t{256} << 20;

// Frees a payload buffer, or keeps a large one for the next large payload.
class PayloadRelease {
 public:
  PayloadRelease() = default;
  explicit PayloadRelease(std::uint64_t capacity) : capacity_(capacity) {}
  void operator()(std::uint8_t* bytes) const;

 private:
  std::uint64_t capacity_ = 0;
};
using PayloadBuffer = std::unique_ptr<std::uint8_t[], PayloadRelease>;

// A buffer of an incoming message's own, for a payload nobody placed (its receive was not yet
// posted) or one a transport must copy out of its own memory. Fresh memory is dear on these
// virtual machines: faulting it in 4 KiB at a time cost about 17 us a page, 280 ms for a 64 MiB
// message that arrived before its receive was posted, ten times the transfer itself. So a large
// buffer asks for transparent huge pages (MADV_HUGEPAGE, which this kernel gives on request only),
// and a freed one is kept (up to kCachedPayloadLimit in all) for the next large payload: jemalloc
// returns allocations of 8 MiB and more to the kernel at once, so each would be fresh memory
// again. Throws std::bad_alloc.
PayloadBuffer AllocatePayload(std::uint64_t length);

// Bytes held in freed buffers kept for reuse.
std::uint64_t CachedPayloadBytes();
// Frees the buffers kept for reuse.
void FreeCachedPayloads();

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_INTERNAL_PAYLOAD_BUFFER_H_

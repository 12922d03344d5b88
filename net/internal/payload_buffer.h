#ifndef LMDX_NET_INTERNAL_PAYLOAD_BUFFER_H_
#define LMDX_NET_INTERNAL_PAYLOAD_BUFFER_H_

#include <cstdint>
#include <memory>

namespace lmdx::net::internal {

// Payloads of this size and more are backed by huge pages where the kernel allows.
inline constexpr std::uint64_t kHugePayloadBytes = std::uint64_t{4} << 20;

// A buffer of an incoming message's own, for a payload nobody placed (its receive was not yet
// posted) or one a transport must copy out of its own memory. Such a buffer is fresh memory, and
// faulting it in 4 KiB at a time cost about 17 us a page on these virtual machines: 280 ms for a
// 64 MiB message that arrived before its receive was posted, ten times the transfer itself. So a
// large one asks for transparent huge pages (MADV_HUGEPAGE), which this kernel gives on request
// only. Throws std::bad_alloc.
std::unique_ptr<std::uint8_t[]> AllocatePayload(std::uint64_t length);

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_INTERNAL_PAYLOAD_BUFFER_H_

#ifndef LMDX_BASE_SMALL_COPY_H_
#define LMDX_BASE_SMALL_COPY_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lmdx {

// Copies size bytes between buffers that do not overlap, like std::memcpy, but a copy of up to
// 64 bytes is a few loads and stores inline: two pieces of each size that cover the range from
// both ends, overlapping in the middle. A small message's payload is copied twice on its way (into
// a shared-memory cell, out into the receive), and the call into the library and its dispatch on
// the size took longer than the copy itself. Larger copies call std::memcpy.
inline void CopySmall(void* to, const void* from, std::size_t size) {
  auto* out = static_cast<std::uint8_t*>(to);
  const auto* in = static_cast<const std::uint8_t*>(from);
  // Fixed-size copies through a register: the compiler emits one load and one store for each.
  auto piece = [out, in]<std::size_t kBytes>(std::size_t at) {
    unsigned char bytes[kBytes];
    std::memcpy(bytes, in + at, kBytes);
    std::memcpy(out + at, bytes, kBytes);
  };
  if (size > 64) {
    std::memcpy(out, in, size);
  } else if (size > 32) {
    piece.template operator()<32>(0);
    piece.template operator()<32>(size - 32);
  } else if (size > 16) {
    piece.template operator()<16>(0);
    piece.template operator()<16>(size - 16);
  } else if (size >= 8) {
    piece.template operator()<8>(0);
    piece.template operator()<8>(size - 8);
  } else if (size >= 4) {
    piece.template operator()<4>(0);
    piece.template operator()<4>(size - 4);
  } else {
    for (std::size_t at = 0; at < size; ++at) out[at] = in[at];
  }
}

}  // namespace lmdx

#endif  // LMDX_BASE_SMALL_COPY_H_

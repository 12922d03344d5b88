#ifndef LMDX_BASE_LITTLE_ENDIAN_H_
#define LMDX_BASE_LITTLE_ENDIAN_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace lmdx {

// What a big-endian host reads and writes through the two below.
template <typename T>
constexpr T ByteSwapped(T value) {
  if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(value));
  if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(value));
  if constexpr (sizeof(T) == 8) return static_cast<T>(__builtin_bswap64(value));
  return value;
}

// Integers in LMDX's wire formats are little-endian. These read and write them as one load or
// store on a little-endian host (a byte swap besides on a big-endian one): the loops over bytes
// they replace stayed loops at -O2, a few dozen instructions for each header on every message's
// path.
template <typename T>
T LoadLittleEndian(const std::uint8_t* in) {
  static_assert(std::is_integral_v<T>);
  std::make_unsigned_t<T> bits;
  std::memcpy(&bits, in, sizeof bits);
  if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
    bits = ByteSwapped(bits);
  }
  return static_cast<T>(bits);
}

template <typename T>
void StoreLittleEndian(std::uint8_t* out, T value) {
  static_assert(std::is_integral_v<T>);
  auto bits = static_cast<std::make_unsigned_t<T>>(value);
  if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
    bits = ByteSwapped(bits);
  }
  std::memcpy(out, &bits, sizeof bits);
}

}  // namespace lmdx

#endif  // LMDX_BASE_LITTLE_ENDIAN_H_

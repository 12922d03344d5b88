#ifndef LMDX_BASE_HEX_H_
#define LMDX_BASE_HEX_H_

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace lmdx {

// Bytes as lower-case hex, as LMDX writes them in environment variables and job tables (the job
// secret, job ids, UCX worker addresses).
inline std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * bytes.size());
  for (unsigned char byte : bytes) {
    text.push_back(kDigits[byte >> 4]);
    text.push_back(kDigits[byte & 0xf]);
  }
  return text;
}

// An address as messages write it ("0x7ffd5e2a1b30", "(nil)").
inline std::string AddressText(const void* address) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", address);
  return text;
}

// The bytes hex text stands for (either case), or nullopt when it is not even-length hex.
inline std::optional<std::string> HexDecode(std::string_view text) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (text.size() % 2 != 0) return std::nullopt;
  std::string bytes;
  bytes.reserve(text.size() / 2);
  for (std::size_t i = 0; i < text.size(); i += 2) {
    int high = nibble(text[i]);
    int low = nibble(text[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(high << 4 | low));
  }
  return bytes;
}

}  // namespace lmdx

#endif  // LMDX_BASE_HEX_H_

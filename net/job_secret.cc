#include "net/job_secret.h"

#include <openssl/rand.h>

#include "base/error.h"

namespace lmdx::net {

JobSecret JobSecret::Generate() {
  Bytes bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw Error(LMDX_ERR_INTERNAL, "cannot create the job secret: OpenSSL's RAND_bytes failed");
  }
  return JobSecret(bytes);
}

std::optional<JobSecret> JobSecret::FromHex(std::string_view text) {
  if (text.size() != 2 * kBytes) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Bytes bytes{};
  for (std::size_t i = 0; i < kBytes; ++i) {
    int high = nibble(text[2 * i]);
    int low = nibble(text[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    bytes[i] = static_cast<std::uint8_t>(high << 4 | low);
  }
  return JobSecret(bytes);
}

std::string JobSecret::Hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * kBytes);
  for (std::uint8_t byte : bytes_) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 0xf];
  }
  return text;
}

}  // namespace lmdx::net

#include "net/job_secret.h"

#include <errno.h>
#include <sys/random.h>

#include <cstring>
#include <string>

#include "base/error.h"

namespace lmdx::net {
namespace {

std::string HexOf(const std::uint8_t* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) {
    text += kDigits[bytes[i] >> 4];
    text += kDigits[bytes[i] & 0xf];
  }
  return text;
}

}  // namespace

JobSecret JobSecret::Generate() {
  Bytes bytes{};
  FillWithKernelRandom(bytes.data(), bytes.size(), "the job secret");
  return JobSecret(bytes);
}

void FillWithKernelRandom(std::uint8_t* data, std::size_t size, const char* purpose) {
  std::size_t filled = 0;
  while (filled < size) {
    ssize_t got = ::getrandom(data + filled, size - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(LMDX_ERR_INTERNAL, std::string("cannot make ") + purpose +
                                         ": getrandom failed: " + std::strerror(errno));
    }
    filled += static_cast<std::size_t>(got);
  }
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

std::string JobSecret::Hex() const { return HexOf(bytes_.data(), bytes_.size()); }

std::string NewJobId() {
  std::uint8_t bytes[8];
  FillWithKernelRandom(bytes, sizeof bytes, "a job id");
  return HexOf(bytes, sizeof bytes);
}

}  // namespace lmdx::net

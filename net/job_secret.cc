#include "net/job_secret.h"

#include <errno.h>
#include <sys/random.h>

#include <cstring>
#include <string>

#include "base/error.h"
#include "base/hex.h"

namespace lmdx::net {
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
  std::optional<std::string> decoded = HexDecode(text);
  if (!decoded || decoded->size() != kBytes) return std::nullopt;
  Bytes bytes{};
  std::memcpy(bytes.data(), decoded->data(), kBytes);
  return JobSecret(bytes);
}

std::string JobSecret::Hex() const {
  return HexEncode({reinterpret_cast<const char*>(bytes_.data()), bytes_.size()});
}

std::string NewJobId() {
  std::uint8_t bytes[8];
  FillWithKernelRandom(bytes, sizeof bytes, "a job id");
  return HexEncode({reinterpret_cast<const char*>(bytes), sizeof bytes});
}

}  // namespace lmdx::net

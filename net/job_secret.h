#ifndef LMDX_NET_JOB_SECRET_H_
#define LMDX_NET_JOB_SECRET_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lmdx::net {

// The per-job secret the launcher creates. Every connection of the job proves it knows it before
// a message is accepted (net/auth.h). Travels to nodes as 64 hex digits in LMDX_JOB_SECRET.
class JobSecret {
 public:
  static constexpr std::size_t kBytes = 32;
  using Bytes = std::array<std::uint8_t, kBytes>;

  // 32 bytes from OpenSSL's RAND_bytes.
  static JobSecret Generate();
  // nullopt unless text is exactly 64 hex digits.
  static std::optional<JobSecret> FromHex(std::string_view text);

  explicit JobSecret(const Bytes& bytes) : bytes_(bytes) {}
  const Bytes& bytes() const { return bytes_; }
  std::string Hex() const;

 private:
  Bytes bytes_;
};

}  // namespace lmdx::net

#endif  // LMDX_NET_JOB_SECRET_H_

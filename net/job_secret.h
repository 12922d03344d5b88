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

  // 32 bytes from the kernel's random source (FillWithKernelRandom).
  static JobSecret Generate();
  // nullopt unless text is exactly 64 hex digits.
  static std::optional<JobSecret> FromHex(std::string_view text);

  explicit JobSecret(const Bytes& bytes) : bytes_(bytes) {}
  const Bytes& bytes() const { return bytes_; }
  std::string Hex() const;

 private:
  Bytes bytes_;
};

// 16 random hex digits naming a job's resources (shared-memory segments, logs). Not derived from
// the secret: the id appears in names anyone on the machine can read.
std::string NewJobId();

// Fills data with bytes from getrandom(2), for the secret and the handshake's nonces. The kernel,
// not OpenSSL's RAND_bytes, because RAND_bytes keeps a generator per calling thread that lives
// until the thread ends: a job that ends while a handshake thread still runs would report it as
// a leak. Throws, naming purpose, if the kernel cannot give them.
void FillWithKernelRandom(std::uint8_t* data, std::size_t size, const char* purpose);

}  // namespace lmdx::net

#endif  // LMDX_NET_JOB_SECRET_H_

// The handshake fed a stranger's bytes, on both sides: it may fail, but must never accept a peer
// that does not know the job secret, and must never crash.
#include <cstdint>
#include <cstdlib>

#include "net/handshake.h"
#include "net/job_secret.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using lmdx::net::Handshake;
  static const lmdx::net::JobSecret secret = lmdx::net::JobSecret::Generate();
  lmdx::fuzz::FuzzInput input(data, size);
  bool as_server = (input.Byte() & 1) != 0;
  Handshake handshake =
      as_server ? Handshake::AsServer(secret, 0) : Handshake::AsClient(secret, 1, 0);
  static_cast<void>(handshake.TakeOutput());
  std::string bytes = input.Rest();
  std::size_t at = 0;
  while (at < bytes.size() && handshake.state() == Handshake::State::kRunning) {
    std::size_t taken =
        handshake.Feed(reinterpret_cast<const std::uint8_t*>(bytes.data()) + at, bytes.size() - at);
    static_cast<void>(handshake.TakeOutput());
    if (taken == 0) break;
    at += taken;
  }
  // Random bytes cannot carry a proof made with a secret generated in this process.
  if (handshake.state() == Handshake::State::kDone) std::abort();
  return 0;
}

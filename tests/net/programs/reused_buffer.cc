// Rank 0 sends large messages to rank 1 from one buffer, which it fills with the next message's
// pattern as soon as lmdx_send returns: lmdx_send promises the buffer is free again then. A
// transport that still read the buffer afterwards (a resend after a loss, from memory it had
// only borrowed) would deliver bytes of the next message, and rank 1, which checks every byte,
// would abort the job. Rank 1 prints "rank 1 verified N messages".
//
// Arguments: message size (1 MiB), message count (12), and optionally the number of messages
// after which rank 1 dies by SIGKILL, in the middle of rank 0's lent sends: the job must end,
// naming rank 1, rather than leave rank 0 waiting for acknowledgements.
#include <lmdx/lmdx.h>
#include <signal.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

std::uint8_t PatternByte(int message, std::size_t i) {
  return static_cast<std::uint8_t>(message * 37 + i * 11 + (i >> 10));
}

void Fill(std::vector<std::uint8_t>& bytes, int message) {
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = PatternByte(message, i);
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  const std::size_t size = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : std::size_t{1} << 20;
  const int count = argc > 2 ? std::atoi(argv[2]) : 12;
  const int die_after = argc > 3 ? std::atoi(argv[3]) : -1;
  std::vector<std::uint8_t> buffer(size);
  if (lmdx_rank() == 0) {
    for (int message = 0; message < count; ++message) {
      Fill(buffer, message);
      lmdx_send(1, buffer.data(), buffer.size());
    }
    Fill(buffer, -1);  // what a late read of the last message would find
  } else if (lmdx_rank() == 1) {
    for (int message = 0; message < count; ++message) {
      if (message == die_after) ::raise(SIGKILL);
      lmdx_status status{};
      lmdx_recv(0, buffer.data(), buffer.size(), &status);
      if (status.length != size) lmdx_abort(2, "rank 1: MISMATCH: a message has the wrong length");
      for (std::size_t i = 0; i < size; ++i) {
        if (buffer[i] != PatternByte(message, i)) {
          std::string text = "rank 1: MISMATCH: message " + std::to_string(message) +
                             " differs at byte " + std::to_string(i);
          lmdx_abort(2, text.c_str());
        }
      }
    }
    std::printf("rank 1 verified %d messages\n", count);
  }
  lmdx_barrier_all();
  lmdx_finalize();
  return 0;
}

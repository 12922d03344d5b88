// Per-pair order with messages of mixed sizes: rank 0 sends rank 1 a stream whose sizes cycle
// through empty, tiny, a few KiB and several MiB, so that on the fabric eager messages follow and
// precede rendezvous ones. Rank 1 receives from rank 0 with a buffer as large as the largest and
// checks that each message is the next one, whole: its length and every byte. Then the same runs
// from rank 1 to rank 0 while rank 0 answers each message with a small acknowledgement of its own
// (traffic both ways at once). Each rank prints "rank R verified N messages".
#include <lmdx/lmdx.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kSizes[] = {0, 1, 8, 4096, 70000, 3 << 20, 17, 1 << 20, 5, 9 << 20};
constexpr int kMessages = 60;

std::uint8_t Byte(int index, std::size_t i) {
  return static_cast<std::uint8_t>(index * 37 + i * 11 + (i >> 10));
}

std::vector<std::uint8_t> Message(int index) {
  std::vector<std::uint8_t> bytes(kSizes[index % std::size(kSizes)]);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = Byte(index, i);
  return bytes;
}

[[noreturn]] void Fail(const std::string& what) {
  lmdx_abort(2, ("rank " + std::to_string(lmdx_rank()) + ": " + what).c_str());
  std::abort();
}

void Receive(int from, int index, std::vector<std::uint8_t>& buffer) {
  lmdx_status status;
  lmdx_recv(from, buffer.data(), buffer.size(), &status);
  std::size_t expected = kSizes[index % std::size(kSizes)];
  if (status.length != expected) {
    Fail("message " + std::to_string(index) + " has " + std::to_string(status.length) +
         " bytes, expected " + std::to_string(expected) + ": out of order");
  }
  for (std::size_t i = 0; i < expected; ++i) {
    if (buffer[i] != Byte(index, i)) Fail("message " + std::to_string(index) + " differs");
  }
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  if (lmdx_size() != 2) Fail("run this test with 2 nodes");
  int rank = lmdx_rank();
  std::vector<std::uint8_t> buffer(9 << 20);
  // One way: a stream.
  if (rank == 0) {
    for (int i = 0; i < kMessages; ++i) {
      std::vector<std::uint8_t> message = Message(i);
      lmdx_send(1, message.data(), message.size());
    }
  } else {
    for (int i = 0; i < kMessages; ++i) Receive(0, i, buffer);
  }
  // The other way, acknowledged message by message.
  char ack = 'a';
  if (rank == 1) {
    for (int i = 0; i < kMessages; ++i) {
      std::vector<std::uint8_t> message = Message(i);
      lmdx_send(0, message.data(), message.size());
      if (i % 3 == 2) lmdx_recv(0, &ack, 1, nullptr);
    }
  } else {
    for (int i = 0; i < kMessages; ++i) {
      Receive(1, i, buffer);
      if (i % 3 == 2) lmdx_send(1, &ack, 1);
    }
  }
  std::printf("rank %d verified %d messages\n", rank, 2 * kMessages);
  lmdx_finalize();
  return 0;
}

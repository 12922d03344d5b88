// Every rank exchanges messages of 0 B, 1 B and 4 KiB with every other rank, passes a large
// message (64 MiB by default) around a ring, sends to itself, checks that an undersized receive
// is an error that loses nothing, and receives from any source. Each rank prints "rank R verified"
// when every byte matched; any mismatch aborts the job.
#include <lmdx/lmdx.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::uint8_t PatternByte(int source, int dest, int tag, std::size_t i) {
  return static_cast<std::uint8_t>(source * 131 + dest * 31 + tag * 7 + i * 13 + (i >> 12));
}

std::vector<std::uint8_t> Message(int source, int dest, int tag, std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = PatternByte(source, dest, tag, i);
  return bytes;
}

[[noreturn]] void Mismatch(const std::string& what) {
  std::string text = "rank " + std::to_string(lmdx_rank()) + ": MISMATCH: " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Check(const std::vector<std::uint8_t>& got, std::size_t length, int source, int dest, int tag,
           std::size_t size) {
  if (length != size) {
    Mismatch("message " + std::to_string(tag) + " from rank " + std::to_string(source) + " has " +
             std::to_string(length) + " bytes, expected " + std::to_string(size));
  }
  for (std::size_t i = 0; i < size; ++i) {
    if (got[i] != PatternByte(source, dest, tag, i)) {
      Mismatch("message " + std::to_string(tag) + " from rank " + std::to_string(source) +
               " differs at byte " + std::to_string(i));
    }
  }
}

constexpr std::size_t kSmallSizes[] = {0, 1, 4096};

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank();
  int size = lmdx_size();
  std::size_t big = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : std::size_t{64} << 20;
  int messages = 0;

  // Every pair, in order, each source received by name.
  for (int dest = 0; dest < size; ++dest) {
    if (dest == rank) continue;
    for (int tag = 0; tag < 3; ++tag) {
      auto bytes = Message(rank, dest, tag, kSmallSizes[tag]);
      lmdx_send(dest, bytes.data(), bytes.size());
    }
  }
  for (int source = 0; source < size; ++source) {
    if (source == rank) continue;
    for (int tag = 0; tag < 3; ++tag) {
      std::vector<std::uint8_t> got(4096);
      lmdx_status status{};
      lmdx_recv(source, got.data(), got.size(), &status);
      if (status.source != source) Mismatch("status names the wrong source");
      Check(got, status.length, source, rank, tag, kSmallSizes[tag]);
      ++messages;
    }
  }

  // A large message around the ring.
  if (size > 1 && big > 0) {
    int next = (rank + 1) % size;
    int previous = (rank + size - 1) % size;
    auto bytes = Message(rank, next, 20, big);
    std::vector<std::uint8_t> got(big);
    lmdx_status status{};
    if (rank % 2 == 0) {
      lmdx_send(next, bytes.data(), bytes.size());
      lmdx_recv(previous, got.data(), got.size(), &status);
    } else {
      lmdx_recv(previous, got.data(), got.size(), &status);
      lmdx_send(next, bytes.data(), bytes.size());
    }
    Check(got, status.length, previous, rank, 20, big);
    ++messages;
  }

  // To itself.
  {
    auto bytes = Message(rank, rank, 30, 4096);
    lmdx_send(rank, bytes.data(), bytes.size());
    std::vector<std::uint8_t> got(4096);
    lmdx_status status{};
    lmdx_recv(rank, got.data(), got.size(), &status);
    Check(got, status.length, rank, rank, 30, 4096);
    ++messages;
  }

  // An undersized receive is an error naming both sizes, and the message stays queued.
  {
    lmdx_set_error_mode(LMDX_ERRORS_RETURN);
    auto bytes = Message(rank, rank, 40, 100);
    lmdx_send(rank, bytes.data(), bytes.size());
    std::vector<std::uint8_t> got(100);
    int code = lmdx_recv(rank, got.data(), 10, nullptr);
    std::string text = lmdx_last_error_message();
    if (code != LMDX_ERR_TRUNCATED || text.find("100 bytes") == std::string::npos ||
        text.find("10 bytes") == std::string::npos) {
      Mismatch("undersized receive returned " + std::to_string(code) + " (" + text + ")");
    }
    lmdx_status status{};
    if (lmdx_recv(rank, got.data(), got.size(), &status) != LMDX_OK) {
      Mismatch("the message was lost after a truncated receive");
    }
    Check(got, status.length, rank, rank, 40, 100);
    if (lmdx_send(size, got.data(), 1) != LMDX_ERR_INVALID_ARGUMENT) {
      Mismatch("a send to rank " + std::to_string(size) + " was not refused");
    }
    lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
  }

  // Receive from any source: each other rank exactly once. Last, because an any-source receive
  // would also take the messages of later phases from ranks that are ahead.
  for (int dest = 0; dest < size; ++dest) {
    if (dest == rank) continue;
    auto bytes = Message(rank, dest, 10, 100);
    lmdx_send(dest, bytes.data(), bytes.size());
  }
  std::vector<int> seen(static_cast<std::size_t>(size), 0);
  for (int i = 0; i < size - 1; ++i) {
    std::vector<std::uint8_t> got(100);
    lmdx_status status{};
    lmdx_recv(LMDX_ANY_SOURCE, got.data(), got.size(), &status);
    if (status.source < 0 || status.source >= size || status.source == rank) {
      Mismatch("any-source receive reports source " + std::to_string(status.source));
    }
    Check(got, status.length, status.source, rank, 10, 100);
    ++seen[static_cast<std::size_t>(status.source)];
    ++messages;
  }
  for (int source = 0; source < size; ++source) {
    if (source != rank && seen[static_cast<std::size_t>(source)] != 1) {
      Mismatch("rank " + std::to_string(source) + " was received " +
               std::to_string(seen[static_cast<std::size_t>(source)]) + " times");
    }
  }

  std::printf("rank %d verified %d messages\n", rank, messages);
  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}

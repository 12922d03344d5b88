// The job behind `lmdx bench walk` (2 nodes, the protocol from LMDX_PROTOCOL): one rank walking a
// large variable homed on the other node, as a program that reads or fills an array does. Rank 0
// fills its half of `walk_in` (homed at rank 0, BLOCK); then rank 1, alone, reads it word by word
// in address order, and writes every word of rank 0's half of `walk_out`, then meets rank 0 at a
// barrier (the release that sends its writes home). Before LMDX starts, the same loops run over
// private memory of the same size: the machine's own speed. Prints "walk,NAME,VALUE" lines:
//   private_read_mbs, private_write_mbs   the loops over private memory, MB/s
//   read_mbs                              rank 1's read walk, MB/s
//   write_mbs                             rank 1's write walk, MB/s, its loop only
//   write_release_mbs                     the same with the barrier that sends the writes home
#include <lmdx/lmdx.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Volatile stores and loads, so that the compiler neither drops nor fuses the walks.
std::uint64_t ReadWalk(const std::uint64_t* words, std::size_t count) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < count; ++i)
    sum += static_cast<const volatile std::uint64_t*>(words)[i];
  return sum;
}

// Word i of a walk that writes: every byte of it set (not zero), as in a fill of computed doubles,
// so that each written page differs from its twin in one run, as data usually do. (Small integers
// over zeros would leave their high bytes unchanged: a diff of 512 runs a page.)
std::uint64_t WordValue(std::uint64_t seed, std::size_t i) {
  return ((seed + i) * 0x9e3779b97f4a7c15ULL) | 0x8080808080808080ULL;
}

void WriteWalk(std::uint64_t* words, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = 0; i < count; ++i) {
    static_cast<volatile std::uint64_t*>(words)[i] = WordValue(seed, i);
  }
}

void Report(const char* name, double value) { std::printf("walk,%s,%.2f\n", name, value); }

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? static_cast<std::size_t>(std::atol(argv[1])) : 64;
  const std::size_t bytes = mib << 20;
  const std::size_t words = bytes / sizeof(std::uint64_t);

  // The machine's own speed over private memory, touched once first.
  std::vector<std::uint64_t> private_memory(words, 1);
  auto start = Clock::now();
  std::uint64_t private_sum = ReadWalk(private_memory.data(), words);
  const double private_read = Seconds(Clock::now() - start);
  start = Clock::now();
  WriteWalk(private_memory.data(), words, 7);
  const double private_write = Seconds(Clock::now() - start);
  private_memory = {};

  lmdx_init_spmd(&argc, &argv);
  if (lmdx_size() != 2) {
    std::fprintf(stderr, "walk_timing runs on 2 nodes\n");
    return 2;
  }
  const int rank = lmdx_rank();
  // Two halves each, BLOCK: the first homed at rank 0, the second at rank 1.
  auto* in = static_cast<std::uint64_t*>(lmdx_shared_var("walk_in", 2 * bytes));
  auto* out = static_cast<std::uint64_t*>(lmdx_shared_var("walk_out", 2 * bytes));
  if (rank == 0) WriteWalk(in, words, 1);
  lmdx_barrier_all();
  double read = 0, write = 0, write_release = 0;
  std::uint64_t sum = 0;
  if (rank == 1) {
    start = Clock::now();
    sum = ReadWalk(in, words);
    read = Seconds(Clock::now() - start);
    start = Clock::now();
    WriteWalk(out, words, 3);
    write = Seconds(Clock::now() - start);
  }
  lmdx_barrier_all();
  if (rank == 1) write_release = Seconds(Clock::now() - start);
  // Rank 0 checks what rank 1 wrote and rank 1 what it read: a walk that lost a page is no figure.
  int wrong = 0;
  if (rank == 1) {
    std::uint64_t expected = 0;
    for (std::size_t i = 0; i < words; ++i) expected += WordValue(1, i);
    if (sum != expected) {
      std::fprintf(stderr, "walk_timing: rank 1 read a sum of %llu, expected %llu\n",
                   static_cast<unsigned long long>(sum), static_cast<unsigned long long>(expected));
      wrong = 1;
    }
  } else {
    for (std::size_t i = 0; i < words; ++i) {
      if (out[i] != WordValue(3, i)) {
        std::fprintf(stderr, "walk_timing: word %zu of walk_out holds %llx, expected %llx\n", i,
                     static_cast<unsigned long long>(out[i]),
                     static_cast<unsigned long long>(WordValue(3, i)));
        wrong = 1;
        break;
      }
    }
  }
  // Rank 1's times to rank 0, which prints.
  double figures[3] = {read, write, write_release};
  lmdx_status status{};
  if (rank == 1) lmdx_send(0, figures, sizeof figures);
  if (rank == 0) lmdx_recv(1, figures, sizeof figures, &status);
  if (rank == 0) {
    const double mb = static_cast<double>(bytes) / 1e6;
    Report("private_read_mbs", mb / private_read);
    Report("private_write_mbs", mb / private_write);
    Report("read_mbs", mb / figures[0]);
    Report("write_mbs", mb / figures[1]);
    Report("write_release_mbs", mb / figures[2]);
    if (private_sum == 0) std::printf("walk: private memory read as zeros\n");
  }
  lmdx_finalize();
  return wrong;
}

// The job behind `lmdx bench reads` (2 nodes, a home-based protocol): what reaching a home's
// copies costs while the home computes and while it waits. Rank 0 homes the pages and writes
// every one of them in each round; rank 1 reads a sixth of them per round, so that each page it
// reads was last touched six rounds before and an acquire no longer fetches it unasked (an
// acquire refetches a page only for a few rounds after a fault brought it). Then, under a lock
// that rank 1 itself manages, rank 1 writes a byte of the first page it read and unlocks: the
// release sends that write to rank 0. Each round rank 1 also reads, in a shuffled order, pages
// of a second area that rank 0 wrote before the rounds and no other node ever held (a first
// copy: the home must learn of it). Prints "reads,NAME,VALUE" lines:
//   refetch_home_computing  median µs of a read fault while rank 0 computes
//   refetch_home_waiting    the same while rank 0 waits at a barrier
//   first_home_computing    median µs of a first read of a page while rank 0 computes
//   first_home_waiting      the same while rank 0 waits at a barrier
//   first_faults            first reads timed in each of the two
//   release_home_computing  median µs of the unlock while rank 0 computes
//   release_home_waiting    the same while rank 0 waits at a barrier
//   faults                  read faults timed in each of the two
// Run with the pages' protocol set (LMDX_PROTOCOL=hlrc) and the network chosen (LMDX_TRANSPORT).
#include <lmdx/lmdx.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "sync/names.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kPageBytes = 4096;
constexpr int kPeriod = 6;  // rounds between two reads of one page by rank 1

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double Median(std::vector<double> values) {
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// A lock whose manager is rank 1, so that its unlock costs rank 0 nothing but the release's own
// traffic.
std::string LockManagedByRankOne() {
  for (int i = 0;; ++i) {
    std::string name = "refetch_lock_" + std::to_string(i);
    if (lmdx::sync::ManagerOf(name, 2) == 1) return name;
  }
}

// Work that uses the core and no LMDX call, as a home between two synchronisations does.
void Compute(double milliseconds) {
  const auto until = Clock::now() + std::chrono::duration<double, std::milli>(milliseconds);
  volatile double sink = 1.0;
  while (Clock::now() < until) {
    for (int i = 0; i < 1000; ++i) sink = sink * 1.0000001 + 1e-9;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int pages = argc > 1 ? std::atoi(argv[1]) : 240;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 4 * kPeriod;
  const double compute_ms = argc > 3 ? std::atof(argv[3]) : 60.0;
  lmdx_init_spmd(&argc, &argv);
  const int rank = lmdx_rank();
  if (lmdx_size() != 2 || pages < kPeriod || rounds <= kPeriod) {
    if (rank == 0) {
      std::fprintf(stderr, "refetch_timing: 2 nodes, at least %d pages and more than %d rounds\n",
                   kPeriod, kPeriod);
    }
    lmdx_finalize();
    return 2;
  }
  // The pages live in rank 0's heap slice, so rank 0 is their home.
  auto** shared = static_cast<char**>(lmdx_shared_var("refetch_pages", sizeof(char*)));
  if (rank == 0) {
    auto* area =
        static_cast<char*>(lmdx_malloc((static_cast<std::size_t>(pages) + 1) * kPageBytes));
    *shared = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(area) + kPageBytes - 1) &
                                      ~std::uintptr_t{kPageBytes - 1});
  }
  // The pages rank 1 reads once each, a slice of them per round; homed at rank 0 too.
  const int first_per_round = std::max(1, pages / kPeriod);
  const int first_pages = first_per_round * rounds;
  auto** first_shared = static_cast<char**>(lmdx_shared_var("first_pages", sizeof(char*)));
  if (rank == 0) {
    auto* area =
        static_cast<char*>(lmdx_malloc((static_cast<std::size_t>(first_pages) + 1) * kPageBytes));
    char* aligned =
        reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(area) + kPageBytes - 1) &
                                ~std::uintptr_t{kPageBytes - 1});
    for (int i = 0; i < first_pages; ++i) {
      aligned[static_cast<std::size_t>(i) * kPageBytes] = static_cast<char>(i % 100 + 1);
    }
    *first_shared = aligned;
  }
  lmdx_barrier_all();
  char* base = *shared;
  auto page = [&](int i) { return base + static_cast<std::size_t>(i) * kPageBytes; };
  char* first_base = *first_shared;
  // A shuffled order, so that no walk shows and each read is a fault of its own.
  std::vector<int> first_order(static_cast<std::size_t>(first_per_round));
  std::iota(first_order.begin(), first_order.end(), 0);
  std::mt19937 shuffle(7);
  std::vector<double> first_computing;
  std::vector<double> first_waiting;

  const std::string lock = LockManagedByRankOne();
  std::vector<double> computing;
  std::vector<double> waiting;
  std::vector<double> released_computing;
  std::vector<double> released_waiting;
  int wrong = 0;
  for (int round = 0; round < rounds; ++round) {
    if (rank == 0) {
      for (int i = 0; i < pages; ++i) *page(i) = static_cast<char>(round + 1);
    }
    lmdx_barrier_all();  // rank 1 learns of the writes and drops its copies
    // Alternate rounds: the home computes, or it goes straight to the barrier and waits.
    const bool home_computes = round % 2 == 0;
    if (rank == 0 && home_computes) Compute(compute_ms);
    if (rank == 1) {
      // The first period brings every page once; the home then counts rank 1 among its copies.
      std::vector<double>& times = home_computes ? computing : waiting;
      for (int i = round % kPeriod; i < pages; i += kPeriod) {
        volatile char* byte = page(i);
        const auto start = Clock::now();
        const char value = *byte;
        if (round >= kPeriod) times.push_back(Micros(Clock::now() - start));
        if (value != static_cast<char>(round + 1)) ++wrong;
      }
      std::shuffle(first_order.begin(), first_order.end(), shuffle);
      for (int i : first_order) {
        const int index = round * first_per_round + i;
        volatile char* byte = first_base + static_cast<std::size_t>(index) * kPageBytes;
        const auto start = Clock::now();
        const char value = *byte;
        (home_computes ? first_computing : first_waiting).push_back(Micros(Clock::now() - start));
        if (value != static_cast<char>(index % 100 + 1)) ++wrong;
      }
      // Rank 1's own byte of the page (rank 0 writes byte 0): false sharing, which the
      // multiple-writer protocols merge.
      lmdx_lock(lock.c_str());
      page(round % kPeriod)[8] = static_cast<char>(round);
      const auto start = Clock::now();
      lmdx_unlock(lock.c_str());
      if (round >= kPeriod) {
        (home_computes ? released_computing : released_waiting)
            .push_back(Micros(Clock::now() - start));
      }
    }
    lmdx_barrier_all();
  }
  double figures[8] = {Median(computing),
                       Median(waiting),
                       static_cast<double>(computing.size()),
                       Median(released_computing),
                       Median(released_waiting),
                       Median(first_computing),
                       Median(first_waiting),
                       static_cast<double>(first_computing.size())};
  lmdx_status status{};
  if (rank == 1) lmdx_send(0, figures, sizeof figures);
  if (rank == 0) lmdx_recv(1, figures, sizeof figures, &status);
  int wrong_total = wrong;
  if (rank == 1) lmdx_send(0, &wrong, sizeof wrong);
  if (rank == 0) lmdx_recv(1, &wrong_total, sizeof wrong_total, &status);
  if (rank == 0) {
    if (wrong_total != 0) {
      std::fprintf(stderr, "refetch_timing: %d reads saw a stale value\n", wrong_total);
    } else {
      std::printf("reads,refetch_home_computing,%.2f\n", figures[0]);
      std::printf("reads,refetch_home_waiting,%.2f\n", figures[1]);
      std::printf("reads,faults,%.0f\n", figures[2]);
      std::printf("reads,release_home_computing,%.2f\n", figures[3]);
      std::printf("reads,release_home_waiting,%.2f\n", figures[4]);
      std::printf("reads,first_home_computing,%.2f\n", figures[5]);
      std::printf("reads,first_home_waiting,%.2f\n", figures[6]);
      std::printf("reads,first_faults,%.0f\n", figures[7]);
    }
  }
  lmdx_finalize();
  return wrong_total == 0 ? 0 : 1;
}

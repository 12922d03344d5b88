// The job behind `lmdx bench dsm` (2 nodes). Rank 0 homes the pages; rank 1 faults on them.
// Prints one line per figure, "dsm,NAME,MICROSECONDS" (median over the pages), which the driver
// turns into the table:
//   local_fault   SIGSEGV + mprotect + retry on a private page, no DSM (the machine's floor)
//   latency_8     one-way latency of an 8 B message (half a round trip)
//   transfer_4k   one-way time of a 4 KiB message
//   read_fault    first read of a page homed on the other node (fetch of a copy)
//   write_fault   first write to a page this node holds a read copy of (upgrade, invalidation)
//   get_4k        lmdx_get of a 4 KiB page homed on the other node (no fault)
//   read_fault_home_writing  first read of a page the home has been writing: the home must
//                 take its own write access away (an mprotect there) before the copy leaves
#include <lmdx/lmdx.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void Report(const char* name, double micros) { std::printf("dsm,%s,%.2f\n", name, micros); }

// ---- The machine's own fault round trip, before LMDX installs its handler ----

void OpenOnFault(int, siginfo_t* info, void*) {
  auto page = reinterpret_cast<std::uintptr_t>(info->si_addr) & ~std::uintptr_t{4095};
  ::mprotect(reinterpret_cast<void*>(page), 4096, PROT_READ | PROT_WRITE);
}

double LocalFaultMicros(int pages) {
  std::size_t bytes = static_cast<std::size_t>(pages) * 4096;
  void* area = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) return -1;
  std::memset(area, 1, bytes);  // present pages: only the protection fault is measured
  ::mprotect(area, bytes, PROT_NONE);
  struct sigaction action {};
  struct sigaction previous {};
  action.sa_sigaction = OpenOnFault;
  action.sa_flags = SA_SIGINFO;
  ::sigaction(SIGSEGV, &action, &previous);
  std::vector<double> times;
  auto* bytes_of = static_cast<volatile char*>(area);
  for (int i = 0; i < pages; ++i) {
    auto start = Clock::now();
    bytes_of[static_cast<std::size_t>(i) * 4096] = 2;
    times.push_back(Micros(Clock::now() - start));
  }
  ::sigaction(SIGSEGV, &previous, nullptr);
  ::munmap(area, bytes);
  return Median(times);
}

// ---- Messages ----

double OneWayMicros(int rank, std::size_t bytes, int rounds) {
  std::vector<char> buffer(bytes, 'x');
  std::vector<double> times;
  for (int i = 0; i < rounds; ++i) {
    lmdx_status status{};
    if (rank == 0) {
      auto start = Clock::now();
      lmdx_send(1, buffer.data(), bytes);
      lmdx_recv(1, buffer.data(), bytes, &status);
      times.push_back(Micros(Clock::now() - start) / 2);
    } else {
      lmdx_recv(0, buffer.data(), bytes, &status);
      lmdx_send(0, buffer.data(), bytes);
    }
  }
  return rank == 0 ? Median(times) : 0;
}

// Rank 1 sends its median to rank 0, which prints every figure.
double FromRankOne(int rank, double mine) {
  double value = mine;
  lmdx_status status{};
  if (rank == 1) lmdx_send(0, &value, sizeof value);
  if (rank == 0) lmdx_recv(1, &value, sizeof value, &status);
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  int pages = argc > 1 ? std::atoi(argv[1]) : 2000;
  double local_fault = LocalFaultMicros(pages);
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank();
  if (lmdx_size() != 2) {
    std::fprintf(stderr, "dsm_timing runs on 2 nodes\n");
    return 2;
  }
  double latency = OneWayMicros(rank, 8, 2000);
  double transfer = OneWayMicros(rank, 4096, 2000);

  // Pure fetches: pages of a cyclic variable homed at rank 0 (its even pages) that rank 0 holds
  // but never opened, so serving them costs the home no protection change. The driver runs
  // this job with LMDX_DSM_HOME=cyclic.
  auto* fresh = static_cast<char*>(
      lmdx_shared_var("bench_fresh", static_cast<std::size_t>(4 * pages) * 4096));
  auto fresh_page = [&](int i) { return fresh + static_cast<std::size_t>(2 * i) * 4096; };
  // Pages rank 0 has been writing (its heap slice): serving a read first takes the home's write
  // access away, an mprotect on the home.
  auto** shared_pointer = static_cast<char**>(lmdx_shared_var("bench_pointer", sizeof(char*)));
  if (rank == 0) {
    auto* area = static_cast<char*>(lmdx_malloc(static_cast<std::size_t>(pages + 1) * 4096));
    auto* aligned = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(area) + 4095) &
                                            ~std::uintptr_t{4095});
    for (int i = 0; i < pages; ++i)
      aligned[static_cast<std::size_t>(i) * 4096] = static_cast<char>(i);
    *shared_pointer = aligned;
  }
  lmdx_barrier_all();
  char* written = *shared_pointer;
  std::vector<double> reads, writes, gets, reads_written;
  if (rank == 1) {
    for (int i = 0; i < pages; ++i) {
      volatile char* page = fresh_page(i);
      auto start = Clock::now();
      char value = *page;
      reads.push_back(Micros(Clock::now() - start));
      if (value != 0) std::fprintf(stderr, "fresh page %d reads %d\n", i, value);
    }
    for (int i = 0; i < pages; ++i) {
      volatile char* page = fresh_page(i);
      auto start = Clock::now();
      *page = static_cast<char>(i + 1);
      writes.push_back(Micros(Clock::now() - start));
    }
    std::vector<char> copy(4096);
    for (int i = pages; i < 2 * pages; ++i) {
      auto start = Clock::now();
      lmdx_get(copy.data(), fresh_page(i), 4096);
      gets.push_back(Micros(Clock::now() - start));
    }
    for (int i = 0; i < pages; ++i) {
      volatile char* page = written + static_cast<std::size_t>(i) * 4096;
      auto start = Clock::now();
      char value = *page;
      reads_written.push_back(Micros(Clock::now() - start));
      if (value != static_cast<char>(i)) std::fprintf(stderr, "page %d reads %d\n", i, value);
    }
  }
  lmdx_barrier_all();
  double read_fault = FromRankOne(rank, rank == 1 ? Median(reads) : 0);
  double write_fault = FromRankOne(rank, rank == 1 ? Median(writes) : 0);
  double get = FromRankOne(rank, rank == 1 ? Median(gets) : 0);
  double read_written = FromRankOne(rank, rank == 1 ? Median(reads_written) : 0);
  double remote_local_fault = FromRankOne(rank, local_fault);
  if (rank == 0) {
    Report("local_fault", remote_local_fault);
    Report("latency_8", latency);
    Report("transfer_4k", transfer);
    Report("read_fault", read_fault);
    Report("write_fault", write_fault);
    Report("get_4k", get);
    Report("read_fault_home_writing", read_written);
  }
  lmdx_finalize();
  return 0;
}

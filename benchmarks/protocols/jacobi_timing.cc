// Jacobi relaxation on an NxN grid of doubles under the job's protocol, next to the same sweeps on
// plain threads in this process, measured in the same run (rank 0 times the threads first, while
// the other ranks wait at a barrier and take no CPU).
//
//   lmdx run bazel-bin/benchmarks/protocols/jacobi_timing -n 2 --protocol hlrc --stats -- 2048 100
//
// Rows are split in one band per rank; the two grids are shared variables with block homes, so
// each band's pages are homed where they are written. One lmdx_barrier_all per iteration. The
// result is checked against the plain threads' (bit for bit: the same sweeps in the same order).
#include <lmdx/lmdx.h>

#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

double Initial(int i, int j, int n) {
  return (i == 0 || j == 0 || i == n - 1 || j == n - 1) ? 1.0 + 0.001 * (i + j) : 0.0;
}

void Fill(double* grid, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) grid[static_cast<std::size_t>(i) * n + j] = Initial(i, j, n);
}

// Rows [first, last) of dst from src; the border stays. Never inlined: the plain threads and the
// LMDX nodes then run the very same machine code (inlined into each caller, GCC vectorised one
// copy and not the other, a 25% difference that had nothing to do with LMDX).
[[gnu::noinline]] void Sweep(const double* src, double* dst, int n, int first, int last) {
  for (int i = std::max(first, 1); i < std::min(last, n - 1); ++i) {
    const double* up = src + static_cast<std::size_t>(i - 1) * n;
    const double* row = src + static_cast<std::size_t>(i) * n;
    const double* down = src + static_cast<std::size_t>(i + 1) * n;
    double* out = dst + static_cast<std::size_t>(i) * n;
    for (int j = 1; j < n - 1; ++j) out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
  }
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The same iterations on `threads` plain threads over private grids; returns seconds, leaves
// the final grid in `result`.
double PlainThreads(int n, int iterations, int threads, std::vector<double>& result) {
  std::vector<double> a(static_cast<std::size_t>(n) * n), b(a.size());
  Fill(a.data(), n);
  Fill(b.data(), n);
  std::barrier sync(threads);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      int first = n * t / threads, last = n * (t + 1) / threads;
      double* src = a.data();
      double* dst = b.data();
      for (int k = 0; k < iterations; ++k) {
        Sweep(src, dst, n, first, last);
        sync.arrive_and_wait();
        std::swap(src, dst);
      }
    });
  }
  for (auto& worker : workers) worker.join();
  double seconds = Seconds(start);
  result = iterations % 2 == 0 ? a : b;
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  const int n = argc > 1 ? std::atoi(argv[1]) : 2048;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 100;
  const int rank = lmdx_rank(), size = lmdx_size();
  if (n < 4 || iterations < 1) {
    if (rank == 0) std::fprintf(stderr, "usage: jacobi_timing [N >= 4] [ITERATIONS >= 1]\n");
    lmdx_abort(2, "bad arguments");
  }
  const std::size_t bytes = static_cast<std::size_t>(n) * n * sizeof(double);
  auto* grid0 = static_cast<double*>(lmdx_shared_var("jacobi.grid0", bytes));
  auto* grid1 = static_cast<double*>(lmdx_shared_var("jacobi.grid1", bytes));
  const int first = n * rank / size, last = n * (rank + 1) / size;

  std::vector<double> reference;
  double one_thread = 0, threads = 0;
  if (rank == 0) {
    std::vector<double> unused;
    one_thread = PlainThreads(n, iterations, 1, unused);
    threads = PlainThreads(n, iterations, size, reference);
  }
  // Each rank fills its own band of both grids (its homes), then all start together.
  for (double* grid : {grid0, grid1}) {
    for (int i = first; i < last; ++i)
      for (int j = 0; j < n; ++j) grid[static_cast<std::size_t>(i) * n + j] = Initial(i, j, n);
  }
  lmdx_barrier_all();
  auto start = std::chrono::steady_clock::now();
  double* src = grid0;
  double* dst = grid1;
  // Where each node's time goes: its own sweeps (faults on the neighbours' rows included) and the
  // barrier (the protocol's release and acquire, and the wait for the slower node).
  double sweeping = 0;
  for (int k = 0; k < iterations; ++k) {
    auto sweep_start = std::chrono::steady_clock::now();
    Sweep(src, dst, n, first, last);
    sweeping += Seconds(sweep_start);
    lmdx_barrier_all();
    std::swap(src, dst);
  }
  double seconds = Seconds(start);
  std::printf("  rank %d: sweeps %.3f ms, barrier %.3f ms per iteration\n", rank,
              1e3 * sweeping / iterations, 1e3 * (seconds - sweeping) / iterations);
  std::fflush(stdout);
  lmdx_barrier_all();
  if (rank == 0) {
    std::size_t differ = 0;
    for (std::size_t at = 0; at < reference.size(); ++at) differ += src[at] != reference[at];
    std::printf("jacobi %dx%d, %d iterations, %d nodes, protocol %s\n", n, n, iterations, size,
                std::getenv("LMDX_PROTOCOL") ? std::getenv("LMDX_PROTOCOL") : "sc");
    std::printf("  1 plain thread      %8.3f ms per iteration\n", 1e3 * one_thread / iterations);
    std::printf("  %d plain threads     %8.3f ms per iteration\n", size,
                1e3 * threads / iterations);
    std::printf("  LMDX, %d nodes       %8.3f ms per iteration (%.2fx the threads' speed)\n", size,
                1e3 * seconds / iterations, threads / seconds);
    if (differ != 0) {
      std::printf("  WRONG: %zu elements differ from the plain threads' result\n", differ);
      lmdx_abort(1, "the LMDX result differs from the plain threads'");
    }
    std::printf("verified\n");
  }
  lmdx_finalize();
  return 0;
}

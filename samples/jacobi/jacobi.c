/* samples/jacobi: 2-D Jacobi relaxation on an NxN grid of doubles.
 *
 * Two grids, `jacobi.grid0` and `jacobi.grid1`, are shared variables (block homes: each node homes
 * one band of rows of each). Worker w owns a band of rows; an iteration computes its band of the
 * next grid from the current one (the average of the four neighbours; the border stays fixed),
 * then waits at the barrier `jacobi.step` for every worker, and the grids swap roles. A worker
 * reads the rows just above and below its band, which other workers wrote in the previous
 * iteration: that is all the sharing there is, and what the protocols differ on.
 *
 * The time printed is the iterations' (worker 0's, from the barrier after the grids are filled to
 * the last one), as in the message version, so that the two compare like for like.
 *
 * Main (rank 0) starts one worker per node by default, joins them, then computes the same
 * iterations sequentially in private memory and compares every element, bit for bit (the same
 * operations in the same order). It prints `verified`, or the first element that differs and
 * exits 1.
 *
 *   ./lmdx run jacobi [-n 4] [--protocol P] [--stats] [-- --size N --iterations K --workers W]
 */
#include <stdint.h>
#include <stdio.h>

#include "samples/common/sample.h"
#include "samples/jacobi/jacobi_kernel.h"

/* What main tells the workers. */
struct jacobi_run {
  int size;
  int iterations;
  int workers;
  int wrong_result;
  double seconds; /* worker 0's time for the iterations, from the first barrier to the last */
};

static const char* const kProgram = "jacobi";

static struct jacobi_run* shared_run(void) {
  return sample_shared(kProgram, "jacobi.run", sizeof(struct jacobi_run));
}

static double* shared_grid(int which, int n) {
  return sample_shared(kProgram, which == 0 ? "jacobi.grid0" : "jacobi.grid1",
                       (size_t)n * n * sizeof(double));
}

static void* worker(void* arg) {
  int w = (int)(intptr_t)arg;
  struct jacobi_run run = *shared_run();
  int n = run.size;
  double* grids[2] = {shared_grid(0, n), shared_grid(1, n)};
  int first = 0;
  int end = 0;
  sample_band(n, w, run.workers, &first, &end);
  /* Each worker fills its own band of both grids: the pages are homed here, so no fault. */
  jacobi_fill_rows(grids[0], n, 0, first, end);
  jacobi_fill_rows(grids[1], n, 0, first, end);
  jacobi_inner_rows(n, &first, &end);
  lmdx_barrier("jacobi.step");
  double start = sample_now();
  for (int k = 0; k < run.iterations; k++) {
    double* next = grids[(k + 1) % 2];
    jacobi_sweep(grids[k % 2], next, n, first, end);
    if (run.wrong_result && w == 0 && k == run.iterations - 1) next[(size_t)1 * n + n / 2] += 1.0;
    lmdx_barrier("jacobi.step");
  }
  /* After the last barrier: main reads it once it has joined this worker. */
  if (w == 0) shared_run()->seconds = sample_now() - start;
  return NULL;
}

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  int size = 1024;
  int iterations = 100;
  int workers = lmdx_size();
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"size", &size, 4, 16384, "N: the grid is NxN doubles"},
      {"iterations", &iterations, 1, 1000000, "iterations"},
      {"workers", &workers, 1, 1024, "LMDX threads, placed in blocks on the nodes"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 3, &wrong_result);
  if (status >= 0) return status;

  struct jacobi_run* run = shared_run();
  run->size = size;
  run->iterations = iterations;
  run->workers = workers;
  run->wrong_result = wrong_result;
  double* grids[2] = {shared_grid(0, size), shared_grid(1, size)};
  lmdx_barrier_init("jacobi.step", workers);

  if (sample_run_workers(kProgram, worker, workers) != 0) return 1;
  double seconds = run->seconds;
  printf(
      "%s: %dx%d grid, %d iterations, %d workers on %d nodes, protocol %s: %.3f s (%.3f ms "
      "per iteration)\n",
      kProgram, size, size, iterations, workers, lmdx_size(), sample_protocol(grids[0]), seconds,
      1e3 * seconds / iterations);
  return jacobi_check(kProgram, grids[iterations % 2], size, iterations);
}

/* samples/jacobi: 2-D Jacobi relaxation on an NxN grid of doubles.
 *
 * Two grids, `jacobi.grid0` and `jacobi.grid1`, are shared variables (block homes: each node homes
 * one band of rows of each). Worker w owns a band of rows; an iteration computes its band of the
 * next grid from the current one (the average of the four neighbours; the border stays fixed),
 * then waits at the barrier `jacobi.step` for every worker, and the grids swap roles. A worker
 * reads the rows just above and below its band, which other workers wrote in the previous
 * iteration: that is all the sharing there is, and what the protocols differ on.
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
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample.h"

/* What main tells the workers. */
struct jacobi_run {
  int size;
  int iterations;
  int workers;
  int wrong_result;
};

static const char* const kProgram = "jacobi";

static double initial_value(int i, int j) {
  if (i == 0) return 100.0; /* a hot top edge */
  if (j == 0) return 50.0;  /* a warm left edge */
  return 0.0;               /* the others and the inside start cold */
}

static void fill_rows(double* grid, int n, int first, int end) {
  for (int i = first; i < end; i++)
    for (int j = 0; j < n; j++) grid[(size_t)i * n + j] = initial_value(i, j);
}

/* Rows [first, end) of next from current, leaving the border as it is. */
static void sweep(const double* current, double* next, int n, int first, int end) {
  if (first < 1) first = 1;
  if (end > n - 1) end = n - 1;
  for (int i = first; i < end; i++) {
    const double* up = current + (size_t)(i - 1) * n;
    const double* row = current + (size_t)i * n;
    const double* down = current + (size_t)(i + 1) * n;
    double* out = next + (size_t)i * n;
    for (int j = 1; j < n - 1; j++) out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
  }
}

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
  fill_rows(grids[0], n, first, end);
  fill_rows(grids[1], n, first, end);
  lmdx_barrier("jacobi.step");
  for (int k = 0; k < run.iterations; k++) {
    double* next = grids[(k + 1) % 2];
    sweep(grids[k % 2], next, n, first, end);
    if (run.wrong_result && w == 0 && k == run.iterations - 1) next[(size_t)1 * n + n / 2] += 1.0;
    lmdx_barrier("jacobi.step");
  }
  return NULL;
}

/* The same iterations in private memory; returns the final grid (malloc'd). */
static double* sequential(int n, int iterations) {
  double* grids[2] = {malloc((size_t)n * n * sizeof(double)),
                      malloc((size_t)n * n * sizeof(double))};
  if (grids[0] == NULL || grids[1] == NULL) {
    fprintf(stderr, "%s: no memory for the sequential check\n", kProgram);
    exit(1);
  }
  fill_rows(grids[0], n, 0, n);
  fill_rows(grids[1], n, 0, n);
  for (int k = 0; k < iterations; k++) sweep(grids[k % 2], grids[(k + 1) % 2], n, 0, n);
  free(grids[(iterations + 1) % 2]);
  return grids[iterations % 2];
}

static int check(const double* result, int n, int iterations) {
  double* expected = sequential(n, iterations);
  int status = 0;
  for (size_t at = 0; at < (size_t)n * n; at++) {
    if (result[at] != expected[at]) {
      printf("%s: grid[%zu][%zu] = %.17g, expected %.17g\n", kProgram, at / n, at % n, result[at],
             expected[at]);
      status = 1;
      break;
    }
  }
  free(expected);
  if (status == 0) printf("verified\n");
  return status;
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

  double start = sample_now();
  if (sample_run_workers(kProgram, worker, workers) != 0) return 1;
  double seconds = sample_now() - start;
  printf(
      "%s: %dx%d grid, %d iterations, %d workers on %d nodes, protocol %s: %.3f s (%.3f ms "
      "per iteration)\n",
      kProgram, size, size, iterations, workers, lmdx_size(), sample_protocol(grids[0]), seconds,
      1e3 * seconds / iterations);
  return check(grids[iterations % 2], size, iterations);
}

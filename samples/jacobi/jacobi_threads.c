/* samples/jacobi, plain-threads version: the same relaxation on POSIX threads over private memory
 * (malloc), with no LMDX at all: what the shared-memory version's kernel costs when nothing has
 * to be kept coherent across nodes, the reference `lmdx bench protocols` shows beside it.
 *
 * Worker w owns the same band of rows as in the shared version, fills it in both grids, and an
 * iteration computes its band of the next grid, then waits at a pthread barrier. The time printed
 * is worker 0's, from the barrier after the grids are filled to the last one, the span the shared
 * version times. The check is the shared version's: every element, bit for bit, against the same
 * iterations run sequentially.
 *
 *   bazel-bin/samples/jacobi/jacobi_threads [--size N --iterations K --workers W]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "samples/common/sample_threads.h"
#include "samples/jacobi/jacobi_kernel.h"

static const char* const kProgram = "jacobi_threads";

/* What main tells the workers; written before they start, only read after. */
static struct {
  int size;
  int iterations;
  int workers;
  int wrong_result;
  double* grids[2];
  pthread_barrier_t step;
  double seconds; /* worker 0's time for the iterations */
} run;

static void* worker(void* arg) {
  int w = (int)(intptr_t)arg;
  int n = run.size;
  int first = 0;
  int end = 0;
  sample_band(n, w, run.workers, &first, &end);
  /* Each worker fills its own band, as in the shared version (on a NUMA machine, near it). */
  jacobi_fill_rows(run.grids[0], n, 0, first, end);
  jacobi_fill_rows(run.grids[1], n, 0, first, end);
  jacobi_inner_rows(n, &first, &end);
  pthread_barrier_wait(&run.step);
  double start = sample_now();
  for (int k = 0; k < run.iterations; k++) {
    double* next = run.grids[(k + 1) % 2];
    jacobi_sweep(run.grids[k % 2], next, n, first, end);
    if (run.wrong_result && w == 0 && k == run.iterations - 1) next[(size_t)1 * n + n / 2] += 1.0;
    pthread_barrier_wait(&run.step);
  }
  if (w == 0) run.seconds = sample_now() - start;
  return NULL;
}

int main(int argc, char** argv) {
  int size = 1024;
  int iterations = 100;
  int workers = 1;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"size", &size, 4, 16384, "N: the grid is NxN doubles"},
      {"iterations", &iterations, 1, 1000000, "iterations"},
      {"workers", &workers, 1, 1024, "POSIX threads"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 3, &wrong_result);
  if (status >= 0) return status;

  run.size = size;
  run.iterations = iterations;
  run.workers = workers;
  run.wrong_result = wrong_result;
  for (int g = 0; g < 2; g++) {
    run.grids[g] = malloc((size_t)size * size * sizeof(double));
    if (run.grids[g] == NULL) {
      fprintf(stderr, "%s: no memory for the grids\n", kProgram);
      return 1;
    }
  }
  pthread_barrier_init(&run.step, NULL, (unsigned)workers);
  if (sample_run_threads(kProgram, worker, workers) != 0) return 1;
  printf("%s: %dx%d grid, %d iterations, %d threads: %.3f s (%.3f ms per iteration)\n", kProgram,
         size, size, iterations, workers, run.seconds, 1e3 * run.seconds / iterations);
  status = jacobi_check(kProgram, run.grids[iterations % 2], size, iterations);
  pthread_barrier_destroy(&run.step);
  free(run.grids[0]);
  free(run.grids[1]);
  return status;
}

/* samples/lu, plain-threads version: the same blocked LU on POSIX threads over private memory
 * (malloc), with no LMDX at all, the reference `lmdx bench protocols` shows beside the shared and
 * message versions.
 *
 * The same layout (block columns cyclic over the workers, each worker's columns together), the
 * same steps between the same pthread barriers: the owner of column K factors it, everyone waits,
 * every worker updates its columns after K. The time printed is worker 0's, from the barrier
 * after the matrix is made to the last one. The check is the shared version's: every element
 * against an unblocked LU computed sequentially, within 1e-9 of the largest.
 *
 *   bazel-bin/samples/lu/lu_threads [--size N --block B --workers W --wrong-result]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "samples/common/sample_threads.h"
#include "samples/lu/lu_kernel.h"

static const char* const kProgram = "lu_threads";

/* What main tells the workers; written before they start, only read after. */
static struct {
  struct lu_layout layout;
  int wrong_result;
  double* matrix;
  pthread_barrier_t step;
  double seconds; /* worker 0's time for the factorisation */
} run;

static void* worker(void* arg) {
  int w = (int)(intptr_t)arg;
  const struct lu_layout* l = &run.layout;
  for (int j = w; j < l->blocks; j += l->workers) lu_fill_column(lu_column(run.matrix, l, j), l, j);
  pthread_barrier_wait(&run.step); /* the matrix is made */
  double start = sample_now();
  size_t spoiled = lu_offset(l, 1, l->n / 2);
  int spoiled_owner = lu_owner(l, l->n / 2 / l->block);
  for (int k = 0; k < l->blocks; k++) {
    double* factored = lu_column(run.matrix, l, k);
    if (lu_owner(l, k) == w) lu_factor_column(factored, l, k);
    /* Element (1, n/2) of U is final by now: nothing after this mends it. */
    if (run.wrong_result && k == l->blocks - 1 && spoiled_owner == w) run.matrix[spoiled] += 1.0;
    pthread_barrier_wait(&run.step); /* column k is factored */
    for (int j = lu_next_column_of(l, w, k); j < l->blocks; j += l->workers) {
      lu_update_column(lu_column(run.matrix, l, j), factored, l, k);
    }
  }
  if (w == 0) run.seconds = sample_now() - start;
  return NULL;
}

int main(int argc, char** argv) {
  int size = 1024;
  int block = 32;
  int workers = 1;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"size", &size, 2, 8192, "N: the matrix is NxN doubles"},
      {"block", &block, 1, 1024, "B: blocks are BxB doubles; N must be a multiple of B"},
      {"workers", &workers, 1, 1024, "POSIX threads"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 3, &wrong_result);
  if (status >= 0) return status;
  if (size % block != 0) {
    fprintf(stderr, "%s: --size %d is not a multiple of --block %d\n", kProgram, size, block);
    return 2;
  }

  run.layout = lu_layout_of(size, block, workers);
  run.wrong_result = wrong_result;
  run.matrix = malloc((size_t)size * size * sizeof *run.matrix);
  if (run.matrix == NULL) {
    fprintf(stderr, "%s: no memory for the matrix\n", kProgram);
    return 1;
  }
  pthread_barrier_init(&run.step, NULL, (unsigned)workers);
  if (sample_run_threads(kProgram, worker, workers) != 0) return 1;
  printf("%s: %dx%d doubles, %dx%d blocks, %d threads: %.3f s\n", kProgram, size, size, block,
         block, workers, run.seconds);
  status = lu_check(kProgram, run.matrix, &run.layout);
  pthread_barrier_destroy(&run.step);
  free(run.matrix);
  return status;
}

/* samples/fft, plain-threads version: the same six-step transform on POSIX threads over private
 * memory (malloc), with no LMDX at all, the reference `lmdx bench protocols` shows beside the
 * shared version: its three transposes, all-to-all exchanges between nodes there, are plain
 * memory reads here.
 *
 * Worker w owns the same band of rows of the r x r matrices `data` and `scratch` as in the shared
 * version and does the same phases between the same pthread barriers: transpose, row FFTs and
 * twiddles, transpose, row FFTs, transpose. The time printed is worker 0's, from the barrier after
 * the fill to the last one. The check is the shared version's: a direct DFT up to 2^12 points, a
 * recursive FFT beyond, within 1e-9 of the largest output.
 *
 *   bazel-bin/samples/fft/fft_threads [--log2-points K --workers W]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "samples/common/sample_threads.h"
#include "samples/fft/fft_kernel.h"

static const char* const kProgram = "fft_threads";

/* What main tells the workers; written before they start, only read after. */
static struct {
  int log2_points;
  int workers;
  int wrong_result;
  struct complex_number* data;
  struct complex_number* scratch;
  pthread_barrier_t step;
  double seconds; /* worker 0's time for the transform */
} run;

static void* worker(void* arg) {
  int w = (int)(intptr_t)arg;
  size_t n = (size_t)1 << run.log2_points;
  int r = 1 << (run.log2_points / 2);
  struct complex_number* data = run.data;
  struct complex_number* scratch = run.scratch;
  struct complex_number* roots = fft_row_roots(r);
  if (roots == NULL) {
    /* The others wait for this worker at every barrier: there is no going on without it. */
    fprintf(stderr, "%s: worker %d has no memory for its roots\n", kProgram, w);
    exit(1);
  }
  int first = 0;
  int end = 0;
  sample_band(r, w, run.workers, &first, &end);
  for (size_t j = (size_t)first * r; j < (size_t)end * r; j++) data[j] = fft_input_value(j);
  pthread_barrier_wait(&run.step); /* the input is complete */
  double start = sample_now();

  fft_transpose_rows(data, scratch, r, first, end, 0); /* scratch[j1][j2] = x[j1 + r j2] */
  for (int j1 = first; j1 < end; j1++) {
    fft_row(scratch + (size_t)j1 * r, r, roots);
    fft_twiddle_row(scratch + (size_t)j1 * r, j1, r, n);
  }
  pthread_barrier_wait(&run.step); /* every row of scratch is transformed */
  fft_transpose_rows(scratch, data, r, first, end, 0);
  for (int k2 = first; k2 < end; k2++) fft_row(data + (size_t)k2 * r, r, roots);
  pthread_barrier_wait(&run.step);                     /* data[k2][k1] = X[k2 + r k1] */
  fft_transpose_rows(data, scratch, r, first, end, 0); /* scratch in natural order */
  /* The owner of row 0, not worker 0: with more workers than rows, worker 0 owns none. */
  if (run.wrong_result && first == 0 && end > 0) scratch[r / 2].re += 1.0;
  pthread_barrier_wait(&run.step);
  if (w == 0) run.seconds = sample_now() - start;
  free(roots);
  return NULL;
}

int main(int argc, char** argv) {
  int log2_points = 20;
  int workers = 1;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"log2-points", &log2_points, 2, 26, "K: 2^K points, K even"},
      {"workers", &workers, 1, 1024, "POSIX threads"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 2, &wrong_result);
  if (status >= 0) return status;
  if (log2_points % 2 != 0) {
    fprintf(stderr, "%s: --log2-points must be even (the points form a square matrix), not %d\n",
            kProgram, log2_points);
    return 2;
  }

  size_t n = (size_t)1 << log2_points;
  run.log2_points = log2_points;
  run.workers = workers;
  run.wrong_result = wrong_result;
  run.data = malloc(n * sizeof *run.data);
  run.scratch = malloc(n * sizeof *run.scratch);
  if (run.data == NULL || run.scratch == NULL) {
    fprintf(stderr, "%s: no memory for the points\n", kProgram);
    return 1;
  }
  pthread_barrier_init(&run.step, NULL, (unsigned)workers);
  if (sample_run_threads(kProgram, worker, workers) != 0) return 1;
  printf("%s: 2^%d points, %d threads: %.3f s\n", kProgram, log2_points, workers, run.seconds);
  status = fft_check(kProgram, run.scratch, log2_points);
  pthread_barrier_destroy(&run.step);
  free(run.data);
  free(run.scratch);
  return status;
}

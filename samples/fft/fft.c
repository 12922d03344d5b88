/* samples/fft: 1-D complex FFT of n = 2^K points with the six-step algorithm.
 *
 * The n points are an r x r matrix (r = 2^(K/2); K must be even), row j2 holding points
 * j2 * r ... j2 * r + r - 1. The transform is: transpose; an FFT of length r on every row; a
 * twiddle factor on every element; transpose; an FFT on every row; transpose. Each worker owns a
 * band of rows of the two shared matrices `fft.data` and `fft.scratch` (block homes: each node
 * homes one band of each). A row FFT reads and writes only the worker's own rows; a transpose
 * writes its own rows and reads a column of everybody's, which is the sharing: all to all, three
 * times. Workers meet at the barrier `fft.step` after filling their input, after the first row
 * FFTs and twiddles, after the second row FFTs, and at the end.
 *
 * Main (rank 0) starts one worker per node by default, joins them, and checks the transform
 * against an independent computation in private memory: a direct DFT up to 2^12 points, a
 * recursive radix-2 FFT beyond. It prints the largest difference relative to the largest output,
 * then `verified` when it is below 1e-9, or the element furthest off and exits 1. The time
 * printed is the transform's (worker 0's, from the barrier after the fill to the last one).
 *
 *   ./lmdx run fft [-n 4] [--protocol P] [--stats] [-- --log2-points K --workers W]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "samples/common/sample.h"
#include "samples/fft/fft_kernel.h"

/* What main tells the workers. */
struct fft_run {
  int log2_points;
  int workers;
  int wrong_result;
  double seconds; /* worker 0's time for the transform */
};

static const char* const kProgram = "fft";

static struct fft_run* shared_run(void) {
  return sample_shared(kProgram, "fft.run", sizeof(struct fft_run));
}

static struct complex_number* shared_matrix(const char* name, size_t points) {
  return sample_shared(kProgram, name, points * sizeof(struct complex_number));
}

static void* worker(void* arg) {
  int w = (int)(intptr_t)arg;
  struct fft_run run = *shared_run();
  size_t n = (size_t)1 << run.log2_points;
  int r = 1 << (run.log2_points / 2);
  struct complex_number* data = shared_matrix("fft.data", n);
  struct complex_number* scratch = shared_matrix("fft.scratch", n);
  struct complex_number* roots = fft_row_roots(r);
  if (roots == NULL) return (void*)1;
  int first = 0;
  int end = 0;
  sample_band(r, w, run.workers, &first, &end);
  for (size_t j = (size_t)first * r; j < (size_t)end * r; j++) data[j] = fft_input_value(j);
  lmdx_barrier("fft.step"); /* the input is complete */
  double start = sample_now();

  fft_transpose_rows(data, scratch, r, first, end, 0); /* scratch[j1][j2] = x[j1 + r j2] */
  for (int j1 = first; j1 < end; j1++) {
    fft_row(scratch + (size_t)j1 * r, r, roots);
    fft_twiddle_row(scratch + (size_t)j1 * r, j1, r, n);
  }
  lmdx_barrier("fft.step"); /* every row of scratch is transformed */
  fft_transpose_rows(scratch, data, r, first, end, 0);
  for (int k2 = first; k2 < end; k2++) fft_row(data + (size_t)k2 * r, r, roots);
  lmdx_barrier("fft.step");                            /* data[k2][k1] = X[k2 + r k1] */
  fft_transpose_rows(data, scratch, r, first, end, 0); /* scratch in natural order */
  /* The owner of row 0, not worker 0: with more workers than rows, worker 0 owns none. */
  if (run.wrong_result && first == 0 && end > 0) scratch[r / 2].re += 1.0;
  lmdx_barrier("fft.step");
  if (w == 0) shared_run()->seconds = sample_now() - start;
  free(roots);
  return NULL;
}

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  int log2_points = 20;
  int workers = lmdx_size();
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"log2-points", &log2_points, 2, 26, "K: 2^K points, K even"},
      {"workers", &workers, 1, 1024, "LMDX threads, placed in blocks on the nodes"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 2, &wrong_result);
  if (status >= 0) return status;
  if (log2_points % 2 != 0) {
    fprintf(stderr, "%s: --log2-points must be even (the points form a square matrix), not %d\n",
            kProgram, log2_points);
    return 2;
  }

  struct fft_run* run = shared_run();
  run->log2_points = log2_points;
  run->workers = workers;
  run->wrong_result = wrong_result;
  size_t n = (size_t)1 << log2_points;
  shared_matrix("fft.data", n);
  struct complex_number* result = shared_matrix("fft.scratch", n);
  lmdx_barrier_init("fft.step", workers);

  if (sample_run_workers(kProgram, worker, workers) != 0) return 1;
  printf("%s: 2^%d points, %d workers on %d nodes, protocol %s: %.3f s\n", kProgram, log2_points,
         workers, lmdx_size(), sample_protocol(result), run->seconds);
  return fft_check(kProgram, result, log2_points);
}

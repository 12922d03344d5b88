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
 * then `verified` when it is below 1e-9, or the first element off by more and exits 1. The time
 * printed is the transform's (worker 0's, from the barrier after the fill to the last one).
 *
 *   ./lmdx run fft [-n 4] [--protocol P] [--stats] [-- --log2-points K --workers W]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "samples/common/sample.h"

struct complex_number {
  double re;
  double im;
};

/* What main tells the workers. */
struct fft_run {
  int log2_points;
  int workers;
  int wrong_result;
  double seconds; /* worker 0's time for the transform */
};

static const char* const kProgram = "fft";
static const double kTwoPi = 6.283185307179586476925286766559;
static const double kTolerance = 1e-9;

/* The input: point j's value, from a hash of j, in [-1, 1) for both parts. */
static struct complex_number input_value(uint64_t j) {
  uint64_t z = j + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  struct complex_number value = {(double)(z >> 32) / 2147483648.0 - 1.0,
                                 (double)(z & 0xffffffffu) / 2147483648.0 - 1.0};
  return value;
}

static struct complex_number multiply(struct complex_number a, struct complex_number b) {
  struct complex_number product = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  return product;
}

/* e^(-2 pi i k / n): the forward transform's roots of unity. */
static struct complex_number root(uint64_t k, uint64_t n) {
  double angle = -kTwoPi * (double)(k % n) / (double)n;
  struct complex_number w = {cos(angle), sin(angle)};
  return w;
}

/* In place, iterative radix-2 FFT of a row of length r (a power of two); roots[k] = root(k, r)
 * for k < r / 2. */
static void row_fft(struct complex_number* row, int r, const struct complex_number* roots) {
  for (int i = 1, j = 0; i < r; i++) {
    int bit = r >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      struct complex_number t = row[i];
      row[i] = row[j];
      row[j] = t;
    }
  }
  for (int length = 2; length <= r; length <<= 1) {
    int stride = r / length;
    for (int start = 0; start < r; start += length) {
      for (int k = 0; k < length / 2; k++) {
        struct complex_number even = row[start + k];
        struct complex_number odd = multiply(row[start + k + length / 2], roots[k * stride]);
        row[start + k].re = even.re + odd.re;
        row[start + k].im = even.im + odd.im;
        row[start + k + length / 2].re = even.re - odd.re;
        row[start + k + length / 2].im = even.im - odd.im;
      }
    }
  }
}

/* Rows [first, end) of the r x r matrix to, from the columns of from. */
static void transpose_rows(const struct complex_number* from, struct complex_number* to, int r,
                           int first, int end) {
  for (int i = first; i < end; i++)
    for (int j = 0; j < r; j++) to[(size_t)i * r + j] = from[(size_t)j * r + i];
}

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
  struct complex_number* roots = malloc((size_t)(r / 2 + 1) * sizeof *roots);
  if (roots == NULL) return (void*)1;
  for (int k = 0; k < r / 2; k++) roots[k] = root((uint64_t)k, (uint64_t)r);
  int first = 0;
  int end = 0;
  sample_band(r, w, run.workers, &first, &end);
  for (size_t j = (size_t)first * r; j < (size_t)end * r; j++) data[j] = input_value(j);
  lmdx_barrier("fft.step"); /* the input is complete */
  double start = sample_now();

  transpose_rows(data, scratch, r, first, end); /* scratch[j1][j2] = x[j1 + r j2] */
  for (int j1 = first; j1 < end; j1++) {
    struct complex_number* row = scratch + (size_t)j1 * r;
    row_fft(row, r, roots);
    for (int k2 = 0; k2 < r; k2++) {
      row[k2] = multiply(row[k2], root((uint64_t)j1 * (uint64_t)k2, (uint64_t)n));
    }
  }
  lmdx_barrier("fft.step"); /* every row of scratch is transformed */
  transpose_rows(scratch, data, r, first, end);
  for (int k2 = first; k2 < end; k2++) row_fft(data + (size_t)k2 * r, r, roots);
  lmdx_barrier("fft.step");                     /* data[k2][k1] = X[k2 + r k1] */
  transpose_rows(data, scratch, r, first, end); /* scratch in natural order */
  if (run.wrong_result && w == 0 && end > first) scratch[(size_t)first * r + r / 2].re += 1.0;
  lmdx_barrier("fft.step");
  if (w == 0) shared_run()->seconds = sample_now() - start;
  free(roots);
  return NULL;
}

/* The reference: a direct DFT for small n. */
static void direct_dft(const struct complex_number* x, struct complex_number* out, size_t n) {
  for (size_t k = 0; k < n; k++) {
    struct complex_number sum = {0.0, 0.0};
    for (size_t j = 0; j < n; j++) {
      struct complex_number term = multiply(x[j], root((uint64_t)j * k, n));
      sum.re += term.re;
      sum.im += term.im;
    }
    out[k] = sum;
  }
}

/* The reference for larger n: recursive radix-2 decimation in time, out of place. x has stride
 * `stride` in the full input; out receives the n outputs. */
static void recursive_fft(const struct complex_number* x, size_t stride, struct complex_number* out,
                          size_t n) {
  if (n == 1) {
    out[0] = x[0];
    return;
  }
  recursive_fft(x, 2 * stride, out, n / 2);                  /* the even points */
  recursive_fft(x + stride, 2 * stride, out + n / 2, n / 2); /* the odd points */
  for (size_t k = 0; k < n / 2; k++) {
    struct complex_number even = out[k];
    struct complex_number odd = multiply(out[k + n / 2], root(k, n));
    out[k].re = even.re + odd.re;
    out[k].im = even.im + odd.im;
    out[k + n / 2].re = even.re - odd.re;
    out[k + n / 2].im = even.im - odd.im;
  }
}

static int check(const struct complex_number* result, int log2_points) {
  size_t n = (size_t)1 << log2_points;
  struct complex_number* x = malloc(n * sizeof *x);
  struct complex_number* expected = malloc(n * sizeof *expected);
  if (x == NULL || expected == NULL) {
    fprintf(stderr, "%s: no memory for the check\n", kProgram);
    exit(1);
  }
  for (size_t j = 0; j < n; j++) x[j] = input_value(j);
  if (log2_points <= 12) {
    direct_dft(x, expected, n);
  } else {
    recursive_fft(x, 1, expected, n);
  }
  double largest = 0.0;
  for (size_t k = 0; k < n; k++) {
    double size = hypot(expected[k].re, expected[k].im);
    if (size > largest) largest = size;
  }
  double worst = 0.0;
  size_t worst_at = 0;
  for (size_t k = 0; k < n; k++) {
    double off = hypot(result[k].re - expected[k].re, result[k].im - expected[k].im);
    if (off > worst || off != off) {
      worst = off;
      worst_at = k;
    }
  }
  double relative = largest > 0 ? worst / largest : worst;
  printf("%s: largest difference from the %s %.3g of the largest output\n", kProgram,
         log2_points <= 12 ? "direct DFT" : "recursive FFT", relative);
  int status = 0;
  if (!(relative <= kTolerance)) {
    printf("%s: X[%zu] = %.17g%+.17gi, expected %.17g%+.17gi\n", kProgram, worst_at,
           result[worst_at].re, result[worst_at].im, expected[worst_at].re, expected[worst_at].im);
    status = 1;
  } else {
    printf("verified\n");
  }
  free(x);
  free(expected);
  return status;
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
  return check(result, log2_points);
}

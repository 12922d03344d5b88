#include "samples/fft/fft_kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const double kTwoPi = 6.283185307179586476925286766559;
/* Double precision FFTs of these sizes agree to about 1e-15 of the largest output. */
static const double kTolerance = 1e-9;

struct complex_number fft_input_value(uint64_t j) {
  uint64_t z = j + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  struct complex_number value = {(double)(z >> 32) / 2147483648.0 - 1.0,
                                 (double)(z & 0xffffffffu) / 2147483648.0 - 1.0};
  return value;
}

struct complex_number fft_multiply(struct complex_number a, struct complex_number b) {
  struct complex_number product = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  return product;
}

struct complex_number fft_root(uint64_t k, uint64_t n) {
  double angle = -kTwoPi * (double)(k % n) / (double)n;
  struct complex_number w = {cos(angle), sin(angle)};
  return w;
}

struct complex_number* fft_row_roots(int r) {
  struct complex_number* roots = malloc((size_t)(r / 2 + 1) * sizeof *roots);
  if (roots == NULL) return NULL;
  for (int k = 0; k < r / 2; k++) roots[k] = fft_root((uint64_t)k, (uint64_t)r);
  return roots;
}

void fft_row(struct complex_number* row, int r, const struct complex_number* roots) {
  for (int i = 1, j = 0; i < r; i++) { /* bit-reversed order */
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
        struct complex_number odd = fft_multiply(row[start + k + length / 2], roots[k * stride]);
        row[start + k].re = even.re + odd.re;
        row[start + k].im = even.im + odd.im;
        row[start + k + length / 2].re = even.re - odd.re;
        row[start + k + length / 2].im = even.im - odd.im;
      }
    }
  }
}

void fft_twiddle_row(struct complex_number* row, int j1, int r, uint64_t n) {
  for (int k2 = 0; k2 < r; k2++) {
    row[k2] = fft_multiply(row[k2], fft_root((uint64_t)j1 * (uint64_t)k2, n));
  }
}

void fft_transpose_rows(const struct complex_number* from, struct complex_number* to, int r,
                        int first, int end, int to_row0) {
  for (int i = first; i < end; i++)
    for (int j = 0; j < r; j++) to[(size_t)(i - to_row0) * r + j] = from[(size_t)j * r + i];
}

static void direct_dft(const struct complex_number* x, struct complex_number* out, size_t n) {
  for (size_t k = 0; k < n; k++) {
    struct complex_number sum = {0.0, 0.0};
    for (size_t j = 0; j < n; j++) {
      struct complex_number term = fft_multiply(x[j], fft_root((uint64_t)j * k, n));
      sum.re += term.re;
      sum.im += term.im;
    }
    out[k] = sum;
  }
}

/* Radix-2 decimation in time, out of place: x has stride `stride` in the full input. */
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
    struct complex_number odd = fft_multiply(out[k + n / 2], fft_root(k, n));
    out[k].re = even.re + odd.re;
    out[k].im = even.im + odd.im;
    out[k + n / 2].re = even.re - odd.re;
    out[k + n / 2].im = even.im - odd.im;
  }
}

int fft_check(const char* program, const struct complex_number* result, int log2_points) {
  size_t n = (size_t)1 << log2_points;
  struct complex_number* x = malloc(n * sizeof *x);
  struct complex_number* expected = malloc(n * sizeof *expected);
  if (x == NULL || expected == NULL) {
    fprintf(stderr, "%s: no memory for the check\n", program);
    exit(1);
  }
  for (size_t j = 0; j < n; j++) x[j] = fft_input_value(j);
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
    if (off > worst || off != off) { /* off != off: a NaN is the worst of all */
      worst = off;
      worst_at = k;
    }
  }
  double relative = largest > 0 ? worst / largest : worst;
  printf("%s: largest difference from the %s %.3g of the largest output\n", program,
         log2_points <= 12 ? "direct DFT" : "recursive FFT", relative);
  int status = 0;
  if (!(relative <= kTolerance)) {
    printf("%s: X[%zu] = %.17g%+.17gi, expected %.17g%+.17gi\n", program, worst_at,
           result[worst_at].re, result[worst_at].im, expected[worst_at].re, expected[worst_at].im);
    status = 1;
  } else {
    printf("verified\n");
  }
  free(x);
  free(expected);
  return status;
}

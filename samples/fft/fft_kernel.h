/* The FFT's arithmetic, shared by the three versions of the sample (shared memory, LMDX messages,
 * MPI): the input, the row transforms, the twiddles, the transpose of a band, and the check
 * against an independent computation. */
#ifndef LMDX_SAMPLES_FFT_FFT_KERNEL_H_
#define LMDX_SAMPLES_FFT_FFT_KERNEL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct complex_number {
  double re;
  double im;
};

/* Point j of the input, from a hash of j, in [-1, 1) for both parts. */
struct complex_number fft_input_value(uint64_t j);

struct complex_number fft_multiply(struct complex_number a, struct complex_number b);

/* e^(-2 pi i k / n): the forward transform's roots of unity. */
struct complex_number fft_root(uint64_t k, uint64_t n);

/* The roots a row transform of length r needs: r / 2 of them (malloc'd; NULL without memory). */
struct complex_number* fft_row_roots(int r);

/* In place, iterative radix-2 FFT of a row of length r (a power of two). */
void fft_row(struct complex_number* row, int r, const struct complex_number* roots);

/* Multiplies row j1 (k2 = 0 .. r-1) by the six-step twiddles e^(-2 pi i j1 k2 / n). */
void fft_twiddle_row(struct complex_number* row, int j1, int r, uint64_t n);

/* Rows [first, end) of the r-column matrix `to` from the columns of the r x r matrix `from`; row
 * i of `to` is at to + (i - to_row0) * r. */
void fft_transpose_rows(const struct complex_number* from, struct complex_number* to, int r,
                        int first, int end, int to_row0);

/* Compares the n = 2^log2_points outputs with a direct DFT (up to 2^12 points) or a recursive
 * FFT; prints the largest difference relative to the largest output, then `verified`, or the
 * worst element after "PROGRAM: ", and returns the exit status (0 or 1). */
int fft_check(const char* program, const struct complex_number* result, int log2_points);

#ifdef __cplusplus
}
#endif

#endif /* LMDX_SAMPLES_FFT_FFT_KERNEL_H_ */

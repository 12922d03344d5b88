/* samples/fft, message version: the same six-step transform written with explicit LMDX messages,
 * to compare with the shared-memory version (`lmdx bench protocols` runs both).
 *
 * SPMD: every rank holds its band of rows of the r x r matrix in private memory. A transpose is an
 * all-to-all exchange: rank s sends rank d the block of its rows that falls in d's columns
 * (lmdx_send_tagged), and each rank transposes the blocks it receives into its new rows. The
 * result is gathered at rank 0 and checked as the shared version's is. The time printed runs from
 * a barrier after the fill to the end of the last transpose on the slowest rank.
 *
 *   ./lmdx run bazel-bin/samples/fft/fft_msg [-n 4] [-- --log2-points K]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample.h"
#include "samples/fft/fft_kernel.h"

static const char* const kProgram = "fft_msg";

enum { kTagBlock = 1, kTagResult = 2 };

/* The rows rank q owns. */
static void band_of(int r, int q, int size, int* first, int* end) {
  sample_band(r, q, size, first, end);
}

/* band: this rank's rows [first, end) of an r-column matrix. Replaces it with its rows of the
 * transpose, exchanging blocks with every rank; block is scratch for r * (end - first) points. */
static void transpose(struct complex_number* band, struct complex_number* block, int r, int rank,
                      int size) {
  int first = 0;
  int end = 0;
  band_of(r, rank, size, &first, &end);
  int rows = end - first;
  /* Send rank d the columns [d_first, d_end) of every row of mine, as a rows x columns block. */
  for (int d = 0; d < size; d++) {
    if (d == rank) continue; /* my own block is read from band below */
    int d_first = 0;
    int d_end = 0;
    band_of(r, d, size, &d_first, &d_end);
    int columns = d_end - d_first;
    for (int i = 0; i < rows; i++) {
      memcpy(block + (size_t)i * columns, band + (size_t)i * r + d_first,
             (size_t)columns * sizeof *block);
    }
    lmdx_send_tagged(d, kTagBlock, block, (size_t)rows * columns * sizeof *block, 0);
  }
  /* Build the new rows in block-sized pieces: from each source s, its rows [s_first, s_end)
   * restricted to my columns become columns [s_first, s_end) of my new rows. */
  struct complex_number* result = malloc((size_t)rows * r * sizeof *result + 1);
  if (result == NULL) lmdx_abort(1, "fft_msg: no memory for a transpose");
  for (int s = 0; s < size; s++) {
    int s_first = 0;
    int s_end = 0;
    band_of(r, s, size, &s_first, &s_end);
    int s_rows = s_end - s_first;
    if (s == rank) {
      /* My own block: my rows, my columns, read straight from band. */
      for (int i = 0; i < s_rows; i++)
        for (int j = 0; j < rows; j++)
          result[(size_t)j * r + s_first + i] = band[(size_t)i * r + first + j];
      continue;
    }
    lmdx_recv_tagged(s, kTagBlock, block, (size_t)s_rows * rows * sizeof *block, NULL);
    for (int i = 0; i < s_rows; i++)
      for (int j = 0; j < rows; j++)
        result[(size_t)j * r + s_first + i] = block[(size_t)i * rows + j];
  }
  memcpy(band, result, (size_t)rows * r * sizeof *band);
  free(result);
}

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank();
  int size = lmdx_size();
  int log2_points = 20;
  struct sample_flag flags[] = {{"log2-points", &log2_points, 2, 26, "K: 2^K points, K even"}};
  int status = sample_parse_flags(kProgram, argc, argv, flags, 1, NULL);
  if (status >= 0 || log2_points % 2 != 0) {
    if (status != 0) lmdx_abort(2, "fft_msg: bad arguments (--log2-points must be even)");
    lmdx_finalize();
    return 0;
  }
  status = 0;
  size_t n = (size_t)1 << log2_points;
  int r = 1 << (log2_points / 2);
  if (r < size) lmdx_abort(2, "fft_msg: fewer rows than ranks");
  int first = 0;
  int end = 0;
  band_of(r, rank, size, &first, &end);
  int rows = end - first;
  int most_rows = (r + size - 1) / size;
  struct complex_number* band = malloc((size_t)rows * r * sizeof *band + 1);
  struct complex_number* block = malloc((size_t)most_rows * most_rows * sizeof *block + 1);
  struct complex_number* roots = fft_row_roots(r);
  if (band == NULL || block == NULL || roots == NULL) lmdx_abort(1, "fft_msg: no memory");
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < r; j++)
      band[(size_t)i * r + j] = fft_input_value((size_t)(first + i) * r + j);

  lmdx_barrier_all();
  double start = sample_now();
  transpose(band, block, r, rank, size); /* band[j1][j2] = x[j1 + r j2] */
  for (int j1 = first; j1 < end; j1++) {
    fft_row(band + (size_t)(j1 - first) * r, r, roots);
    fft_twiddle_row(band + (size_t)(j1 - first) * r, j1, r, n);
  }
  transpose(band, block, r, rank, size);
  for (int i = 0; i < rows; i++) fft_row(band + (size_t)i * r, r, roots);
  transpose(band, block, r, rank, size); /* natural order */
  lmdx_barrier_all();
  double seconds = sample_now() - start;

  if (rank != 0) {
    lmdx_send_tagged(0, kTagResult, band, (size_t)rows * r * sizeof *band, 0);
  } else {
    struct complex_number* result = malloc(n * sizeof *result);
    if (result == NULL) lmdx_abort(1, "fft_msg: no memory for the gathered result");
    memcpy(result, band, (size_t)rows * r * sizeof *band);
    for (int q = 1; q < size; q++) {
      int q_first = 0;
      int q_end = 0;
      band_of(r, q, size, &q_first, &q_end);
      lmdx_recv_tagged(q, kTagResult, result + (size_t)q_first * r,
                       (size_t)(q_end - q_first) * r * sizeof *result, NULL);
    }
    printf("%s: 2^%d points, %d ranks: %.3f s\n", kProgram, log2_points, size, seconds);
    status = fft_check(kProgram, result, log2_points);
    free(result);
  }
  free(band);
  free(block);
  free(roots);
  if (status != 0) lmdx_abort(status, "fft_msg: the transform differs from the reference");
  lmdx_finalize();
  return 0;
}

/* samples/matmul, message version: the same product written with explicit LMDX messages, to
 * compare with the shared-memory version (`lmdx bench protocols` runs both).
 *
 * SPMD: every rank fills its band of rows of A and B in private memory, sends its band of B to
 * every other rank and receives theirs (what the shared version's faults fetch), computes its
 * band of C, and sends it to rank 0, which checks the whole product bit for bit against the
 * sequential one. The time printed runs from a barrier after the fill to the end of the slowest
 * rank's band, as the shared version's does.
 *
 *   ./lmdx run bazel-bin/samples/matmul/matmul_msg [-n 4] [-- --size N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample.h"
#include "samples/matmul/matmul_kernel.h"

static const char* const kProgram = "matmul_msg";

enum { kTagB = 1, kTagC = 2 };

static size_t band_bytes(int n, int rank, int size, int* first) {
  int end = 0;
  sample_band(n, rank, size, first, &end);
  return (size_t)(end - *first) * n * sizeof(double);
}

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank();
  int size = lmdx_size();
  int n = 1024;
  struct sample_flag flags[] = {{"size", &n, 1, 8192, "N: the matrices are NxN doubles"}};
  int status = sample_parse_flags(kProgram, argc, argv, flags, 1, NULL);
  if (status >= 0) {
    if (status != 0) lmdx_abort(status, "bad arguments");
    lmdx_finalize();
    return 0;
  }
  status = 0;

  int first = 0;
  size_t mine = band_bytes(n, rank, size, &first);
  int rows = (int)(mine / sizeof(double) / (size_t)n);
  /* a and c hold this rank's band (local row 0 is global row first; one byte more, so that a
   * rank without rows still gets a block); b is whole. */
  double* a = malloc(mine + 1);
  double* c = malloc(mine + 1);
  double* b = malloc((size_t)n * n * sizeof(double));
  if (a == NULL || b == NULL || c == NULL) lmdx_abort(1, "matmul_msg: no memory for the matrices");
  matmul_fill_rows(a, b + (size_t)first * n, n, first, first, first + rows);

  lmdx_barrier_all();
  double start = sample_now();
  for (int r = 0; r < size; r++) {
    if (r != rank) lmdx_send_tagged(r, kTagB, b + (size_t)first * n, mine, 0);
  }
  for (int r = 0; r < size; r++) {
    int r_first = 0;
    size_t bytes = band_bytes(n, r, size, &r_first);
    if (r != rank) lmdx_recv_tagged(r, kTagB, b + (size_t)r_first * n, bytes, NULL);
  }
  matmul_multiply_rows(a, b, c, n, 0, rows);
  lmdx_barrier_all();
  double seconds = sample_now() - start;

  if (rank != 0) {
    lmdx_send_tagged(0, kTagC, c, mine, 0);
  } else {
    double* product = malloc((size_t)n * n * sizeof(double));
    if (product == NULL) lmdx_abort(1, "matmul_msg: no memory for the gathered product");
    memcpy(product, c, mine);
    for (int r = 1; r < size; r++) {
      int r_first = 0;
      size_t bytes = band_bytes(n, r, size, &r_first);
      lmdx_recv_tagged(r, kTagC, product + (size_t)r_first * n, bytes, NULL);
    }
    printf("%s: %dx%d doubles, %d ranks: %.3f s\n", kProgram, n, n, size, seconds);
    status = matmul_check(kProgram, product, n);
    free(product);
  }
  free(a);
  free(b);
  free(c);
  if (status != 0) lmdx_abort(status, "matmul_msg: the product differs from the sequential one");
  lmdx_finalize();
  return 0;
}

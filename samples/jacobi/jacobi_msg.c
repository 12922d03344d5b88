/* samples/jacobi, message version: the same relaxation written as a user of explicit messages
 * would, to compare with the shared-memory version (`lmdx bench protocols` runs both).
 *
 * SPMD: every rank owns a band of rows in private memory with one ghost row above and below. An
 * iteration sends the band's first row up and its last row down (lmdx_send_tagged), receives the
 * neighbours' rows into the ghost rows, and computes the band of the next grid. No barrier: the
 * ghost rows are the only thing a rank waits for. At the end rank 0 gathers every band and checks
 * the grid bit for bit against the same iterations run sequentially.
 *
 *   ./lmdx run bazel-bin/samples/jacobi/jacobi_msg [-n 4] [-- --size N --iterations K]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample.h"
#include "samples/jacobi/jacobi_kernel.h"

static const char* const kProgram = "jacobi_msg";

enum { kTagUp = 1, kTagDown = 2, kTagBand = 3 };

/* The band's rows of both grids with their ghost rows: local row r is global row first - 1 + r. */
struct band {
  int n;
  int first; /* global rows [first, end) are this rank's */
  int end;
  double* grids[2];
};

static double* row_of(const struct band* b, int grid, int global_row) {
  return b->grids[grid] + (size_t)(global_row - (b->first - 1)) * b->n;
}

/* Sends the band's edge rows of grid to the neighbours and receives theirs into the ghost rows. */
static void exchange(const struct band* b, int grid, int rank, int size) {
  size_t row_bytes = (size_t)b->n * sizeof(double);
  if (rank > 0) lmdx_send_tagged(rank - 1, kTagUp, row_of(b, grid, b->first), row_bytes, 0);
  if (rank < size - 1)
    lmdx_send_tagged(rank + 1, kTagDown, row_of(b, grid, b->end - 1), row_bytes, 0);
  if (rank > 0)
    lmdx_recv_tagged(rank - 1, kTagDown, row_of(b, grid, b->first - 1), row_bytes, NULL);
  if (rank < size - 1) lmdx_recv_tagged(rank + 1, kTagUp, row_of(b, grid, b->end), row_bytes, NULL);
}

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank();
  int size = lmdx_size();
  int n = 1024;
  int iterations = 100;
  struct sample_flag flags[] = {
      {"size", &n, 4, 16384, "N: the grid is NxN doubles"},
      {"iterations", &iterations, 1, 1000000, "iterations"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 2, NULL);
  if (status >= 0) {
    if (status != 0) lmdx_abort(status, "bad arguments");
    lmdx_finalize();
    return 0;
  }
  if (n < size) lmdx_abort(2, "jacobi_msg: fewer rows than ranks");
  status = 0;

  struct band b = {n, 0, 0, {NULL, NULL}};
  sample_band(n, rank, size, &b.first, &b.end);
  int local_rows = b.end - b.first + 2;
  for (int g = 0; g < 2; g++) {
    b.grids[g] = calloc((size_t)local_rows * n, sizeof(double));
    if (b.grids[g] == NULL) lmdx_abort(1, "jacobi_msg: no memory for the band");
    jacobi_fill_rows(b.grids[g], n, b.first - 1, b.first, b.end);
  }
  int first = b.first;
  int end = b.end;
  jacobi_inner_rows(n, &first, &end);

  lmdx_barrier_all();
  double start = sample_now();
  for (int k = 0; k < iterations; k++) {
    exchange(&b, k % 2, rank, size);
    /* The sweep indexes rows from the band's ghost row above. */
    jacobi_sweep(b.grids[k % 2], b.grids[(k + 1) % 2], n, first - (b.first - 1),
                 end - (b.first - 1));
  }
  double seconds = sample_now() - start;
  const double* result = row_of(&b, iterations % 2, b.first);
  size_t band_bytes = (size_t)(b.end - b.first) * n * sizeof(double);

  if (rank != 0) {
    lmdx_send_tagged(0, kTagBand, result, band_bytes, 0);
  } else {
    double* grid = malloc((size_t)n * n * sizeof(double));
    if (grid == NULL) lmdx_abort(1, "jacobi_msg: no memory for the gathered grid");
    memcpy(grid, result, band_bytes);
    for (int r = 1; r < size; r++) {
      int r_first = 0;
      int r_end = 0;
      sample_band(n, r, size, &r_first, &r_end);
      lmdx_recv_tagged(r, kTagBand, grid + (size_t)r_first * n,
                       (size_t)(r_end - r_first) * n * sizeof(double), NULL);
    }
    printf("%s: %dx%d grid, %d iterations, %d ranks: %.3f s (%.3f ms per iteration)\n", kProgram, n,
           n, iterations, size, seconds, 1e3 * seconds / iterations);
    status = jacobi_check(kProgram, grid, n, iterations);
    free(grid);
  }
  free(b.grids[0]);
  free(b.grids[1]);
  if (status != 0) lmdx_abort(status, "jacobi_msg: the result differs from the sequential run");
  lmdx_finalize();
  return 0;
}

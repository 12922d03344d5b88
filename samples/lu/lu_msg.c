/* samples/lu, message version: the same blocked LU written with explicit LMDX messages, to
 * compare with the shared-memory version (`lmdx bench protocols` runs both).
 *
 * SPMD: rank r holds its block columns (J mod N = r, the shared version's layout) in private
 * memory. Step K: the owner of column K factors it (the diagonal block and the column panel
 * below it) and sends blocks K and below, one contiguous run, to every rank that owns a column
 * after K (lmdx_send_tagged); each of those receives the run and updates its columns after K
 * with it. No barrier: the column is all a rank waits for. At the end rank 0 gathers every rank's
 * columns and checks the matrix as the shared version does. The time printed runs from a barrier
 * after the matrix is made to a barrier after the last step, as the shared version's does.
 *
 *   ./lmdx run bazel-bin/samples/lu/lu_msg [-n 4] [-- --size N --block B]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample.h"
#include "samples/lu/lu_kernel.h"

static const char* const kProgram = "lu_msg";

enum { kTagColumn = 1, kTagResult = 2 };

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank();
  int size = lmdx_size();
  int n = 1024;
  int block = 32;
  struct sample_flag flags[] = {
      {"size", &n, 2, 8192, "N: the matrix is NxN doubles"},
      {"block", &block, 1, 1024, "B: blocks are BxB doubles; N must be a multiple of B"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 2, NULL);
  if (status >= 0 || n % block != 0) {
    if (status != 0) lmdx_abort(2, "lu_msg: bad arguments (--size must be a multiple of --block)");
    lmdx_finalize();
    return 0;
  }
  status = 0;

  struct lu_layout layout = lu_layout_of(n, block, size);
  const struct lu_layout* l = &layout;
  size_t column_doubles = lu_column_doubles(l);
  size_t block_doubles = (size_t)block * block;
  /* Local column c is global column rank + c * size, as in the shared version's run of rank's
   * columns (one byte more, so that a rank without columns still gets a block). */
  size_t mine = (size_t)lu_columns_of(l, rank) * column_doubles * sizeof(double);
  double* columns = malloc(mine + 1);
  double* received = malloc(column_doubles * sizeof(double));
  if (columns == NULL || received == NULL) lmdx_abort(1, "lu_msg: no memory for the columns");
  for (int j = rank; j < l->blocks; j += size) {
    lu_fill_column(columns + (size_t)(j / size) * column_doubles, l, j);
  }

  lmdx_barrier_all();
  double start = sample_now();
  for (int k = 0; k < l->blocks; k++) {
    int owner = lu_owner(l, k);
    /* Blocks k and below of column k, where the update reads them: at their place in a column. */
    double* factored = received;
    size_t panel_bytes = (size_t)(l->blocks - k) * block_doubles * sizeof(double);
    if (owner == rank) {
      factored = columns + (size_t)(k / size) * column_doubles;
      lu_factor_column(factored, l, k);
      for (int q = 0; q < size; q++) {
        if (q != rank && lu_next_column_of(l, q, k) < l->blocks) {
          lmdx_send_tagged(q, kTagColumn, factored + (size_t)k * block_doubles, panel_bytes, 0);
        }
      }
    } else if (lu_next_column_of(l, rank, k) < l->blocks) {
      lmdx_recv_tagged(owner, kTagColumn, received + (size_t)k * block_doubles, panel_bytes, NULL);
    }
    for (int j = lu_next_column_of(l, rank, k); j < l->blocks; j += size) {
      lu_update_column(columns + (size_t)(j / size) * column_doubles, factored, l, k);
    }
  }
  lmdx_barrier_all();
  double seconds = sample_now() - start;

  if (rank != 0) {
    lmdx_send_tagged(0, kTagResult, columns, mine, 0);
  } else {
    /* Every rank's columns are one run of the whole matrix, in rank order. */
    double* matrix = malloc((size_t)n * n * sizeof *matrix);
    if (matrix == NULL) lmdx_abort(1, "lu_msg: no memory for the gathered matrix");
    memcpy(matrix, columns, mine);
    for (int q = 1; q < size; q++) {
      lmdx_recv_tagged(q, kTagResult, matrix + lu_first_slot(l, q) * column_doubles,
                       (size_t)lu_columns_of(l, q) * column_doubles * sizeof(double), NULL);
    }
    printf("%s: %dx%d doubles, %dx%d blocks, %d ranks: %.3f s\n", kProgram, n, n, block, block,
           size, seconds);
    status = lu_check(kProgram, matrix, l);
    free(matrix);
  }
  free(columns);
  free(received);
  if (status != 0) lmdx_abort(status, "lu_msg: the factors differ from an unblocked LU");
  lmdx_finalize();
  return 0;
}

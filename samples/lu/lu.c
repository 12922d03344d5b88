/* samples/lu: blocked dense LU factorisation, A = L U without pivoting, of an NxN matrix of
 * doubles, as in SPLASH-2's LU (the version with contiguous blocks).
 *
 * The matrix is diagonally dominant (lu_value), so no pivoting is needed and none is done. It is
 * one shared variable, `lu.matrix`, cut into BxB blocks, each stored contiguously. Block columns
 * are dealt to the workers cyclically (column J is worker J mod W's) and stored grouped by owner,
 * so that each worker's columns are one run of the variable: with one worker per node and the
 * columns dealt evenly, block homes put that run on the worker's own node, and a worker writes
 * only pages its node homes.
 *
 * Step K: the owner of column K factors its diagonal block and divides the blocks below it by
 * the diagonal's U (the column panel L(I, K)); everyone meets at the barrier `lu.step`; then every
 * worker turns block (K, J) of each of its columns J > K into U(K, J) and updates the blocks below
 * it, A(I, J) -= L(I, K) U(K, J). The owner of column K + 1 has updated it by then and goes on to
 * factor it, while the others finish their updates: one barrier per step. What a worker reads of
 * another's is column K, blocks K and below, written once before the barrier and only read after:
 * one writer, every worker a reader, a new column every step.
 *
 * SPLASH-2 deals blocks out in a 2-D scatter over a grid of processors, which sends each panel
 * block to fewer workers (a row or a column of the grid, not everyone). The 1-D cyclic layout of
 * block columns is used here instead: the diagonal block and its column panel have one owner,
 * so a step needs one barrier, not three; each worker's blocks are whole columns, which makes one
 * contiguous run per worker for the homes; and every step's sharing is a single pattern, one
 * column read by all, which the protocols can be compared on.
 *
 * The time printed is worker 0's, from the barrier after the matrix is made to the last one, as
 * in the message and threads versions. Main (rank 0) starts one worker per node by default, joins
 * them, then computes an unblocked LU of the same matrix in private memory and compares every
 * element within 1e-9 of the largest; it prints `verified`, or the element furthest off and exits
 * 1.
 *
 *   ./lmdx run lu [-n 4] [--protocol P] [--stats] [-- --size N --block B --workers W]
 */
#include <stdint.h>
#include <stdio.h>

#include "samples/common/sample.h"
#include "samples/lu/lu_kernel.h"

/* What main tells the workers. */
struct lu_run {
  int size;
  int block;
  int workers;
  int wrong_result;
  double seconds; /* worker 0's time for the factorisation */
};

static const char* const kProgram = "lu";

static struct lu_run* shared_run(void) {
  return sample_shared(kProgram, "lu.run", sizeof(struct lu_run));
}

static double* shared_matrix(int n) {
  return sample_shared(kProgram, "lu.matrix", (size_t)n * n * sizeof(double));
}

static void* worker(void* arg) {
  int w = (int)(intptr_t)arg;
  struct lu_run run = *shared_run();
  struct lu_layout layout = lu_layout_of(run.size, run.block, run.workers);
  const struct lu_layout* l = &layout;
  double* matrix = shared_matrix(run.size);
  /* Each worker makes its own columns: the pages are homed here, so no fault. */
  for (int j = w; j < l->blocks; j += l->workers) lu_fill_column(lu_column(matrix, l, j), l, j);
  lmdx_barrier("lu.step"); /* the matrix is made */
  double start = sample_now();
  size_t spoiled = lu_offset(l, 1, l->n / 2);
  int spoiled_owner = lu_owner(l, l->n / 2 / l->block);
  for (int k = 0; k < l->blocks; k++) {
    double* factored = lu_column(matrix, l, k);
    if (lu_owner(l, k) == w) lu_factor_column(factored, l, k);
    /* Element (1, n/2) of U is final by now: nothing after this mends it. */
    if (run.wrong_result && k == l->blocks - 1 && spoiled_owner == w) matrix[spoiled] += 1.0;
    lmdx_barrier("lu.step"); /* column k is factored */
    for (int j = lu_next_column_of(l, w, k); j < l->blocks; j += l->workers) {
      lu_update_column(lu_column(matrix, l, j), factored, l, k);
    }
  }
  /* After the last barrier: main reads it once it has joined this worker. */
  if (w == 0) shared_run()->seconds = sample_now() - start;
  return NULL;
}

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  int size = 1024;
  int block = 32;
  int workers = lmdx_size();
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"size", &size, 2, 8192, "N: the matrix is NxN doubles"},
      {"block", &block, 1, 1024, "B: blocks are BxB doubles; N must be a multiple of B"},
      {"workers", &workers, 1, 1024, "LMDX threads, placed in blocks on the nodes"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 3, &wrong_result);
  if (status >= 0) return status;
  if (size % block != 0) {
    fprintf(stderr, "%s: --size %d is not a multiple of --block %d\n", kProgram, size, block);
    return 2;
  }

  struct lu_run* run = shared_run();
  run->size = size;
  run->block = block;
  run->workers = workers;
  run->wrong_result = wrong_result;
  double* matrix = shared_matrix(size);
  lmdx_barrier_init("lu.step", workers);

  if (sample_run_workers(kProgram, worker, workers) != 0) return 1;
  printf("%s: %dx%d doubles, %dx%d blocks, %d workers on %d nodes, protocol %s: %.3f s\n", kProgram,
         size, size, block, block, workers, lmdx_size(), sample_protocol(matrix), run->seconds);
  struct lu_layout layout = lu_layout_of(size, block, workers);
  return lu_check(kProgram, matrix, &layout);
}

/* samples/jacobi, MPI version: the message version's algorithm in MPI (ghost rows exchanged with
 * MPI_Sendrecv, bands gathered at rank 0), what an MPI user would write. `lmdx bench protocols`
 * runs it with OpenMPI's mpirun beside the LMDX versions; it checks its result the same way.
 *
 *   mpirun -n 4 bazel-bin/samples/jacobi/jacobi_mpi [--size N --iterations K]
 */
#include <openmpi/mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample_flags.h"
#include "samples/jacobi/jacobi_kernel.h"

static const char* const kProgram = "jacobi_mpi";

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = 1024;
  int iterations = 100;
  struct sample_flag flags[] = {
      {"size", &n, 4, 16384, "N: the grid is NxN doubles"},
      {"iterations", &iterations, 1, 1000000, "iterations"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 2, NULL);
  if (status >= 0 || n < size) {
    MPI_Finalize();
    return status >= 0 ? status : 2;
  }

  int first = 0;
  int end = 0;
  sample_band(n, rank, size, &first, &end);
  /* Local row r is global row first - 1 + r: one ghost row above and below the band. */
  int rows = end - first + 2;
  double* grids[2];
  for (int g = 0; g < 2; g++) {
    grids[g] = calloc((size_t)rows * n, sizeof(double));
    if (grids[g] == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    jacobi_fill_rows(grids[g], n, first - 1, first, end);
  }
  int inner_first = first;
  int inner_end = end;
  jacobi_inner_rows(n, &inner_first, &inner_end);
  int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  int down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

  MPI_Barrier(MPI_COMM_WORLD);
  double start = sample_now();
  for (int k = 0; k < iterations; k++) {
    double* current = grids[k % 2];
    MPI_Sendrecv(current + (size_t)1 * n, n, MPI_DOUBLE, up, 1, current + (size_t)(rows - 1) * n, n,
                 MPI_DOUBLE, down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(current + (size_t)(rows - 2) * n, n, MPI_DOUBLE, down, 2, current, n, MPI_DOUBLE,
                 up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    jacobi_sweep(current, grids[(k + 1) % 2], n, inner_first - (first - 1),
                 inner_end - (first - 1));
  }
  double seconds = sample_now() - start;

  const double* band = grids[iterations % 2] + n;
  int* counts = malloc((size_t)size * sizeof(int));
  int* offsets = malloc((size_t)size * sizeof(int));
  for (int r = 0; r < size; r++) {
    int r_first = 0;
    int r_end = 0;
    sample_band(n, r, size, &r_first, &r_end);
    counts[r] = (r_end - r_first) * n;
    offsets[r] = r_first * n;
  }
  double* grid = rank == 0 ? malloc((size_t)n * n * sizeof(double)) : NULL;
  MPI_Gatherv(band, counts[rank], MPI_DOUBLE, grid, counts, offsets, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("%s: %dx%d grid, %d iterations, %d ranks: %.3f s (%.3f ms per iteration)\n", kProgram, n,
           n, iterations, size, seconds, 1e3 * seconds / iterations);
    status = jacobi_check(kProgram, grid, n, iterations);
  } else {
    status = 0;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(grid);
  free(counts);
  free(offsets);
  free(grids[0]);
  free(grids[1]);
  MPI_Finalize();
  return status;
}

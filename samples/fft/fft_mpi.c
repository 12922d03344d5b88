/* samples/fft, MPI version: the message version's algorithm in MPI, each transpose one
 * MPI_Alltoallv of blocks, what an MPI user would write. `lmdx bench protocols` runs it with
 * OpenMPI's mpirun beside the LMDX versions; it checks its result the same way.
 *
 *   mpirun -n 4 bazel-bin/samples/fft/fft_mpi [--log2-points K]
 */
#include <openmpi/mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample_flags.h"
#include "samples/fft/fft_kernel.h"

static const char* const kProgram = "fft_mpi";

/* Replaces this rank's rows of an r-column matrix with its rows of the transpose. counts and
 * offsets (in doubles) describe the blocks; send and receive are scratch for rows * r points. */
static void transpose(struct complex_number* band, struct complex_number* send,
                      struct complex_number* receive, int r, int rank, int size, const int* firsts,
                      int* counts, int* offsets) {
  int rows = firsts[rank + 1] - firsts[rank];
  int at = 0;
  for (int d = 0; d < size; d++) { /* to d: my rows, d's columns */
    int columns = firsts[d + 1] - firsts[d];
    for (int i = 0; i < rows; i++) {
      memcpy(send + at + (size_t)i * columns, band + (size_t)i * r + firsts[d],
             (size_t)columns * sizeof *send);
    }
    counts[d] = 2 * rows * columns;
    offsets[d] = 2 * at;
    at += rows * columns;
  }
  MPI_Alltoallv(send, counts, offsets, MPI_DOUBLE, receive, counts, offsets, MPI_DOUBLE,
                MPI_COMM_WORLD);
  /* From s came its rows x my columns; counts are symmetric because every block pairs a band with
   * a band. */
  at = 0;
  for (int s = 0; s < size; s++) {
    int s_rows = firsts[s + 1] - firsts[s];
    for (int i = 0; i < s_rows; i++)
      for (int j = 0; j < rows; j++)
        band[(size_t)j * r + firsts[s] + i] = receive[at + i * rows + j];
    at += s_rows * rows;
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int log2_points = 20;
  struct sample_flag flags[] = {{"log2-points", &log2_points, 2, 26, "K: 2^K points, K even"}};
  int status = sample_parse_flags(kProgram, argc, argv, flags, 1, NULL);
  int r = 1 << (log2_points / 2);
  if (status >= 0 || log2_points % 2 != 0 || r < size) {
    MPI_Finalize();
    return status >= 0 ? status : 2;
  }
  size_t n = (size_t)1 << log2_points;
  int* firsts = malloc((size_t)(size + 1) * sizeof *firsts);
  int* counts = malloc((size_t)size * sizeof *counts);
  int* offsets = malloc((size_t)size * sizeof *offsets);
  for (int q = 0; q <= size; q++) {
    int end = 0;
    sample_band(r, q < size ? q : size - 1, size, &firsts[q], &end);
    if (q == size) firsts[q] = end;
  }
  int first = firsts[rank];
  int rows = firsts[rank + 1] - first;
  struct complex_number* band = malloc((size_t)rows * r * sizeof *band + 1);
  struct complex_number* send = malloc((size_t)rows * r * sizeof *send + 1);
  struct complex_number* receive = malloc((size_t)rows * r * sizeof *receive + 1);
  struct complex_number* roots = fft_row_roots(r);
  if (band == NULL || send == NULL || receive == NULL || roots == NULL) {
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < r; j++)
      band[(size_t)i * r + j] = fft_input_value((size_t)(first + i) * r + j);

  MPI_Barrier(MPI_COMM_WORLD);
  double start = sample_now();
  transpose(band, send, receive, r, rank, size, firsts, counts, offsets);
  for (int j1 = first; j1 < first + rows; j1++) {
    fft_row(band + (size_t)(j1 - first) * r, r, roots);
    fft_twiddle_row(band + (size_t)(j1 - first) * r, j1, r, n);
  }
  transpose(band, send, receive, r, rank, size, firsts, counts, offsets);
  for (int i = 0; i < rows; i++) fft_row(band + (size_t)i * r, r, roots);
  transpose(band, send, receive, r, rank, size, firsts, counts, offsets);
  MPI_Barrier(MPI_COMM_WORLD);
  double seconds = sample_now() - start;

  struct complex_number* result = rank == 0 ? malloc(n * sizeof *result) : NULL;
  for (int q = 0; q < size; q++) {
    counts[q] = 2 * (firsts[q + 1] - firsts[q]) * r;
    offsets[q] = 2 * firsts[q] * r;
  }
  MPI_Gatherv(band, 2 * rows * r, MPI_DOUBLE, result, counts, offsets, MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  if (rank == 0) {
    printf("%s: 2^%d points, %d ranks: %.3f s\n", kProgram, log2_points, size, seconds);
    status = fft_check(kProgram, result, log2_points);
  } else {
    status = 0;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(result);
  free(band);
  free(send);
  free(receive);
  free(roots);
  free(firsts);
  free(counts);
  free(offsets);
  MPI_Finalize();
  return status;
}

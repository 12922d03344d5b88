/* samples/matmul: dense matrix multiply C = A x B of NxN doubles, rows of C split across workers.
 *
 * A, B and C are shared variables (`matmul.a`, `matmul.b`, `matmul.c`, block homes: each node
 * homes one band of rows of each). Worker w fills its band of rows of A and B, waits at the
 * barrier `matmul.step` for every worker, then computes its band of rows of C, which needs its own
 * rows of A and the whole of B: B is what the protocols move, once per node, since nobody writes
 * it again. The time printed is the product's: worker 0's, from the barrier after the fill to a
 * barrier after the product, as in the message version. Main (rank 0) starts one worker per node by
 * default, joins them, then multiplies the same matrices sequentially in private memory, in the
 * same order of operations, and compares every element bit for bit. It prints `verified`, or the
 * first element that differs and exits 1.
 *
 *   ./lmdx run matmul [-n 4] [--protocol P] [--stats] [-- --size N --workers W]
 */
#include <stdint.h>
#include <stdio.h>

#include "samples/common/sample.h"
#include "samples/matmul/matmul_kernel.h"

/* What main tells the workers. */
struct matmul_run {
  int size;
  int workers;
  int wrong_result;
  double seconds; /* worker 0's time from the barrier after the fill to the one after the product */
};

static const char* const kProgram = "matmul";

static struct matmul_run* shared_run(void) {
  return sample_shared(kProgram, "matmul.run", sizeof(struct matmul_run));
}

static double* shared_matrix(const char* name, int n) {
  return sample_shared(kProgram, name, (size_t)n * n * sizeof(double));
}

static void* worker(void* arg) {
  int w = (int)(intptr_t)arg;
  struct matmul_run run = *shared_run();
  int n = run.size;
  double* a = shared_matrix("matmul.a", n);
  double* b = shared_matrix("matmul.b", n);
  double* c = shared_matrix("matmul.c", n);
  int first = 0;
  int end = 0;
  sample_band(n, w, run.workers, &first, &end);
  matmul_fill_rows(a, b, n, 0, first, end);
  lmdx_barrier("matmul.step"); /* every band of A and B is written */
  double start = sample_now();
  matmul_multiply_rows(a, b, c, n, first, end);
  if (run.wrong_result && w == 0 && end > first) c[(size_t)first * n + n / 2] += 1.0;
  lmdx_barrier("matmul.step"); /* every band of C is written */
  if (w == 0) shared_run()->seconds = sample_now() - start;
  return NULL;
}

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  int size = 1024;
  int workers = lmdx_size();
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"size", &size, 1, 8192, "N: the matrices are NxN doubles"},
      {"workers", &workers, 1, 1024, "LMDX threads, placed in blocks on the nodes"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 2, &wrong_result);
  if (status >= 0) return status;

  struct matmul_run* run = shared_run();
  run->size = size;
  run->workers = workers;
  run->wrong_result = wrong_result;
  double* c = shared_matrix("matmul.c", size);
  lmdx_barrier_init("matmul.step", workers);

  if (sample_run_workers(kProgram, worker, workers) != 0) return 1;
  double seconds = run->seconds;
  printf("%s: %dx%d doubles, %d workers on %d nodes, protocol %s: %.3f s\n", kProgram, size, size,
         workers, lmdx_size(), sample_protocol(c), seconds);
  return matmul_check(kProgram, c, size);
}

/* samples/matmul: dense matrix multiply C = A x B of NxN doubles, rows of C split across workers.
 *
 * A, B and C are shared variables (`matmul.a`, `matmul.b`, `matmul.c`, block homes: each node
 * homes one band of rows of each). Worker w fills its band of rows of A and B, waits at the
 * barrier `matmul.step` for every worker, then computes its band of rows of C, which needs its own
 * rows of A and the whole of B: B is what the protocols move, once per node, since nobody writes
 * it again. Main (rank 0) starts one worker per node by default, joins them, then multiplies the
 * same matrices sequentially in private memory, in the same order of operations, and compares
 * every element bit for bit. It prints `verified`, or the first element that differs and exits 1.
 *
 *   ./lmdx run matmul [-n 4] [--protocol P] [--stats] [-- --size N --workers W]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "samples/common/sample.h"

/* What main tells the workers. */
struct matmul_run {
  int size;
  int workers;
  int wrong_result;
};

static const char* const kProgram = "matmul";

/* Small integers over a power of two: exact in a double, so only the order of the sums could
 * change a result, and both computations keep it. */
static double a_value(int i, int j) { return (double)((i * 7 + j * 3) % 17 - 8) / 16.0; }
static double b_value(int i, int j) { return (double)((i * 5 + j * 11) % 13 - 6) / 8.0; }

static void fill_rows(double* a, double* b, int n, int first, int end) {
  for (int i = first; i < end; i++) {
    for (int j = 0; j < n; j++) {
      a[(size_t)i * n + j] = a_value(i, j);
      b[(size_t)i * n + j] = b_value(i, j);
    }
  }
}

/* Rows [first, end) of c = a x b, in i-k-j order: the inner loop runs along rows of b and c. */
static void multiply_rows(const double* a, const double* b, double* c, int n, int first, int end) {
  for (int i = first; i < end; i++) {
    double* c_row = c + (size_t)i * n;
    for (int j = 0; j < n; j++) c_row[j] = 0.0;
    for (int k = 0; k < n; k++) {
      double a_ik = a[(size_t)i * n + k];
      const double* b_row = b + (size_t)k * n;
      for (int j = 0; j < n; j++) c_row[j] += a_ik * b_row[j];
    }
  }
}

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
  fill_rows(a, b, n, first, end);
  lmdx_barrier("matmul.step"); /* every band of A and B is written */
  multiply_rows(a, b, c, n, first, end);
  if (run.wrong_result && w == 0 && end > first) c[(size_t)first * n + n / 2] += 1.0;
  return NULL;
}

static int check(const double* c, int n) {
  double* a = malloc((size_t)n * n * sizeof(double));
  double* b = malloc((size_t)n * n * sizeof(double));
  double* expected = malloc((size_t)n * n * sizeof(double));
  if (a == NULL || b == NULL || expected == NULL) {
    fprintf(stderr, "%s: no memory for the sequential check\n", kProgram);
    exit(1);
  }
  fill_rows(a, b, n, 0, n);
  multiply_rows(a, b, expected, n, 0, n);
  int status = 0;
  for (size_t at = 0; at < (size_t)n * n; at++) {
    if (c[at] != expected[at]) {
      printf("%s: C[%zu][%zu] = %.17g, expected %.17g\n", kProgram, at / n, at % n, c[at],
             expected[at]);
      status = 1;
      break;
    }
  }
  free(a);
  free(b);
  free(expected);
  if (status == 0) printf("verified\n");
  return status;
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

  double start = sample_now();
  if (sample_run_workers(kProgram, worker, workers) != 0) return 1;
  double seconds = sample_now() - start;
  printf("%s: %dx%d doubles, %d workers on %d nodes, protocol %s: %.3f s\n", kProgram, size, size,
         workers, lmdx_size(), sample_protocol(c), seconds);
  return check(c, size);
}

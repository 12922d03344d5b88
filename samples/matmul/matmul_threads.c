/* samples/matmul, plain-threads version: the same product on POSIX threads over private memory
 * (malloc), with no LMDX at all, the reference `lmdx bench protocols` shows beside the shared
 * version: there every node fetches B once; here every thread reads it where it lies.
 *
 * Worker w fills its band of rows of A and B, waits at a pthread barrier, computes its band of C
 * and waits again; the time printed is worker 0's between those two barriers, the span the shared
 * version times. The check is the shared version's: every element, bit for bit, against the same
 * product computed sequentially.
 *
 *   bazel-bin/samples/matmul/matmul_threads [--size N --workers W]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "samples/common/sample_threads.h"
#include "samples/matmul/matmul_kernel.h"

static const char* const kProgram = "matmul_threads";

/* What main tells the workers; written before they start, only read after. */
static struct {
  int size;
  int workers;
  int wrong_result;
  double* a;
  double* b;
  double* c;
  pthread_barrier_t step;
  double seconds; /* worker 0's time for the product */
} run;

static void* worker(void* arg) {
  int w = (int)(intptr_t)arg;
  int n = run.size;
  int first = 0;
  int end = 0;
  sample_band(n, w, run.workers, &first, &end);
  matmul_fill_rows(run.a, run.b, n, 0, first, end);
  pthread_barrier_wait(&run.step); /* every band of A and B is written */
  double start = sample_now();
  matmul_multiply_rows(run.a, run.b, run.c, n, first, end);
  if (run.wrong_result && w == 0 && end > first) run.c[(size_t)first * n + n / 2] += 1.0;
  pthread_barrier_wait(&run.step); /* every band of C is written */
  if (w == 0) run.seconds = sample_now() - start;
  return NULL;
}

int main(int argc, char** argv) {
  int size = 1024;
  int workers = 1;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"size", &size, 1, 8192, "N: the matrices are NxN doubles"},
      {"workers", &workers, 1, 1024, "POSIX threads"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 2, &wrong_result);
  if (status >= 0) return status;

  size_t bytes = (size_t)size * size * sizeof(double);
  run.size = size;
  run.workers = workers;
  run.wrong_result = wrong_result;
  run.a = malloc(bytes);
  run.b = malloc(bytes);
  run.c = malloc(bytes);
  if (run.a == NULL || run.b == NULL || run.c == NULL) {
    fprintf(stderr, "%s: no memory for the matrices\n", kProgram);
    return 1;
  }
  pthread_barrier_init(&run.step, NULL, (unsigned)workers);
  if (sample_run_threads(kProgram, worker, workers) != 0) return 1;
  printf("%s: %dx%d doubles, %d threads: %.3f s\n", kProgram, size, size, workers, run.seconds);
  status = matmul_check(kProgram, run.c, size);
  pthread_barrier_destroy(&run.step);
  free(run.a);
  free(run.b);
  free(run.c);
  return status;
}

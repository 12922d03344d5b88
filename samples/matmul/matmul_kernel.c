#include "samples/matmul/matmul_kernel.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* Small integers over a power of two: exact in a double, so only the order of the sums could
 * change a result, and every version keeps it. */
static double a_value(int i, int j) { return (double)((i * 7 + j * 3) % 17 - 8) / 16.0; }
static double b_value(int i, int j) { return (double)((i * 5 + j * 11) % 13 - 6) / 8.0; }

void matmul_fill_rows(double* a, double* b, int n, int row0, int first, int end) {
  for (int i = first; i < end; i++) {
    for (int j = 0; j < n; j++) {
      a[(size_t)(i - row0) * n + j] = a_value(i, j);
      b[(size_t)(i - row0) * n + j] = b_value(i, j);
    }
  }
}

/* In i-k-j order: the inner loop runs along rows of b and c. */
void matmul_multiply_rows(const double* a, const double* b, double* c, int n, int first, int end) {
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

int matmul_check(const char* program, const double* c, int n) {
  double* a = malloc((size_t)n * n * sizeof(double));
  double* b = malloc((size_t)n * n * sizeof(double));
  double* expected = malloc((size_t)n * n * sizeof(double));
  if (a == NULL || b == NULL || expected == NULL) {
    fprintf(stderr, "%s: no memory for the sequential check\n", program);
    exit(1);
  }
  matmul_fill_rows(a, b, n, 0, 0, n);
  matmul_multiply_rows(a, b, expected, n, 0, n);
  int status = 0;
  for (size_t at = 0; at < (size_t)n * n; at++) {
    if (c[at] != expected[at]) {
      printf("%s: C[%zu][%zu] = %.17g, expected %.17g\n", program, at / n, at % n, c[at],
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

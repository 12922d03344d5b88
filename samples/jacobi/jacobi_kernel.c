#include "samples/jacobi/jacobi_kernel.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

double jacobi_initial_value(int i, int j) {
  if (i == 0) return 100.0;
  if (j == 0) return 50.0;
  return 0.0;
}

void jacobi_fill_rows(double* grid, int n, int row0, int first, int end) {
  for (int i = first; i < end; i++)
    for (int j = 0; j < n; j++) grid[(size_t)(i - row0) * n + j] = jacobi_initial_value(i, j);
}

void jacobi_sweep(const double* current, double* next, int n, int first, int end) {
  for (int i = first; i < end; i++) {
    const double* up = current + (size_t)(i - 1) * n;
    const double* row = current + (size_t)i * n;
    const double* down = current + (size_t)(i + 1) * n;
    double* out = next + (size_t)i * n;
    for (int j = 1; j < n - 1; j++) out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
  }
}

void jacobi_inner_rows(int n, int* first, int* end) {
  if (*first < 1) *first = 1;
  if (*end > n - 1) *end = n - 1;
}

int jacobi_check(const char* program, const double* result, int n, int iterations) {
  double* grids[2] = {malloc((size_t)n * n * sizeof(double)),
                      malloc((size_t)n * n * sizeof(double))};
  if (grids[0] == NULL || grids[1] == NULL) {
    fprintf(stderr, "%s: no memory for the sequential check\n", program);
    exit(1);
  }
  jacobi_fill_rows(grids[0], n, 0, 0, n);
  jacobi_fill_rows(grids[1], n, 0, 0, n);
  for (int k = 0; k < iterations; k++) jacobi_sweep(grids[k % 2], grids[(k + 1) % 2], n, 1, n - 1);
  const double* expected = grids[iterations % 2];
  int status = 0;
  for (size_t at = 0; at < (size_t)n * n; at++) {
    if (result[at] != expected[at]) {
      printf("%s: grid[%zu][%zu] = %.17g, expected %.17g\n", program, at / n, at % n, result[at],
             expected[at]);
      status = 1;
      break;
    }
  }
  free(grids[0]);
  free(grids[1]);
  if (status == 0) printf("verified\n");
  return status;
}

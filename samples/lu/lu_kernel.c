#include "samples/lu/lu_kernel.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Far above what contracted multiply-adds could change on these diagonally dominant matrices
 * (about 1e-15 of the largest element), far below a spoiled element (1 in about n). */
static const double kTolerance = 1e-9;

struct lu_layout lu_layout_of(int n, int block, int workers) {
  struct lu_layout l = {n, block, n / block, workers};
  return l;
}

int lu_owner(const struct lu_layout* l, int column) { return column % l->workers; }

int lu_columns_of(const struct lu_layout* l, int w) {
  return l->blocks / l->workers + (w < l->blocks % l->workers ? 1 : 0);
}

size_t lu_first_slot(const struct lu_layout* l, int w) {
  int extra = l->blocks % l->workers;
  return (size_t)w * (size_t)(l->blocks / l->workers) + (size_t)(w < extra ? w : extra);
}

size_t lu_column_doubles(const struct lu_layout* l) {
  return (size_t)l->blocks * l->block * l->block;
}

static size_t column_offset(const struct lu_layout* l, int column) {
  return (lu_first_slot(l, lu_owner(l, column)) + (size_t)(column / l->workers)) *
         lu_column_doubles(l);
}

double* lu_column(double* matrix, const struct lu_layout* l, int column) {
  return matrix + column_offset(l, column);
}

int lu_next_column_of(const struct lu_layout* l, int w, int k) {
  return k + 1 + (w - (k + 1) % l->workers + l->workers) % l->workers;
}

double lu_value(int i, int j, int n) {
  if (i == j) return (double)n;
  uint64_t z = ((uint64_t)(uint32_t)i << 32 | (uint32_t)j) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 32) / 2147483648.0 - 1.0;
}

void lu_fill_column(double* column, const struct lu_layout* l, int column_index) {
  int b = l->block;
  for (int bi = 0; bi < l->blocks; bi++) {
    double* block = column + (size_t)bi * b * b;
    for (int i = 0; i < b; i++)
      for (int j = 0; j < b; j++)
        block[i * b + j] = lu_value(bi * b + i, column_index * b + j, l->n);
  }
}

/* d = L U in place, L unit lower, U upper. */
static void factor_block(double* d, int b) {
  for (int k = 0; k < b; k++) {
    double pivot = d[k * b + k];
    for (int i = k + 1; i < b; i++) {
      double l_ik = d[i * b + k] /= pivot;
      for (int j = k + 1; j < b; j++) d[i * b + j] -= l_ik * d[k * b + j];
    }
  }
}

/* x = x U^-1, U the upper triangle of d: a block of the column panel. Row by row, so that the
 * inner loops run along rows. */
static void solve_upper(const double* d, double* x, int b) {
  for (int r = 0; r < b; r++) {
    double* row = x + r * b;
    for (int k = 0; k < b; k++) {
      double x_rk = row[k] /= d[k * b + k];
      for (int j = k + 1; j < b; j++) row[j] -= x_rk * d[k * b + j];
    }
  }
}

/* x = L^-1 x, L the unit lower triangle of d: a block of the row panel. */
static void solve_lower(const double* d, double* x, int b) {
  for (int i = 1; i < b; i++) {
    for (int k = 0; k < i; k++) {
      double l_ik = d[i * b + k];
      for (int j = 0; j < b; j++) x[i * b + j] -= l_ik * x[k * b + j];
    }
  }
}

/* c -= a u, in i-k-j order: the inner loop runs along rows of u and c. */
static void update_block(double* c, const double* a, const double* u, int b) {
  for (int i = 0; i < b; i++) {
    for (int k = 0; k < b; k++) {
      double a_ik = a[i * b + k];
      for (int j = 0; j < b; j++) c[i * b + j] -= a_ik * u[k * b + j];
    }
  }
}

/* The two step functions hold every loop of the factorisation (the block operations are inlined
 * into them), and at the default block size their inner loops run 32 times or fewer, so where
 * their code falls relative to 64-byte boundaries decides their speed here: lu_threads ran in
 * 0.16-0.19 s on one thread with lu_update_column at a multiple of 64 and in 0.25-0.30 s with it
 * 32 bytes past one, the same machine code in both. Each version links its own copy at its own
 * address; aligning them to 64 gives all three the same placement, so that they compare on what
 * they do, not on where the linker put it. */
#define LU_STEP_CODE __attribute__((aligned(64)))

LU_STEP_CODE void lu_factor_column(double* column, const struct lu_layout* l, int k) {
  size_t block_doubles = (size_t)l->block * l->block;
  double* diagonal = column + (size_t)k * block_doubles;
  factor_block(diagonal, l->block);
  for (int i = k + 1; i < l->blocks; i++)
    solve_upper(diagonal, column + i * block_doubles, l->block);
}

LU_STEP_CODE void lu_update_column(double* column, const double* factored,
                                   const struct lu_layout* l, int k) {
  size_t block_doubles = (size_t)l->block * l->block;
  double* u = column + (size_t)k * block_doubles;
  solve_lower(factored + (size_t)k * block_doubles, u, l->block);
  for (int i = k + 1; i < l->blocks; i++) {
    update_block(column + i * block_doubles, factored + i * block_doubles, u, l->block);
  }
}

size_t lu_offset(const struct lu_layout* l, int i, int j) {
  int b = l->block;
  return column_offset(l, j / b) + (size_t)(i / b) * b * b + (size_t)(i % b) * b + (size_t)(j % b);
}

/* The textbook right-looking LU, a row at a time, written apart from the block operations so that
 * a mistake in them shows. Every element gets the same subtractions in the same order (k rising)
 * as in the blocked factorisation, so the two agree to the bit with this build's flags; the check
 * keeps a tolerance for a build that contracts them into fused multiply-adds in one and not in the
 * other. */
static void unblocked_lu(double* a, int n) {
  for (int k = 0; k < n; k++) {
    const double* pivot_row = a + (size_t)k * n;
    for (int i = k + 1; i < n; i++) {
      double* row = a + (size_t)i * n;
      double l_ik = row[k] /= pivot_row[k];
      for (int j = k + 1; j < n; j++) row[j] -= l_ik * pivot_row[j];
    }
  }
}

int lu_check(const char* program, const double* matrix, const struct lu_layout* l) {
  int n = l->n;
  double* expected = malloc((size_t)n * n * sizeof *expected);
  if (expected == NULL) {
    fprintf(stderr, "%s: no memory for the check\n", program);
    exit(1);
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) expected[(size_t)i * n + j] = lu_value(i, j, n);
  unblocked_lu(expected, n);
  double largest = 0.0;
  for (size_t at = 0; at < (size_t)n * n; at++) {
    if (fabs(expected[at]) > largest) largest = fabs(expected[at]);
  }
  double worst = 0.0;
  int worst_i = 0;
  int worst_j = 0;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      double off = fabs(matrix[lu_offset(l, i, j)] - expected[(size_t)i * n + j]);
      if (off > worst || off != off) { /* off != off: a NaN is the worst of all */
        worst = off;
        worst_i = i;
        worst_j = j;
      }
    }
  }
  double relative = largest > 0 ? worst / largest : worst;
  printf("%s: largest difference from an unblocked LU %.3g of the largest element\n", program,
         relative);
  int status = 0;
  if (!(relative <= kTolerance)) {
    printf("%s: LU[%d][%d] = %.17g, expected %.17g\n", program, worst_i, worst_j,
           matrix[lu_offset(l, worst_i, worst_j)], expected[(size_t)worst_i * n + worst_j]);
    status = 1;
  } else {
    printf("verified\n");
  }
  free(expected);
  return status;
}

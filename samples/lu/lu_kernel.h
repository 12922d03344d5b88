/* The blocked LU factorisation itself, shared by the three versions of the sample (shared memory,
 * LMDX messages, POSIX threads): the matrix, where its blocks lie, the block operations a step is
 * made of, and the check against an unblocked LU computed sequentially.
 *
 * The n x n matrix is cut into blocks of b x b doubles, each stored contiguously in row order.
 * Block column J belongs to worker J mod W (a 1-D cyclic layout), and a column's blocks are
 * contiguous, from block row 0 down. The columns are stored grouped by owner: worker 0's columns
 * in order, then worker 1's, and so on, so that each worker's columns are one run of the matrix.
 * With one worker per node and the matrix a block-homed LMDX variable, that run is the part of it
 * the worker's node homes. */
#ifndef LMDX_SAMPLES_LU_LU_KERNEL_H_
#define LMDX_SAMPLES_LU_LU_KERNEL_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lu_layout {
  int n;       /* the matrix is n x n doubles */
  int block;   /* blocks are block x block doubles; n is a multiple of it */
  int blocks;  /* n / block: blocks per row and per column */
  int workers; /* column J belongs to worker J mod workers */
};

struct lu_layout lu_layout_of(int n, int block, int workers);

/* The worker that owns block column J. */
int lu_owner(const struct lu_layout* l, int column);

/* How many block columns worker w owns. */
int lu_columns_of(const struct lu_layout* l, int w);

/* How many columns lie before worker w's in the matrix (its first column's position). */
size_t lu_first_slot(const struct lu_layout* l, int w);

/* Doubles in one block column: blocks x block x block. */
size_t lu_column_doubles(const struct lu_layout* l);

/* Block column J of the whole matrix. */
double* lu_column(double* matrix, const struct lu_layout* l, int column);

/* Worker w's first column after column K, the first that step K updates; blocks or more when
 * it owns none. Its next ones follow every `workers` columns. */
int lu_next_column_of(const struct lu_layout* l, int w, int k);

/* Element (i, j) of the matrix to factor: diagonally dominant (the diagonal is n, every other
 * element is in [-1, 1)), so that LU without pivoting is stable. */
double lu_value(int i, int j, int n);

/* Fills block column J with the matrix's elements. */
void lu_fill_column(double* column, const struct lu_layout* l, int column_index);

/* Step K on its own column: factors the diagonal block (K, K) in place into unit lower L and
 * upper U, then turns every block (I, K) below it into L(I, K) = A(I, K) U(K, K)^-1. */
void lu_factor_column(double* column, const struct lu_layout* l, int k);

/* Step K on a later column J, given column K as factored by lu_factor_column (only its blocks K
 * and below are read): turns block (K, J) into U(K, J) = L(K, K)^-1 A(K, J), then updates every
 * block below it, A(I, J) -= L(I, K) U(K, J). */
void lu_update_column(double* column, const double* factored, const struct lu_layout* l, int k);

/* Where element (i, j) lies in a matrix in this layout, in doubles from its start. */
size_t lu_offset(const struct lu_layout* l, int i, int j);

/* Compares the factored matrix (L below the diagonal, U on and above it) with an unblocked LU of
 * the same matrix computed sequentially, element by element, within 1e-9 of the largest; prints
 * the largest difference, then `verified`, or the element furthest off after "PROGRAM: ", and
 * returns the exit status (0 or 1). */
int lu_check(const char* program, const double* matrix, const struct lu_layout* l);

#ifdef __cplusplus
}
#endif

#endif /* LMDX_SAMPLES_LU_LU_KERNEL_H_ */

/* The Jacobi computation itself, shared by the three versions of the sample (shared memory,
 * LMDX messages, MPI), so that all three do the same floating-point operations in the same order
 * and each is checked bit for bit against the same sequential run. */
#ifndef LMDX_SAMPLES_JACOBI_JACOBI_KERNEL_H_
#define LMDX_SAMPLES_JACOBI_JACOBI_KERNEL_H_

#ifdef __cplusplus
extern "C" {
#endif

/* The value of point (i, j) before the first iteration: a hot top edge, a warm left edge, the
 * rest cold. */
double jacobi_initial_value(int i, int j);

/* Fills rows [first, end) of an n-column grid whose row 0 is global row `row0`. */
void jacobi_fill_rows(double* grid, int n, int row0, int first, int end);

/* Rows [first, end) of next from current (both n columns wide, indexed alike); the caller keeps
 * first and end off the grid's fixed border (jacobi_inner_rows). */
void jacobi_sweep(const double* current, double* next, int n, int first, int end);

/* Clamps global rows [*first, *end) to the rows an iteration changes: not row 0 nor row n - 1. */
void jacobi_inner_rows(int n, int* first, int* end);

/* Compares an NxN result with the same iterations run sequentially; prints `verified`, or the
 * first element that differs after "PROGRAM: ", and returns the exit status (0 or 1). */
int jacobi_check(const char* program, const double* result, int n, int iterations);

#ifdef __cplusplus
}
#endif

#endif /* LMDX_SAMPLES_JACOBI_JACOBI_KERNEL_H_ */

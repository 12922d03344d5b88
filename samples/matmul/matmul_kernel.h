/* The multiplication itself, shared by the shared-memory and message versions of the sample, so
 * that both do the same operations in the same order and are checked bit for bit against the same
 * sequential run. */
#ifndef LMDX_SAMPLES_MATMUL_MATMUL_KERNEL_H_
#define LMDX_SAMPLES_MATMUL_MATMUL_KERNEL_H_

#ifdef __cplusplus
extern "C" {
#endif

/* Fills global rows [first, end) of NxN matrices a and b, whose row 0 is global row `row0`. */
void matmul_fill_rows(double* a, double* b, int n, int row0, int first, int end);

/* Local rows [first, end) of c = a x b (b whole, a and c indexed alike). */
void matmul_multiply_rows(const double* a, const double* b, double* c, int n, int first, int end);

/* Compares an NxN product with the sequential one; prints `verified`, or the first element that
 * differs after "PROGRAM: ", and returns the exit status (0 or 1). */
int matmul_check(const char* program, const double* c, int n);

#ifdef __cplusplus
}
#endif

#endif /* LMDX_SAMPLES_MATMUL_MATMUL_KERNEL_H_ */

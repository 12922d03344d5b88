/* Built outside Bazel against an installed LMDX: every rank adds its rank into a shared counter
 * under a lock; rank 0 checks the sum against the formula. */
#include <lmdx/lmdx.h>
#include <stdio.h>

int main(int argc, char **argv) {
  lmdx_init_spmd(&argc, &argv);
  long *sum = lmdx_shared_var("sum", sizeof *sum);
  for (int round = 0; round < 100; ++round) {
    lmdx_lock("sum");
    *sum += lmdx_rank();
    lmdx_unlock("sum");
  }
  lmdx_barrier_all();
  int size = lmdx_size();
  if (lmdx_rank() == 0) {
    long expected = 100L * size * (size - 1) / 2;
    printf("%s: sum %ld over %d ranks\n", *sum == expected ? "verified" : "WRONG", *sum, size);
  }
  lmdx_finalize();
  return 0;
}

/* Test node: an LMDX program whose rank LATE_RANK waits DELAY_MS before lmdx_init, as a node
 * stuck in its own start-up would. Every rank then meets at a barrier and rank 0 prints "joined".
 *
 * Usage: late_join LATE_RANK DELAY_MS */
#include <lmdx/lmdx.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) return 99;
  const char* rank = getenv("LMDX_RANK");
  if (rank != NULL && atoi(rank) == atoi(argv[1])) usleep((useconds_t)atoi(argv[2]) * 1000u);
  lmdx_init_spmd(&argc, &argv);
  lmdx_barrier_all();
  if (lmdx_rank() == 0) printf("joined\n");
  lmdx_finalize();
  return 0;
}

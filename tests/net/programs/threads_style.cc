// Threads style: only rank 0 runs main; the job ends with main's status, given as argv[1].
#include <lmdx/lmdx.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  std::printf("main runs on rank %d of %d\n", lmdx_rank(), lmdx_size());
  // Rank 0 may still talk to itself while the other ranks serve.
  int value = 42;
  int echoed = 0;
  lmdx_send(0, &value, sizeof value);
  lmdx_recv(0, &echoed, sizeof echoed, nullptr);
  if (echoed != value) return 99;
  return argc > 1 ? std::atoi(argv[1]) : 0;
}

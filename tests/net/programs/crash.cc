// The rank named by argv[1] crashes with SIGSEGV while every other rank waits for a message that
// never comes. The job must end, naming that rank, within seconds.
#include <lmdx/lmdx.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  int victim = argc > 1 ? std::atoi(argv[1]) : 1;
  std::printf("rank %d ready\n", lmdx_rank());
  std::fflush(stdout);
  if (lmdx_rank() == victim) {
    ::usleep(300 * 1000);
    ::raise(SIGSEGV);
  }
  char byte;
  lmdx_recv(LMDX_ANY_SOURCE, &byte, 1, nullptr);
  std::printf("rank %d: a message arrived that nobody sent\n", lmdx_rank());
  return 1;
}

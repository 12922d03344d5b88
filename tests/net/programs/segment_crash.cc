// Every rank exchanges a message with every other (so each pair shares a segment), says so, and
// then the victim rank dies by SIGSEGV while the others wait for a message that never comes.
#include <lmdx/lmdx.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  int victim = argc > 1 ? std::atoi(argv[1]) : 1;
  std::vector<char> bytes(4096, 'x');
  for (int peer = 0; peer < lmdx_size(); ++peer) {
    if (peer != lmdx_rank()) lmdx_send(peer, bytes.data(), bytes.size());
  }
  for (int peer = 0; peer < lmdx_size(); ++peer) {
    if (peer != lmdx_rank()) lmdx_recv(peer, bytes.data(), bytes.size(), nullptr);
  }
  std::printf("rank %d connected\n", lmdx_rank());
  std::fflush(stdout);
  if (lmdx_rank() == victim) {
    ::usleep(300 * 1000);
    ::raise(SIGSEGV);
  }
  char byte;
  lmdx_recv(LMDX_ANY_SOURCE, &byte, 1, nullptr);
  return 1;
}

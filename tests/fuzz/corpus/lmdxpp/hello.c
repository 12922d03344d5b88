/* Every rank says hello; every other rank sends rank 0 a message, and rank 0 counts them. */
#include <lmdx/lmdx.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank();
  int size = lmdx_size();
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  printf("hello from rank %d of %d (host %s, pid %d)\n", rank, size, host, (int)getpid());
  fflush(stdout);

  if (rank != 0) {
    char greeting[64];
    snprintf(greeting, sizeof greeting, "greetings from rank %d", rank);
    lmdx_send(0, greeting, strlen(greeting) + 1);
  } else {
    int received = 0;
    for (int i = 1; i < size; ++i) {
      char greeting[64];
      lmdx_status status;
      lmdx_recv(LMDX_ANY_SOURCE, greeting, sizeof greeting, &status);
      char expected[64];
      snprintf(expected, sizeof expected, "greetings from rank %d", status.source);
      if (strcmp(greeting, expected) == 0) ++received;
    }
    printf("rank 0 received %d of %d messages\n", received, size - 1);
  }
  lmdx_finalize();
  return 0;
}

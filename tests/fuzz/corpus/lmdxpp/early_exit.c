/* A main that ends the job at once, while the other nodes may still be creating the shared
 * variables: the job must end with main's status and nothing else. */
#include <stdio.h>

LMDX_shared int small[4];
LMDX_shared double medium[512][16];
LMDX_shared int big[8][200000]; /* 6.4 MB */
LMDX_shared long counter;
LMDX_shared char text[100];

int main(void) {
  fprintf(stderr, "leaving with status 2\n");
  return 2;
}

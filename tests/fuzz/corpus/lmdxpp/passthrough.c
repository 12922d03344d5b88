// Nothing to rewrite: comments, strings, character literals, includes and macros stay as they
// are, even when they spell LMDX_shared or LMDX_barrier(a).
#include <stdio.h>
#include "local header.h"
#define SHOW(x) printf("%s = %d\n", #x, x) /* LMDX_thread t(void *a) */
#define JOIN(a, b) a##b
#if 0
LMDX_shared int unused[1] 'unterminated
#endif

/* LMDX_shared int hidden[4]; */
static const char *text = "LMDX_shared int s; LMDX_barrier(a); \"quoted\" \\";
static const char quote = '\'', other = '"';
static const char *wide = L"LMDX_thread" u8"x" U"y";

int helper(int value) {
  SHOW(value);
  return JOIN(val, ue) + quote + other + (text != wide);
}

int main(int argc, char **argv) {
  lmdx_init_spmd(&argc, &argv);  // a main that starts LMDX itself is left alone
  helper(1);
  lmdx_finalize();
  return 0;
}

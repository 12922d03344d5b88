/* LMDX_shared declarations of every shape, and the uses lmdxpp rewrites or leaves. */
#include <stddef.h>
#define N 16
#define FIRST(a) grid[0][a]

struct point {
  int x, y;
};

LMDX_shared float grid[N][N * 2]; /* a comment after it stays */
LMDX_shared double total;
LMDX_shared struct point corners[4], centre;
LMDX_shared int *links[N];
LMDX_shared unsigned long
    spread_over[3]
               [4];
LMDX_shared struct {
  int a;
  char name[8];
} record;

struct holder {
  int count;
} holder;

size_t sizes(void) {
  struct holder h = {.count = 1};
  h.count = (int)sizeof grid + (int)sizeof(grid[0]);
  corners[1].x = centre.y;
  record.a = h.count;
  return sizeof total + sizeof corners + sizeof spread_over + (size_t)FIRST(1) +
         (size_t)&grid[1][2] + (size_t)links[0] + (size_t)total * 2;
}

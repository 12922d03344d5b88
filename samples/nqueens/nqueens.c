/* samples/nqueens: counts the ways to place n queens on an n x n board so that none attacks
 * another, by tasks: each placement in the first --task-rows rows is a task that spawns one task
 * per safe square of the next row and waits for them; below, a task counts sequentially. The
 * subtrees differ widely in size, so nodes that run out of work steal.
 *
 * main checks the count against the known number of solutions (and a sequential count) and
 * prints `verified`, or what differs and exits 1.
 *
 *   ./lmdx run nqueens -n 2 [-- --n 13 --task-rows 4]
 */
#include <lmdx/lmdx.h>
#include <stdint.h>
#include <stdio.h>

#include "samples/common/sample_flags.h"

#define MAX_N 16

struct placement {
  int n;
  int row;
  int task_rows;
  uint32_t columns; /* columns taken */
  uint32_t falling; /* diagonals going down-right, shifted to this row */
  uint32_t rising;  /* diagonals going down-left, shifted to this row */
  long long solutions;
};

static long long count_sequentially(int n, int row, uint32_t columns, uint32_t falling,
                                    uint32_t rising) {
  if (row == n) return 1;
  uint32_t all = (1u << n) - 1;
  uint32_t free = all & ~(columns | falling | rising);
  long long total = 0;
  while (free != 0) {
    uint32_t square = free & -free;
    free ^= square;
    total += count_sequentially(n, row + 1, columns | square, ((falling | square) << 1) & all,
                                (rising | square) >> 1);
  }
  return total;
}

static void placement_task(void* arg) {
  struct placement* at = (struct placement*)arg;
  if (at->row >= at->task_rows || at->row == at->n) {
    at->solutions = count_sequentially(at->n, at->row, at->columns, at->falling, at->rising);
    return;
  }
  uint32_t all = (1u << at->n) - 1;
  uint32_t free = all & ~(at->columns | at->falling | at->rising);
  struct placement next[MAX_N];
  int spawned = 0;
  while (free != 0) {
    uint32_t square = free & -free;
    free ^= square;
    struct placement child = {at->n,
                              at->row + 1,
                              at->task_rows,
                              at->columns | square,
                              ((at->falling | square) << 1) & all,
                              (at->rising | square) >> 1,
                              0};
    next[spawned] = child;
    lmdx_spawn(placement_task, &next[spawned], sizeof next[spawned]);
    spawned++;
  }
  lmdx_wait();
  at->solutions = 0;
  for (int i = 0; i < spawned; i++) at->solutions += next[i].solutions;
}

int main(int argc, char** argv) {
  static const long long known[MAX_N + 1] = {
      1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512};
  lmdx_init(&argc, &argv);
  int n = 13;
  int task_rows = 4;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"n", &n, 1, MAX_N, "queens and board size"},
      {"task-rows", &task_rows, 0, MAX_N, "rows whose placements are tasks"},
  };
  int parsed = sample_parse_flags("nqueens", argc, argv, flags, 2, &wrong_result);
  if (parsed >= 0) return parsed;

  struct placement top = {n, 0, task_rows, 0, 0, 0, 0};
  double start = sample_now();
  lmdx_spawn(placement_task, &top, sizeof top);
  lmdx_wait();
  double seconds = sample_now() - start;
  if (wrong_result) top.solutions += 1;

  double sequential_start = sample_now();
  long long sequential = count_sequentially(n, 0, 0, 0, 0);
  double sequential_seconds = sample_now() - sequential_start;
  printf(
      "nqueens %d: %lld solutions on %d nodes in %.3f s (task rows %d; one thread, no tasks: "
      "%.3f s)\n",
      n, top.solutions, lmdx_size(), seconds, task_rows, sequential_seconds);
  if (top.solutions != known[n] || sequential != known[n]) {
    printf("nqueens: %lld solutions (sequentially %lld), expected %lld\n", top.solutions,
           sequential, known[n]);
    return 1;
  }
  printf("verified\n");
  return 0;
}

/* Every construct of lmdxpp's dialect in one program, checked while it runs: shared arrays,
 * structs and scalars (sizeof, addresses), thread functions with and without an argument,
 * joins by id and by name, named barriers, semaphores and locks, and a task whose calls are
 * spawns. Prints "constructs ok". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 40
#define COLS 100 /* 16,000 bytes: the array spans several pages */
#define FILLERS 6
#define BUMPS 500
#define CELL(i, j) grid[i][j] /* a macro using a shared name */

struct totals {
  long sum;
  int count;
};

LMDX_shared int grid[ROWS][COLS];
LMDX_shared struct totals totals;
LMDX_shared long counter, *unused_pointer;
LMDX_shared int ran_on[FILLERS];

static int failures;

static void check(int ok, const char* what) {
  if (!ok) {
    printf("FAILED: %s\n", what);
    failures++;
  }
}

/* Fills the rows t, t + FILLERS, ... and adds their sum to the shared totals under a lock. */
LMDX_thread fill(void* arg) {
  int t = (int)(intptr_t)arg;
  long sum = 0;
  for (int i = t; i < ROWS; i += FILLERS) {
    for (int j = 0; j < COLS; j++) {
      CELL(i, j) = i * COLS + j;
      sum += grid[i][j];
    }
  }
  ran_on[t] = lmdx_rank() + 1;
  LMDX_lock(totals_lock);
  totals.sum += sum;
  totals.count++;
  LMDX_unlock(totals_lock);
  LMDX_barrier(filled); /* the fillers and main */
  return (void*)(intptr_t)(t + 100);
}

/* Falls off its end: its joiner gets NULL. */
LMDX_thread bump(void) {
  for (int k = 0; k < BUMPS; k++) {
    LMDX_sema_P(mutex);
    counter++;
    LMDX_sema_V(mutex);
  }
}

/* A task: every call of it is a spawn on a copy of the arguments, written back at LMDX_wait().
 * Each call also writes its own cell of the shared array, read by main after its wait. */
struct fib_call {
  int n;
  long result;
};

LMDX_shared long fib_cells[32];

LMDX_task fib(struct fib_call* call) {
  fib_cells[call->n] = call->n + 1000;
  if (call->n < 2) {
    call->result = call->n;
    return;
  }
  struct fib_call left = {call->n - 1, 0};
  struct fib_call right = {call->n - 2, 0};
  fib(&left);
  fib(&right);
  LMDX_wait();
  call->result = left.result + right.result;
}

LMDX_thread leave_early(void* arg) {
  LMDX_exit_thread(arg);
  return NULL; /* never reached */
}

int main(void) {
  check(sizeof grid == ROWS * COLS * sizeof(int), "sizeof grid is the whole array");
  check(sizeof grid[0] == COLS * sizeof(int), "sizeof grid[0] is one row");
  check(lmdx_is_shared(&grid[0][0]) && lmdx_is_shared(&totals) && lmdx_is_shared(&counter),
        "shared variables live in the shared range");
  check((char*)&grid[ROWS - 1][COLS - 1] - (char*)&grid[0][0] ==
            (ROWS * COLS - 1) * (long)sizeof(int),
        "the array is contiguous");

  LMDX_barrier_init(filled, FILLERS + 1);
  LMDX_sema_init(mutex, 1);
  lmdx_thread_t fillers[FILLERS];
  for (int t = 0; t < FILLERS; t++) fillers[t] = LMDX_start_thread(fill, (void*)(intptr_t)t);
  LMDX_barrier(filled);

  long expected_sum = 0;
  int wrong = 0;
  for (int i = 0; i < ROWS; i++) {
    for (int j = 0; j < COLS; j++) {
      expected_sum += i * COLS + j;
      if (grid[i][j] != i * COLS + j) wrong++;
    }
  }
  check(wrong == 0, "every element the fillers wrote is seen by main");
  check(totals.sum == expected_sum && totals.count == FILLERS, "the totals added under a lock");
  for (int t = 0; t < FILLERS; t++) {
    check(LMDX_join_thread(fillers[t]) == (void*)(intptr_t)(t + 100), "a filler's result");
  }
  int other_nodes = 0;
  for (int t = 0; t < FILLERS; t++) other_nodes += ran_on[t] != 1;
  check(lmdx_size() == 1 || other_nodes > 0, "fillers ran on other nodes");

  LMDX_start_thread(bump);
  LMDX_start_thread(bump);
  check(LMDX_join_thread(bump) == NULL, "a thread falling off its end returns NULL");
  check(LMDX_join_thread(bump) == NULL, "the second bump joined by name");
  check(counter == 2 * BUMPS, "the counter guarded by a semaphore");

  LMDX_start_thread(leave_early, (void*)&counter);
  check(LMDX_join_thread(leave_early) == (void*)&counter, "LMDX_exit_thread's result");

  struct fib_call top = {20, -1};
  fib(&top);
  LMDX_wait();
  check(top.result == 6765, "fib(20) by LMDX_task calls");
  int cells_wrong = 0;
  for (int n = 0; n <= 20; n++) cells_wrong += fib_cells[n] != n + 1000;
  check(cells_wrong == 0, "what the tasks wrote to shared memory is seen after LMDX_wait()");

  if (failures != 0) return 1;
  printf("constructs ok on %d nodes\n", lmdx_size());
  return 0;
}

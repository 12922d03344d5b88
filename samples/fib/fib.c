/* samples/fib: Fibonacci by recursive tasks, the overhead test of the task runtime
 * (docs/tasks.md). Each call spawns its two sub-calls as tasks and waits for them; below
 * --cutoff a call computes sequentially. With the default cutoff of 0 every call down to fib(1)
 * is a task: millions of tasks that do almost nothing, so the time is the runtime's own cost.
 *
 * Threads style: main runs on rank 0, spawns fib(n) and waits; every node's runner takes tasks,
 * and idle nodes steal. main checks the result against a sequential computation and prints
 * `verified`, or what differs and exits 1.
 *
 *   ./lmdx run fib -n 2 [-- --n 30 --cutoff 12 --wrong-result]
 */
#include <lmdx/lmdx.h>
#include <stdio.h>

#include "samples/common/sample_flags.h"

struct fib_args {
  int n;
  int cutoff;
  long long result;
};

static long long fib_sequential(int n) {
  return n < 2 ? n : fib_sequential(n - 1) + fib_sequential(n - 2);
}

static void fib_task(void* arg) {
  struct fib_args* call = (struct fib_args*)arg;
  if (call->n < 2 || call->n <= call->cutoff) {
    call->result = fib_sequential(call->n);
    return;
  }
  struct fib_args left = {call->n - 1, call->cutoff, 0};
  struct fib_args right = {call->n - 2, call->cutoff, 0};
  lmdx_spawn(fib_task, &left, sizeof left);
  lmdx_spawn(fib_task, &right, sizeof right);
  lmdx_wait(); /* the copies of left and right are written back here */
  call->result = left.result + right.result;
}

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  int n = 27;
  int cutoff = 0;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"n", &n, 0, 60, "which Fibonacci number"},
      {"cutoff", &cutoff, 0, 60, "calls of n at most this compute without tasks"},
  };
  int parsed = sample_parse_flags("fib", argc, argv, flags, 2, &wrong_result);
  if (parsed >= 0) return parsed;

  struct fib_args top = {n, cutoff, 0};
  double start = sample_now();
  if (lmdx_spawn(fib_task, &top, sizeof top) != 0 || lmdx_wait() != 0) {
    printf("fib: the tasks failed: %s\n", lmdx_last_error_message());
    return 1;
  }
  double seconds = sample_now() - start;
  if (wrong_result) top.result += 1;

  double sequential_start = sample_now();
  long long expected = fib_sequential(n);
  double sequential = sample_now() - sequential_start;
  printf("fib(%d) = %lld on %d nodes in %.3f s (cutoff %d; one thread, no tasks: %.3f s)\n", n,
         top.result, lmdx_size(), seconds, cutoff, sequential);
  if (top.result != expected) {
    printf("fib: fib(%d) is %lld, expected %lld\n", n, top.result, expected);
    return 1;
  }
  printf("verified\n");
  return 0;
}

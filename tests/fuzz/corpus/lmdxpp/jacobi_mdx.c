/* samples/jacobi_mdx: the Jacobi iteration of the MDX thesis (Ch. 4), in MDX's annotated dialect.
 *
 * lmdxpp turns this file into C: `grid` and `run` become named shared variables, `worker` an
 * ordinary thread function, the barrier names strings, and `main` the program's main thread
 * (rank 0 runs it; the other ranks serve the job and run the workers placed on them).
 *
 * As in the thesis, `grid` is shared and `scratch` is local: every node has its own `scratch`, and
 * a worker uses the copy of the node it runs on. Where the thesis split the grid between two
 * threads th1 and th2, here K workers (one per node by default) each own a band of rows. One sweep:
 * every worker computes the new values of its band into `scratch` from `grid` (the average of the
 * four neighbours), waits at barrier `a` (the workers) until no worker reads `grid` any more,
 * copies its band back into `grid`, and waits at barrier `b` (the workers and main) until every
 * band is written. The grid is 1024x1024 floats as in the thesis, so a row is one 4 KiB page and
 * every band is whole pages. The thesis ran one sweep and printed the grid; this program runs a
 * fixed number of sweeps (100; no tolerance test), then main computes the same sweeps sequentially
 * in private memory and compares every element.
 *
 *   ./lmdx run jacobi_mdx -n 4 [-- --sweeps S --workers K --wrong-result]
 *
 * --wrong-result makes worker 0 write one wrong value in its last sweep: a self-check of the
 * checker, which must then name that element and exit 1.
 */
#include <lmdx/lmdx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define M 1024 /* rows, as in the thesis */
#define N 1024 /* columns: one row of floats is a 4 KiB page */
#define DEFAULT_SWEEPS 100
#define MAX_SWEEPS 100000
#define MAX_WORKERS 64

/* What main tells the workers. In shared memory because a worker on another node sees only its
 * own node's copy of an ordinary global. */
struct jacobi_run {
  int sweeps;
  int workers;
  int wrong_result;
};

LMDX_shared float grid[M][N];
LMDX_shared struct jacobi_run run;

float scratch[M][N]; /* local: one per node */

/* Main's sequential check, in rank 0's private memory. */
static float reference[M][N];
static float reference_next[M][N];

/* The new value of a point. Both the workers and the check call it, so both do the same float
 * operations in the same order and their results are bit for bit equal. */
static float average(float up, float down, float left, float right) {
  return (up + down + left + right) / 4;
}

/* Fixed boundary values: a hot top edge, a warm left edge, the others cold; the inside starts
 * cold. */
static float initial_value(int i, int j) {
  if (i == 0) return 100.0f;
  if (j == 0) return 50.0f;
  return 0.0f;
}

static void initialize_grid(void) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) grid[i][j] = initial_value(i, j);
}

/* Worker k of `workers` owns rows [band_start(k), band_start(k + 1)); it updates those that are
 * not on the boundary. */
static int band_start(int k, int workers) { return M * k / workers; }
static int first_inner_row(int k, int workers) {
  int row = band_start(k, workers);
  return row < 1 ? 1 : row;
}
static int end_inner_row(int k, int workers) {
  int row = band_start(k + 1, workers);
  return row > M - 1 ? M - 1 : row;
}

static void compute_band(int first, int end) {
  for (int i = first; i < end; i++)
    for (int j = 1; j < N - 1; j++)
      scratch[i][j] = average(grid[i - 1][j], grid[i + 1][j], grid[i][j - 1], grid[i][j + 1]);
}

static void copy_band(int first, int end) {
  for (int i = first; i < end; i++)
    for (int j = 1; j < N - 1; j++) grid[i][j] = scratch[i][j];
}

/* The element --wrong-result spoils: in worker 0's band, near the hot edge, so it is not zero. */
#define WRONG_ROW 1
#define WRONG_COLUMN (N / 2)

LMDX_thread worker(void* arg) {
  int k = (int)(intptr_t)arg;
  int workers = run.workers;
  int sweeps = run.sweeps;
  int wrong_result = run.wrong_result;
  int first = first_inner_row(k, workers);
  int end = end_inner_row(k, workers);
  for (int sweep = 0; sweep < sweeps; sweep++) {
    compute_band(first, end);
    LMDX_barrier(a); /* every worker has read grid: it may be overwritten */
    if (wrong_result && k == 0 && sweep == sweeps - 1) {
      scratch[WRONG_ROW][WRONG_COLUMN] += 1.0f;
    }
    copy_band(first, end);
    LMDX_barrier(b); /* every band is written: the next sweep (or main) may read grid */
  }
}

/* The same sweeps, one after the other, in private memory. */
static void compute_reference(int sweeps) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) reference[i][j] = initial_value(i, j);
  for (int sweep = 0; sweep < sweeps; sweep++) {
    for (int i = 1; i < M - 1; i++)
      for (int j = 1; j < N - 1; j++)
        reference_next[i][j] = average(reference[i - 1][j], reference[i + 1][j],
                                       reference[i][j - 1], reference[i][j + 1]);
    for (int i = 1; i < M - 1; i++)
      for (int j = 1; j < N - 1; j++) reference[i][j] = reference_next[i][j];
  }
}

/* Prints `verified`, or the first element that differs; returns the exit status. */
static int check_grid(void) {
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      if (grid[i][j] != reference[i][j]) {
        printf("jacobi_mdx: grid[%d][%d] = %.9g, expected %.9g\n", i, j, (double)grid[i][j],
               (double)reference[i][j]);
        return 1;
      }
    }
  }
  printf("verified\n");
  return 0;
}

static int parse_number(const char* text, int low, int high, int* out) {
  char* end = NULL;
  long value = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < low || value > high) return 0;
  *out = (int)value;
  return 1;
}

static double seconds_since(const struct timespec* start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

int main(int argc, char** argv) {
  int sweeps = DEFAULT_SWEEPS;
  int workers = lmdx_size() < MAX_WORKERS ? lmdx_size() : MAX_WORKERS;
  int wrong_result = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--sweeps") == 0 && i + 1 < argc &&
        parse_number(argv[i + 1], 1, MAX_SWEEPS, &sweeps)) {
      i++;
    } else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc &&
               parse_number(argv[i + 1], 1, MAX_WORKERS, &workers)) {
      i++;
    } else if (strcmp(argv[i], "--wrong-result") == 0) {
      wrong_result = 1;
    } else {
      fprintf(stderr,
              "jacobi_mdx: bad argument '%s'; usage: jacobi_mdx [--sweeps 1-%d] "
              "[--workers 1-%d] [--wrong-result]\n",
              argv[i], MAX_SWEEPS, MAX_WORKERS);
      return 2;
    }
  }

  initialize_grid();
  run.sweeps = sweeps;
  run.workers = workers;
  run.wrong_result = wrong_result;
  LMDX_barrier_init(a, workers);
  LMDX_barrier_init(b, workers + 1);

  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  lmdx_thread_t threads[MAX_WORKERS];
  for (int k = 0; k < workers; k++) threads[k] = LMDX_start_thread(worker, (void*)(intptr_t)k);
  for (int sweep = 0; sweep < sweeps; sweep++) LMDX_barrier(b);
  for (int k = 0; k < workers; k++) LMDX_join_thread(threads[k]);
  double elapsed = seconds_since(&start);

  printf("jacobi_mdx: %dx%d grid, %d sweeps (a fixed count), %d workers on %d nodes: %.2f s\n", M,
         N, sweeps, workers, lmdx_size(), elapsed);
  compute_reference(sweeps);
  return check_grid();
}

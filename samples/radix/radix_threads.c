/* samples/radix, plain-threads version: the same sort on POSIX threads over private memory
 * (malloc), with no LMDX at all, the reference `lmdx bench protocols` shows beside the shared
 * version: the false sharing of the destination array costs cache lines here, not pages.
 *
 * Worker w owns the same band of keys as in the shared version; a pass counts its band's digits
 * into its row of the histograms, waits at a pthread barrier, sorts its band by the digit in its
 * own buffer and copies each digit's run to where the histograms say, and waits again. The time
 * printed is worker 0's, from the barrier after the keys are made to the last one. The check is
 * the shared version's: every key against a sequential sort (qsort).
 *
 *   bazel-bin/samples/radix/radix_threads [--keys N --radix-bits B --workers W]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample_threads.h"
#include "samples/radix/radix_kernel.h"

static const char* const kProgram = "radix_threads";

/* What main tells the workers; written before they start, only read after. */
static struct {
  int keys;
  int radix_bits;
  int workers;
  int wrong_result;
  uint32_t* arrays[2];  /* swapped each pass */
  uint32_t* histograms; /* a row of 2^radix_bits counts per worker */
  pthread_barrier_t step;
  double seconds; /* worker 0's time for the sort */
} run;

/* One pass: this worker's keys [first, end) of from, by the digit at shift, into to. */
static void pass(const uint32_t* from, uint32_t* to, int w, int first, int end, int shift,
                 int buckets, size_t* counts, size_t* offsets, uint32_t* local) {
  radix_histogram(from + first, end - first, shift, buckets, counts);
  for (int d = 0; d < buckets; d++) run.histograms[(size_t)w * buckets + d] = (uint32_t)counts[d];
  pthread_barrier_wait(&run.step); /* every histogram is written */

  radix_sort_by_digit(from + first, end - first, shift, buckets, counts, offsets, local);
  radix_offsets(run.histograms, run.workers, buckets, w, offsets);
  size_t run_start = 0;
  for (int d = 0; d < buckets; d++) {
    if (counts[d] > 0) memcpy(to + offsets[d], local + run_start, counts[d] * sizeof *to);
    run_start += counts[d];
  }
  pthread_barrier_wait(&run.step); /* every key is in place; the histograms may be reused */
}

static void* worker(void* arg) {
  int w = (int)(intptr_t)arg;
  int buckets = 1 << run.radix_bits;
  int first = 0;
  int end = 0;
  sample_band(run.keys, w, run.workers, &first, &end);
  size_t* counts = malloc((size_t)buckets * sizeof *counts);
  size_t* offsets = malloc((size_t)buckets * sizeof *offsets);
  uint32_t* local = malloc((size_t)(end - first + 1) * sizeof *local);
  if (counts == NULL || offsets == NULL || local == NULL) {
    /* The others wait for this worker at every barrier: there is no going on without it. */
    fprintf(stderr, "%s: worker %d has no memory for its buffers\n", kProgram, w);
    exit(1);
  }
  for (int i = first; i < end; i++) run.arrays[0][i] = radix_key_value((uint64_t)i);
  pthread_barrier_wait(&run.step); /* every key is made */
  double start = sample_now();
  int passes = radix_passes(run.radix_bits);
  for (int p = 0; p < passes; p++) {
    pass(run.arrays[p % 2], run.arrays[(p + 1) % 2], w, first, end, p * run.radix_bits, buckets,
         counts, offsets, local);
  }
  if (w == 0) {
    run.seconds = sample_now() - start;
    if (run.wrong_result) run.arrays[passes % 2][run.keys / 2] += 1;
  }
  free(counts);
  free(offsets);
  free(local);
  return NULL;
}

int main(int argc, char** argv) {
  int keys = 1 << 21;
  int radix_bits = 8;
  int workers = 1;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"keys", &keys, 1, 1 << 26, "keys to sort"},
      {"radix-bits", &radix_bits, 1, 16, "bits per digit (one pass per digit)"},
      {"workers", &workers, 1, 1024, "POSIX threads"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 3, &wrong_result);
  if (status >= 0) return status;

  run.keys = keys;
  run.radix_bits = radix_bits;
  run.workers = workers;
  run.wrong_result = wrong_result;
  run.arrays[0] = malloc((size_t)keys * sizeof(uint32_t));
  run.arrays[1] = malloc((size_t)keys * sizeof(uint32_t));
  run.histograms = malloc((size_t)workers * ((size_t)1 << radix_bits) * sizeof(uint32_t));
  if (run.arrays[0] == NULL || run.arrays[1] == NULL || run.histograms == NULL) {
    fprintf(stderr, "%s: no memory for the keys\n", kProgram);
    return 1;
  }
  pthread_barrier_init(&run.step, NULL, (unsigned)workers);
  if (sample_run_threads(kProgram, worker, workers) != 0) return 1;
  printf("%s: %d keys, %d-bit digits, %d threads: %.3f s\n", kProgram, keys, radix_bits, workers,
         run.seconds);
  status = radix_check(kProgram, run.arrays[radix_passes(radix_bits) % 2], keys);
  pthread_barrier_destroy(&run.step);
  free(run.arrays[0]);
  free(run.arrays[1]);
  free(run.histograms);
  return status;
}

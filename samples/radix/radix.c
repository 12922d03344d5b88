/* samples/radix: parallel radix sort of 32-bit keys, as in SPLASH-2's radix.
 *
 * The keys live in two shared arrays, `radix.keys0` and `radix.keys1` (block homes), swapped each
 * pass; worker w owns a band of each. A pass sorts by one digit of --radix-bits bits, least
 * significant first: every worker counts the digits of its band into its row of the shared
 * `radix.histograms`, waits at the barrier `radix.step`, reads every worker's row to learn where
 * each of its digits goes (the keys of smaller digits, then the same digit's keys of the workers
 * before it), and moves its keys there, then waits again. Reading the histograms is the
 * all-to-all exchange; the moves write every other worker's part of the destination, where
 * neighbouring workers' runs share pages: the false sharing multiple-writer protocols are for.
 * A worker sorts its band by the digit in private memory first and copies each digit's run in
 * one piece, so it writes each destination page in one burst rather than key by key.
 *
 * Main (rank 0) starts one worker per node by default, joins them, and compares every key with a
 * sequential sort (qsort) of the same keys; it prints `verified`, or the first key that differs
 * and exits 1. The time printed is the sort's (worker 0's, from the barrier after the keys are
 * made to the last one).
 *
 *   ./lmdx run radix [-n 4] [--protocol P] [--stats] [-- --keys N --radix-bits B --workers W]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample.h"
#include "samples/radix/radix_kernel.h"

/* What main tells the workers. */
struct radix_run {
  int keys;
  int radix_bits;
  int workers;
  int wrong_result;
  double seconds; /* worker 0's time for the sort */
};

static const char* const kProgram = "radix";

static struct radix_run* shared_run(void) {
  return sample_shared(kProgram, "radix.run", sizeof(struct radix_run));
}

static uint32_t* shared_keys(int which, int keys) {
  return sample_shared(kProgram, which == 0 ? "radix.keys0" : "radix.keys1",
                       (size_t)keys * sizeof(uint32_t));
}

static uint32_t* shared_histograms(int workers, int buckets) {
  return sample_shared(kProgram, "radix.histograms",
                       (size_t)workers * (size_t)buckets * sizeof(uint32_t));
}

/* One pass: this worker's keys [first, end) of from, by the digit at shift, into to. */
static void pass(const uint32_t* from, uint32_t* to, uint32_t* histograms, int workers, int w,
                 int first, int end, int shift, int buckets, size_t* counts, size_t* offsets,
                 uint32_t* local) {
  radix_histogram(from + first, end - first, shift, buckets, counts);
  for (int d = 0; d < buckets; d++) histograms[(size_t)w * buckets + d] = (uint32_t)counts[d];
  lmdx_barrier("radix.step"); /* every histogram is written */

  radix_sort_by_digit(from + first, end - first, shift, buckets, counts, offsets, local);
  radix_offsets(histograms, workers, buckets, w, offsets);
  size_t run_start = 0;
  for (int d = 0; d < buckets; d++) {
    if (counts[d] > 0) memcpy(to + offsets[d], local + run_start, counts[d] * sizeof *to);
    run_start += counts[d];
  }
  lmdx_barrier("radix.step"); /* every key is in place; the histograms may be reused */
}

static void* worker(void* arg) {
  int w = (int)(intptr_t)arg;
  struct radix_run run = *shared_run();
  int buckets = 1 << run.radix_bits;
  uint32_t* keys[2] = {shared_keys(0, run.keys), shared_keys(1, run.keys)};
  uint32_t* histograms = shared_histograms(run.workers, buckets);
  int first = 0;
  int end = 0;
  sample_band(run.keys, w, run.workers, &first, &end);
  size_t* counts = malloc((size_t)buckets * sizeof *counts);
  size_t* offsets = malloc((size_t)buckets * sizeof *offsets);
  uint32_t* local = malloc((size_t)(end - first + 1) * sizeof *local);
  if (counts == NULL || offsets == NULL || local == NULL) return (void*)1;
  for (int i = first; i < end; i++) keys[0][i] = radix_key_value((uint64_t)i);
  lmdx_barrier("radix.step"); /* every key is made */
  double start = sample_now();
  int passes = radix_passes(run.radix_bits);
  for (int p = 0; p < passes; p++) {
    pass(keys[p % 2], keys[(p + 1) % 2], histograms, run.workers, w, first, end, p * run.radix_bits,
         buckets, counts, offsets, local);
  }
  if (w == 0) {
    shared_run()->seconds = sample_now() - start;
    if (run.wrong_result) keys[passes % 2][run.keys / 2] += 1;
  }
  free(counts);
  free(offsets);
  free(local);
  return NULL;
}

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  int keys = 1 << 21;
  int radix_bits = 8;
  int workers = lmdx_size();
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"keys", &keys, 1, 1 << 26, "keys to sort"},
      {"radix-bits", &radix_bits, 1, 16, "bits per digit (one pass per digit)"},
      {"workers", &workers, 1, 1024, "LMDX threads, placed in blocks on the nodes"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 3, &wrong_result);
  if (status >= 0) return status;

  struct radix_run* run = shared_run();
  run->keys = keys;
  run->radix_bits = radix_bits;
  run->workers = workers;
  run->wrong_result = wrong_result;
  uint32_t* sorted = shared_keys(radix_passes(radix_bits) % 2, keys);
  shared_keys(0, keys);
  shared_histograms(workers, 1 << radix_bits);
  lmdx_barrier_init("radix.step", workers);

  if (sample_run_workers(kProgram, worker, workers) != 0) return 1;
  printf("%s: %d keys, %d-bit digits, %d workers on %d nodes, protocol %s: %.3f s\n", kProgram,
         keys, radix_bits, workers, lmdx_size(), sample_protocol(sorted), run->seconds);
  return radix_check(kProgram, sorted, keys);
}

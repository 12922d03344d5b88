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

/* What main tells the workers. */
struct radix_run {
  int keys;
  int radix_bits;
  int workers;
  int wrong_result;
  double seconds; /* worker 0's time for the sort */
};

static const char* const kProgram = "radix";

/* Key i, the same whatever the worker count: splitmix64 of i, high half. */
static uint32_t key_value(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

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

static int passes_for(int radix_bits) { return (32 + radix_bits - 1) / radix_bits; }

/* Where worker w's keys of each digit go: offsets[d] = the keys of smaller digits (all workers)
 * plus the keys of digit d of workers before w. */
static void destination_offsets(const uint32_t* histograms, int workers, int buckets, int w,
                                size_t* offsets) {
  size_t below = 0;
  for (int d = 0; d < buckets; d++) {
    size_t before_me = 0;
    size_t total = 0;
    for (int v = 0; v < workers; v++) {
      uint32_t count = histograms[(size_t)v * buckets + d];
      if (v < w) before_me += count;
      total += count;
    }
    offsets[d] = below + before_me;
    below += total;
  }
}

/* One pass: this worker's keys [first, end) of from, by the digit at shift, into to. */
static void pass(const uint32_t* from, uint32_t* to, uint32_t* histograms, int workers, int w,
                 int first, int end, int shift, int buckets, size_t* counts, size_t* offsets,
                 uint32_t* local) {
  uint32_t mask = (uint32_t)buckets - 1;
  memset(counts, 0, (size_t)buckets * sizeof *counts);
  for (int i = first; i < end; i++) counts[(from[i] >> shift) & mask]++;
  for (int d = 0; d < buckets; d++) histograms[(size_t)w * buckets + d] = (uint32_t)counts[d];
  lmdx_barrier("radix.step"); /* every histogram is written */

  /* This worker's keys sorted by the digit, stably, in private memory. */
  size_t at = 0;
  for (int d = 0; d < buckets; d++) {
    size_t count = counts[d];
    counts[d] = at;
    at += count;
  }
  for (int i = first; i < end; i++) local[counts[(from[i] >> shift) & mask]++] = from[i];
  /* counts[d] is now the end of digit d's run in local. */
  destination_offsets(histograms, workers, buckets, w, offsets);
  size_t run_start = 0;
  for (int d = 0; d < buckets; d++) {
    size_t run = counts[d] - run_start;
    if (run > 0) memcpy(to + offsets[d], local + run_start, run * sizeof *to);
    run_start = counts[d];
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
  for (int i = first; i < end; i++) keys[0][i] = key_value((uint64_t)i);
  lmdx_barrier("radix.step"); /* every key is made */
  double start = sample_now();
  int passes = passes_for(run.radix_bits);
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

static int compare_keys(const void* a, const void* b) {
  uint32_t x = *(const uint32_t*)a;
  uint32_t y = *(const uint32_t*)b;
  return (x > y) - (x < y);
}

static int check(const uint32_t* sorted, int keys) {
  uint32_t* expected = malloc((size_t)keys * sizeof *expected);
  if (expected == NULL) {
    fprintf(stderr, "%s: no memory for the sequential sort\n", kProgram);
    exit(1);
  }
  for (int i = 0; i < keys; i++) expected[i] = key_value((uint64_t)i);
  qsort(expected, (size_t)keys, sizeof *expected, compare_keys);
  int status = 0;
  for (int i = 0; i < keys; i++) {
    if (sorted[i] != expected[i]) {
      printf("%s: key[%d] = %u, expected %u\n", kProgram, i, sorted[i], expected[i]);
      status = 1;
      break;
    }
  }
  free(expected);
  if (status == 0) printf("verified\n");
  return status;
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
  uint32_t* sorted = shared_keys(passes_for(radix_bits) % 2, keys);
  shared_keys(0, keys);
  shared_histograms(workers, 1 << radix_bits);
  lmdx_barrier_init("radix.step", workers);

  if (sample_run_workers(kProgram, worker, workers) != 0) return 1;
  printf("%s: %d keys, %d-bit digits, %d workers on %d nodes, protocol %s: %.3f s\n", kProgram,
         keys, radix_bits, workers, lmdx_size(), sample_protocol(sorted), run->seconds);
  return check(sorted, keys);
}

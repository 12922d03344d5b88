#include "samples/radix/radix_kernel.h"

#include <stdio.h>
#include <stdlib.h>

/* splitmix64 of i, high half. */
uint32_t radix_key_value(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

int radix_passes(int radix_bits) { return (32 + radix_bits - 1) / radix_bits; }

void radix_histogram(const uint32_t* keys, int count, int shift, int buckets, size_t* counts) {
  uint32_t mask = (uint32_t)buckets - 1;
  for (int d = 0; d < buckets; d++) counts[d] = 0;
  for (int i = 0; i < count; i++) counts[(keys[i] >> shift) & mask]++;
}

void radix_sort_by_digit(const uint32_t* keys, int count, int shift, int buckets,
                         const size_t* counts, size_t* positions, uint32_t* local) {
  uint32_t mask = (uint32_t)buckets - 1;
  size_t at = 0;
  for (int d = 0; d < buckets; d++) {
    positions[d] = at;
    at += counts[d];
  }
  for (int i = 0; i < count; i++) local[positions[(keys[i] >> shift) & mask]++] = keys[i];
}

void radix_offsets(const uint32_t* histograms, int workers, int buckets, int w, size_t* offsets) {
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

static int compare_keys(const void* a, const void* b) {
  uint32_t x = *(const uint32_t*)a;
  uint32_t y = *(const uint32_t*)b;
  return (x > y) - (x < y);
}

int radix_check(const char* program, const uint32_t* sorted, int keys) {
  uint32_t* expected = malloc((size_t)keys * sizeof *expected + 1);
  if (expected == NULL) {
    fprintf(stderr, "%s: no memory for the sequential sort\n", program);
    exit(1);
  }
  for (int i = 0; i < keys; i++) expected[i] = radix_key_value((uint64_t)i);
  qsort(expected, (size_t)keys, sizeof *expected, compare_keys);
  int status = 0;
  for (int i = 0; i < keys; i++) {
    if (sorted[i] != expected[i]) {
      printf("%s: key[%d] = %u, expected %u\n", program, i, sorted[i], expected[i]);
      status = 1;
      break;
    }
  }
  free(expected);
  if (status == 0) printf("verified\n");
  return status;
}

/* samples/quicksort: a task-parallel quicksort of a shared array. A task partitions its range of
 * the shared variable `quicksort_keys` in place, then spawns one task per side; ranges of at most
 * --cutoff keys are sorted sequentially. Tasks on different nodes write the same array, sides
 * meeting inside one page, so the DSM merges their writes (under every protocol); a task reads
 * what its spawner partitioned (a spawn is a release) and main reads the sorted array after
 * lmdx_wait (the acquire of every task's end).
 *
 * main checks the array against a sequential sort of the same keys and prints `verified`, or the
 * first key that differs and exits 1.
 *
 *   ./lmdx run quicksort -n 2 [--protocol P] [-- --keys 1000000 --cutoff 16384 --seed 7]
 */
#include <lmdx/lmdx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample.h"

struct range {
  int first;
  int end;
  int keys;
  int cutoff;
};

static int compare_keys(const void* a, const void* b) {
  uint32_t x = *(const uint32_t*)a;
  uint32_t y = *(const uint32_t*)b;
  return (x > y) - (x < y);
}

static uint32_t* keys_of(int keys) {
  return (uint32_t*)sample_shared("quicksort", "quicksort_keys", (size_t)keys * sizeof(uint32_t));
}

static void swap_keys(uint32_t* a, uint32_t* b) {
  uint32_t t = *a;
  *a = *b;
  *b = t;
}

/* Hoare's partition around the median of three; returns the split: [first, split) <= pivot <=
 * [split, end). */
static int partition(uint32_t* key, int first, int end) {
  int mid = first + (end - first) / 2;
  if (key[mid] < key[first]) swap_keys(&key[mid], &key[first]);
  if (key[end - 1] < key[first]) swap_keys(&key[end - 1], &key[first]);
  if (key[end - 1] < key[mid]) swap_keys(&key[end - 1], &key[mid]);
  uint32_t pivot = key[mid];
  int i = first - 1;
  int j = end;
  for (;;) {
    do i++;
    while (key[i] < pivot);
    do j--;
    while (key[j] > pivot);
    if (i >= j) return j + 1;
    swap_keys(&key[i], &key[j]);
  }
}

static void sort_task(void* arg) {
  const struct range* range = (const struct range*)arg;
  uint32_t* key = keys_of(range->keys);
  int length = range->end - range->first;
  if (length <= range->cutoff) {
    qsort(key + range->first, (size_t)length, sizeof(uint32_t), compare_keys);
    return;
  }
  int split = partition(key, range->first, range->end);
  struct range left = {range->first, split, range->keys, range->cutoff};
  struct range right = {split, range->end, range->keys, range->cutoff};
  /* No wait: a task's end covers its children, and main's wait covers them all. */
  lmdx_spawn_copy(sort_task, &left, sizeof left);
  lmdx_spawn_copy(sort_task, &right, sizeof right);
}

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  int keys = 1000000;
  int cutoff = 16384;
  int seed = 7;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"keys", &keys, 2, 100000000, "keys to sort"},
      {"cutoff", &cutoff, 2, 100000000, "ranges of at most this many keys sort sequentially"},
      {"seed", &seed, 0, 1000000000, "of the keys"},
  };
  int parsed = sample_parse_flags("quicksort", argc, argv, flags, 3, &wrong_result);
  if (parsed >= 0) return parsed;

  uint32_t* key = keys_of(keys);
  uint32_t* expected = malloc((size_t)keys * sizeof(uint32_t));
  if (expected == NULL) {
    printf("quicksort: no memory for %d keys\n", keys);
    return 1;
  }
  uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 1;
  for (int i = 0; i < keys; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    key[i] = expected[i] = (uint32_t)(x >> 32);
  }

  struct range all = {0, keys, keys, cutoff};
  double start = sample_now();
  lmdx_spawn_copy(sort_task, &all, sizeof all);
  lmdx_wait();
  double seconds = sample_now() - start;
  if (wrong_result) swap_keys(&key[keys / 3], &key[keys / 3 + 1]);

  double sequential_start = sample_now();
  qsort(expected, (size_t)keys, sizeof(uint32_t), compare_keys);
  double sequential = sample_now() - sequential_start;
  printf(
      "quicksort: %d keys (cutoff %d) on %d nodes (%s) in %.3f s (one thread, no tasks: "
      "%.3f s)\n",
      keys, cutoff, lmdx_size(), sample_protocol(key), seconds, sequential);
  for (int i = 0; i < keys; i++) {
    if (key[i] != expected[i]) {
      printf("quicksort: key %d is %u, expected %u\n", i, key[i], expected[i]);
      free(expected);
      return 1;
    }
  }
  free(expected);
  printf("verified\n");
  return 0;
}

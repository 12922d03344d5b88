/* What the shared-memory and message versions of the radix sort share: the keys, the number of
 * passes, and the check against a sequential sort. */
#ifndef LMDX_SAMPLES_RADIX_RADIX_KERNEL_H_
#define LMDX_SAMPLES_RADIX_RADIX_KERNEL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Key i, the same whatever the worker count. */
uint32_t radix_key_value(uint64_t i);

/* Passes of radix_bits bits each to cover 32-bit keys. */
int radix_passes(int radix_bits);

/* counts[d] = how many of keys[0 .. count) have digit d at shift (buckets = 2^bits). */
void radix_histogram(const uint32_t* keys, int count, int shift, int buckets, size_t* counts);

/* keys[0 .. count) into local, stably sorted by the digit at shift; counts is their histogram.
 * positions is scratch for buckets entries. */
void radix_sort_by_digit(const uint32_t* keys, int count, int shift, int buckets,
                         const size_t* counts, size_t* positions, uint32_t* local);

/* Where worker w's keys of each digit go in the sorted array: offsets[d] = the keys of smaller
 * digits (every worker's) plus those of digit d of workers before w. histograms holds one row of
 * buckets counts per worker. */
void radix_offsets(const uint32_t* histograms, int workers, int buckets, int w, size_t* offsets);

/* Compares the sorted keys with a sequential sort (qsort) of the same keys; prints `verified`, or
 * the first key that differs after "PROGRAM: ", and returns the exit status (0 or 1). */
int radix_check(const char* program, const uint32_t* sorted, int keys);

#ifdef __cplusplus
}
#endif

#endif /* LMDX_SAMPLES_RADIX_RADIX_KERNEL_H_ */

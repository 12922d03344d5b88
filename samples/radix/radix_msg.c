/* samples/radix, message version: the same sort written with explicit LMDX messages, to compare
 * with the shared-memory version (`lmdx bench protocols` runs both).
 *
 * SPMD: every rank holds its band of the keys in private memory. A pass counts the digits of the
 * band, sends its histogram to every rank, sorts its band by the digit locally, and sends each
 * rank the part of its runs that falls in that rank's band of the sorted array; since every rank
 * has every histogram, the receiver knows where each key it gets belongs. At the end rank 0
 * gathers the bands and checks them against a sequential sort. The time printed runs from a
 * barrier after the keys are made to the end of the last pass on the slowest rank.
 *
 *   ./lmdx run bazel-bin/samples/radix/radix_msg [-n 4] [-- --keys N --radix-bits B]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample.h"
#include "samples/radix/radix_kernel.h"

static const char* const kProgram = "radix_msg";

enum { kTagHistogram = 1, kTagKeys = 2, kTagResult = 3 };

struct layout {
  int keys;
  int size;
  int buckets;
  const uint32_t* histograms; /* every rank's, one row each */
};

/* The part of [start, start + count) inside rank q's band, as [*from, *to); empty when to <= from.
 */
static void overlap(const struct layout* l, int q, size_t start, size_t count, size_t* from,
                    size_t* to) {
  int first = 0;
  int end = 0;
  sample_band(l->keys, q, l->size, &first, &end);
  *from = start > (size_t)first ? start : (size_t)first;
  *to = start + count < (size_t)end ? start + count : (size_t)end;
}

/* Sends rank q, in digit order, the keys of this rank's runs (local, sorted by digit) that land in
 * q's band; out is scratch for the band's keys. Returns how many went. */
static size_t keys_for(const struct layout* l, int q, const uint32_t* local, const size_t* counts,
                       const size_t* offsets, uint32_t* out) {
  size_t sent = 0;
  size_t run_start = 0;
  for (int d = 0; d < l->buckets; d++) {
    size_t from = 0;
    size_t to = 0;
    overlap(l, q, offsets[d], counts[d], &from, &to);
    if (to > from) {
      memcpy(out + sent, local + run_start + (from - offsets[d]), (to - from) * sizeof *out);
      sent += to - from;
    }
    run_start += counts[d];
  }
  return sent;
}

/* Places the keys rank s sent (in its digit order) into this rank's band of the sorted array. */
static void place(const struct layout* l, int rank, int s, const uint32_t* received, uint32_t* band,
                  int first, size_t* s_offsets, size_t* s_counts) {
  radix_offsets(l->histograms, l->size, l->buckets, s, s_offsets);
  for (int d = 0; d < l->buckets; d++) s_counts[d] = l->histograms[(size_t)s * l->buckets + d];
  size_t at = 0;
  for (int d = 0; d < l->buckets; d++) {
    size_t from = 0;
    size_t to = 0;
    overlap(l, rank, s_offsets[d], s_counts[d], &from, &to);
    if (to > from) {
      memcpy(band + (from - (size_t)first), received + at, (to - from) * sizeof *band);
      at += to - from;
    }
  }
}

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank();
  int size = lmdx_size();
  int keys = 1 << 21;
  int radix_bits = 8;
  struct sample_flag flags[] = {
      {"keys", &keys, 1, 1 << 26, "keys to sort"},
      {"radix-bits", &radix_bits, 1, 16, "bits per digit (one pass per digit)"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 2, NULL);
  if (status >= 0) {
    if (status != 0) lmdx_abort(status, "radix_msg: bad arguments");
    lmdx_finalize();
    return 0;
  }
  status = 0;
  int buckets = 1 << radix_bits;
  int first = 0;
  int end = 0;
  sample_band(keys, rank, size, &first, &end);
  int count = end - first;
  int most = (keys + size - 1) / size;
  uint32_t* band = malloc((size_t)count * sizeof *band + 1);
  uint32_t* local = malloc((size_t)count * sizeof *local + 1);
  uint32_t* buffer = malloc((size_t)most * sizeof *buffer + 1);
  uint32_t* histograms = malloc((size_t)size * buckets * sizeof *histograms);
  size_t* counts = malloc((size_t)buckets * sizeof *counts);
  size_t* offsets = malloc((size_t)buckets * sizeof *offsets);
  size_t* s_offsets = malloc((size_t)buckets * sizeof *s_offsets);
  size_t* s_counts = malloc((size_t)buckets * sizeof *s_counts);
  if (!band || !local || !buffer || !histograms || !counts || !offsets || !s_offsets || !s_counts) {
    lmdx_abort(1, "radix_msg: no memory");
  }
  for (int i = 0; i < count; i++) band[i] = radix_key_value((uint64_t)(first + i));
  struct layout l = {keys, size, buckets, histograms};

  lmdx_barrier_all();
  double start = sample_now();
  for (int p = 0; p < radix_passes(radix_bits); p++) {
    int shift = p * radix_bits;
    radix_histogram(band, count, shift, buckets, counts);
    uint32_t* mine = histograms + (size_t)rank * buckets;
    for (int d = 0; d < buckets; d++) mine[d] = (uint32_t)counts[d];
    for (int q = 0; q < size; q++) {
      if (q != rank) lmdx_send_tagged(q, kTagHistogram, mine, (size_t)buckets * sizeof *mine, 0);
    }
    for (int q = 0; q < size; q++) {
      if (q != rank) {
        lmdx_recv_tagged(q, kTagHistogram, histograms + (size_t)q * buckets,
                         (size_t)buckets * sizeof *histograms, NULL);
      }
    }
    radix_sort_by_digit(band, count, shift, buckets, counts, offsets, local);
    radix_offsets(histograms, size, buckets, rank, offsets);
    for (int q = 0; q < size; q++) {
      if (q == rank) continue;
      size_t sent = keys_for(&l, q, local, counts, offsets, buffer);
      lmdx_send_tagged(q, kTagKeys, buffer, sent * sizeof *buffer, 0);
    }
    /* My own keys that stay in my band, then everybody else's. */
    keys_for(&l, rank, local, counts, offsets, buffer);
    place(&l, rank, rank, buffer, band, first, s_offsets, s_counts);
    for (int s = 0; s < size; s++) {
      if (s == rank) continue;
      lmdx_recv_tagged(s, kTagKeys, buffer, (size_t)most * sizeof *buffer, NULL);
      place(&l, rank, s, buffer, band, first, s_offsets, s_counts);
    }
  }
  lmdx_barrier_all();
  double seconds = sample_now() - start;

  if (rank != 0) {
    lmdx_send_tagged(0, kTagResult, band, (size_t)count * sizeof *band, 0);
  } else {
    uint32_t* sorted = malloc((size_t)keys * sizeof *sorted);
    if (sorted == NULL) lmdx_abort(1, "radix_msg: no memory for the gathered keys");
    memcpy(sorted, band, (size_t)count * sizeof *band);
    for (int q = 1; q < size; q++) {
      int q_first = 0;
      int q_end = 0;
      sample_band(keys, q, size, &q_first, &q_end);
      lmdx_recv_tagged(q, kTagResult, sorted + q_first, (size_t)(q_end - q_first) * sizeof *sorted,
                       NULL);
    }
    printf("%s: %d keys, %d-bit digits, %d ranks: %.3f s\n", kProgram, keys, radix_bits, size,
           seconds);
    status = radix_check(kProgram, sorted, keys);
    free(sorted);
  }
  free(band);
  free(local);
  free(buffer);
  free(histograms);
  free(counts);
  free(offsets);
  free(s_offsets);
  free(s_counts);
  if (status != 0) lmdx_abort(status, "radix_msg: the keys differ from a sequential sort");
  lmdx_finalize();
  return 0;
}

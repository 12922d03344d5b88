/* samples/prodcons, message version: producers and consumers with explicit LMDX messages instead
 * of a shared buffer and semaphores, to compare with the shared version (`lmdx bench protocols`
 * runs both).
 *
 * As in the shared version, main (rank 0) starts --producers and --consumers LMDX threads and
 * joins them; here producer p runs on node p mod N and consumer c on node (P + c) mod N, so that
 * each knows where the others are. The bounded buffer becomes flow control: producer p sends
 * item k of its sequence to consumer (p + k) mod C (lmdx_send_tagged, one tag per consumer), and
 * keeps at most BUFSIZE items outstanding per consumer; a consumer returns credits every
 * BUFSIZE / 2 items (a tag per producer and consumer). A producer ends by sending each consumer an
 * end marker; a consumer stops when every producer's has come. Each consumer checks that every
 * producer's items come in increasing order, counts, sums and hashes them, and sends its tally to
 * main, which checks the counts and the sum against the sequential values (and, with one producer
 * and one consumer, the hash of the whole sequence) and prints `verified`. The time printed runs
 * from the first start to the last join, as the shared version's does.
 *
 *   ./lmdx run bazel-bin/samples/prodcons/prodcons_msg [-n 4] [-- --items N --producers P
 *       --consumers C]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "samples/common/sample.h"

#define BUFSIZE 10 /* the shared version's buffer: items in flight per producer and consumer */
#define CREDIT_BATCH (BUFSIZE / 2)
#define MAX_PRODUCERS 8
#define MAX_CONSUMERS 8
#define ITEM_STRIDE 1000000
#define END_OF_ITEMS (-1)
#define HASH_START 2166136261u

enum {
  kTagItems = 100,   /* + consumer: items for it */
  kTagCredits = 200, /* + producer * MAX_CONSUMERS + consumer: credits from one consumer */
  kTagTally = 300,   /* + consumer: its tally, to main */
  kTagRun = 400,     /* + role: the run's parameters, from main */
};

static const char* const kProgram = "prodcons_msg";

struct prodcons_run {
  int producers;
  int consumers;
  int items;
};

struct tally {
  int64_t count;
  uint64_t sum;
  uint32_t hash;
  int64_t errors; /* items out of order or not any producer's */
};

static uint32_t hash_step(uint32_t hash, int item) {
  uint32_t value = (uint32_t)item;
  for (int byte = 0; byte < 4; byte++) hash = (hash ^ ((value >> (8 * byte)) & 0xffu)) * 16777619u;
  return hash;
}

static int producer_node(int p) { return p % lmdx_size(); }
static int consumer_node(int c, int producers) { return (producers + c) % lmdx_size(); }

static struct prodcons_run receive_run(int tag) {
  struct prodcons_run run;
  lmdx_recv_tagged(0, kTagRun + tag, &run, sizeof run, NULL);
  return run;
}

static void* producer(void* arg) {
  int p = (int)(intptr_t)arg;
  struct prodcons_run run = receive_run(p);
  int outstanding[MAX_CONSUMERS] = {0};
  for (int k = 0; k <= run.items; k++) {
    /* The last round sends every consumer the end marker. */
    int first_c = k < run.items ? (p + k) % run.consumers : 0;
    int last_c = k < run.items ? first_c : run.consumers - 1;
    for (int c = first_c; c <= last_c; c++) {
      while (outstanding[c] >= BUFSIZE) { /* the buffer is full: wait for credits */
        int credits = 0;
        lmdx_recv_tagged(consumer_node(c, run.producers), kTagCredits + p * MAX_CONSUMERS + c,
                         &credits, sizeof credits, NULL);
        outstanding[c] -= credits;
      }
      int item = k < run.items ? p * ITEM_STRIDE + k : END_OF_ITEMS;
      lmdx_send_tagged(consumer_node(c, run.producers), kTagItems + c, &item, sizeof item, 0);
      outstanding[c]++;
    }
  }
  return NULL;
}

static void* consumer(void* arg) {
  int c = (int)(intptr_t)arg;
  struct prodcons_run run = receive_run(MAX_PRODUCERS + c);
  int last[MAX_PRODUCERS];
  int unreturned[MAX_PRODUCERS] = {0};
  for (int p = 0; p < run.producers; p++) last[p] = -1;
  struct tally t = {0, 0, HASH_START, 0};
  int ended = 0;
  while (ended < run.producers) {
    int item = 0;
    lmdx_recv_tagged(LMDX_ANY_SOURCE, kTagItems + c, &item, sizeof item, NULL);
    if (item == END_OF_ITEMS) {
      ended++;
      continue; /* no credit: the producer sends nothing more to this consumer */
    }
    int p = item / ITEM_STRIDE;
    int k = item % ITEM_STRIDE;
    if (item < 0 || p >= run.producers || k >= run.items || k <= last[p]) {
      t.errors++;
      continue;
    }
    last[p] = k;
    t.count++;
    t.sum += (uint64_t)item;
    t.hash = hash_step(t.hash, item);
    if (++unreturned[p] == CREDIT_BATCH) {
      lmdx_send_tagged(producer_node(p), kTagCredits + p * MAX_CONSUMERS + c, &unreturned[p],
                       sizeof unreturned[p], 0);
      unreturned[p] = 0;
    }
  }
  lmdx_send_tagged(0, kTagTally + c, &t, sizeof t, 0);
  return NULL;
}

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  int items = 10000;
  int producers = 1;
  int consumers = 1;
  struct sample_flag flags[] = {
      {"items", &items, 1, 200000, "items per producer"},
      {"producers", &producers, 1, MAX_PRODUCERS, "producer threads"},
      {"consumers", &consumers, 1, MAX_CONSUMERS, "consumer threads"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 3, NULL);
  if (status >= 0) return status;

  struct prodcons_run run = {producers, consumers, items};
  double start = sample_now();
  lmdx_thread_t threads[MAX_PRODUCERS + MAX_CONSUMERS];
  for (int p = 0; p < producers; p++) {
    threads[p] = lmdx_start_thread_on(producer_node(p), producer, (void*)(intptr_t)p);
    lmdx_send_tagged(producer_node(p), kTagRun + p, &run, sizeof run, 0);
  }
  for (int c = 0; c < consumers; c++) {
    threads[producers + c] =
        lmdx_start_thread_on(consumer_node(c, producers), consumer, (void*)(intptr_t)c);
    lmdx_send_tagged(consumer_node(c, producers), kTagRun + MAX_PRODUCERS + c, &run, sizeof run, 0);
  }
  for (int i = 0; i < producers + consumers; i++) lmdx_join_thread(threads[i]);
  double seconds = sample_now() - start;

  int64_t total = 0;
  uint64_t sum = 0;
  int failed = 0;
  struct tally only = {0, 0, 0, 0};
  for (int c = 0; c < consumers; c++) {
    struct tally t;
    lmdx_recv_tagged(consumer_node(c, producers), kTagTally + c, &t, sizeof t, NULL);
    if (t.errors != 0) {
      printf("%s: consumer %d found %lld items out of order or unknown\n", kProgram, c,
             (long long)t.errors);
      failed = 1;
    }
    total += t.count;
    sum += t.sum;
    only = t;
  }
  uint64_t expected_sum = 0;
  uint32_t expected_hash = HASH_START;
  for (int p = 0; p < producers; p++) {
    for (int k = 0; k < items; k++) {
      expected_sum += (uint64_t)(p * ITEM_STRIDE + k);
      expected_hash = hash_step(expected_hash, p * ITEM_STRIDE + k);
    }
  }
  printf(
      "%s: %d items from %d producer%s to %d consumer%s, at most %d in flight per pair, on %d "
      "nodes: "
      "%.3f s\n",
      kProgram, producers * items, producers, producers == 1 ? "" : "s", consumers,
      consumers == 1 ? "" : "s", BUFSIZE, lmdx_size(), seconds);
  if (total != (int64_t)producers * items) {
    printf("%s: the consumers took %lld items, expected %lld\n", kProgram, (long long)total,
           (long long)producers * items);
    failed = 1;
  } else if (sum != expected_sum) {
    printf("%s: the items sum to %llu, expected %llu\n", kProgram, (unsigned long long)sum,
           (unsigned long long)expected_sum);
    failed = 1;
  } else if (producers == 1 && consumers == 1 && only.hash != expected_hash) {
    printf("%s: the items hash to %08x, expected %08x\n", kProgram, only.hash, expected_hash);
    failed = 1;
  }
  if (!failed) printf("verified\n");
  return failed;
}

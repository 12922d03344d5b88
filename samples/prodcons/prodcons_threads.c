/* samples/prodcons, plain-threads version: the producers and consumers of the MDX sample on POSIX
 * threads in one process, with no LMDX at all: the same circular queue of 10 slots in private
 * memory, guarded by the same three semaphores (POSIX ones here: `s` the critical section, `n` the
 * items waiting, `e` the free slots), the same items, end markers, checks and `--wrong-result`.
 * It is the reference `lmdx bench protocols` shows beside the shared version, where every item
 * costs semaphore round trips to a manager node and two page faults.
 *
 * The producers and consumers are the threads, whatever --workers says: the work is fixed by
 * --producers and --consumers, not by how many run it. --workers is the number of CPUs they may
 * run on (pinned to that many of the CPUs this process may use, at most all of them), which
 * `lmdx bench protocols` sets from the node count as it sets the other samples' threads, so that
 * the row beside N nodes is the program on N processors. The time printed runs from the first start
 * to the last join, as the shared version's does. Main checks every consumer's order, count, sum
 * and hash, that every item was taken exactly once, and with one producer and one consumer the hash
 * of the whole sequence, all against values computed sequentially; it prints `verified`, or what
 * differs and exits 1.
 *
 *   bazel-bin/samples/prodcons/prodcons_threads [--items N --producers P --consumers C
 *       --workers CPUS --wrong-result]
 */
#define _GNU_SOURCE /* CPU sets and pthread_attr_setaffinity_np */

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/common/sample_flags.h"

#define BUFSIZE 10
#define MAX_PRODUCERS 8
#define MAX_CONSUMERS 8
#define MAX_TOTAL 200000       /* items of all producers together */
#define ITEM_STRIDE 1000000    /* item = producer * ITEM_STRIDE + its number */
#define END_OF_ITEMS (-1)      /* the end marker */
#define HASH_START 2166136261u /* FNV-1a */

static const char* const kProgram = "prodcons_threads";

/* What a consumer saw. */
struct tally {
  int count;
  uint64_t sum;
  uint32_t hash;          /* of the items in the order taken */
  int errors;             /* items out of order or not any producer's */
  int first_bad_position; /* of the first such item, in this consumer's sequence */
  int first_bad_item;     /* what it was */
  int first_bad_expected; /* one consumer: the item due; several: the last of that producer */
};

/* What main tells the threads, written before they start, and what they share. */
static struct {
  int producers;
  int consumers;
  int items; /* per producer */
  int wrong_result;
  int buffer[BUFSIZE];
  sem_t s, n, e;
  int rear;           /* where the next item goes, when there are several producers; under s */
  int front;          /* where the next item is taken, when there are several consumers; under s */
  int producers_done; /* under s */
  struct tally tallies[MAX_CONSUMERS];
  int* received; /* consumer c's items in order at c * MAX_TOTAL */
} run;

static int item_of(int producer, int number) { return producer * ITEM_STRIDE + number; }

static uint32_t hash_step(uint32_t hash, int item) {
  uint32_t value = (uint32_t)item;
  for (int byte = 0; byte < 4; byte++) hash = (hash ^ ((value >> (8 * byte)) & 0xffu)) * 16777619u;
  return hash;
}

static void put(int item, int* rear) {
  sem_wait(&run.e); /* wait for a free slot */
  sem_wait(&run.s);
  run.buffer[*rear] = item;
  *rear = (*rear + 1) % BUFSIZE;
  sem_post(&run.s);
  sem_post(&run.n); /* one more item */
}

static int get(int* front) {
  sem_wait(&run.n); /* wait for an item */
  sem_wait(&run.s);
  int item = run.buffer[*front];
  *front = (*front + 1) % BUFSIZE;
  sem_post(&run.s);
  sem_post(&run.e); /* one more free slot */
  return item;
}

static void* prod(void* arg) {
  int p = (int)(intptr_t)arg;
  /* As in the shared version, a lone producer keeps the rear in a local variable. */
  int re = 0;
  int* rear = run.producers == 1 ? &re : &run.rear;
  for (int k = 0; k < run.items; k++) {
    int item = item_of(p, k);
    if (run.wrong_result && p == 0 && k == run.items / 2) item = item_of(p, k + 1);
    put(item, rear);
  }
  /* The last producer to finish stops the consumers: its end markers come after every item. */
  sem_wait(&run.s);
  int last = ++run.producers_done == run.producers;
  sem_post(&run.s);
  if (last) {
    for (int c = 0; c < run.consumers; c++) put(END_OF_ITEMS, rear);
  }
  return NULL;
}

/* Checks one item against what this consumer took before; last[p] is the number of producer p's
 * item it took last (-1: none yet). */
static void check_item(struct tally* t, int item, int last[], int in_sequence) {
  int p = item / ITEM_STRIDE;
  int k = item % ITEM_STRIDE;
  int known = item >= 0 && p < run.producers && k < run.items;
  int in_order = known && (in_sequence ? k == last[p] + 1 : k > last[p]);
  if (!in_order) {
    if (t->errors == 0) {
      t->first_bad_position = t->count;
      t->first_bad_item = item;
      t->first_bad_expected = known ? item_of(p, in_sequence ? last[p] + 1 : last[p]) : -1;
    }
    t->errors++;
  }
  if (known && k > last[p]) last[p] = k;
}

static void* cons(void* arg) {
  int c = (int)(intptr_t)arg;
  int in_sequence = run.consumers == 1;
  int fr = 0;
  int* front = run.consumers == 1 ? &fr : &run.front;
  int last[MAX_PRODUCERS];
  for (int p = 0; p < run.producers; p++) last[p] = -1;
  int* log = run.received + (size_t)c * MAX_TOTAL;
  struct tally t = {0, 0, HASH_START, 0, -1, 0, 0};
  for (;;) {
    int item = get(front);
    if (item == END_OF_ITEMS) break;
    check_item(&t, item, last, in_sequence);
    if (t.count < MAX_TOTAL) log[t.count] = item;
    t.count++;
    t.sum += (uint64_t)item;
    t.hash = hash_step(t.hash, item);
  }
  run.tallies[c] = t;
  return (void*)(intptr_t)t.count;
}

/* ---- main's checks, against values computed sequentially ---------------------------------- */

static int check_consumer(int c, const struct tally* t, intptr_t joined_count, int in_sequence) {
  if (t->errors != 0) {
    printf("%s: consumer %d's item %d is %d, %s %d\n", kProgram, c, t->first_bad_position,
           t->first_bad_item, in_sequence ? "expected" : "after", t->first_bad_expected);
    printf("%s: consumer %d found %d items out of order\n", kProgram, c, t->errors);
    return 1;
  }
  if (t->count > MAX_TOTAL) {
    printf("%s: consumer %d took %d items, more than all producers put\n", kProgram, c, t->count);
    return 1;
  }
  if (joined_count != t->count) {
    printf("%s: consumer %d returned %ld but counted %d items\n", kProgram, c, (long)joined_count,
           t->count);
    return 1;
  }
  const int* log = run.received + (size_t)c * MAX_TOTAL;
  uint32_t hash = HASH_START;
  for (int i = 0; i < t->count; i++) hash = hash_step(hash, log[i]);
  if (hash != t->hash) {
    printf("%s: consumer %d's log hashes to %08x, its tally says %08x\n", kProgram, c, hash,
           t->hash);
    return 1;
  }
  return 0;
}

/* Every item taken exactly once, by whichever consumer. */
static int check_each_item_once(void) {
  unsigned char* taken = calloc((size_t)run.producers * run.items, 1);
  if (taken == NULL) {
    printf("%s: no memory for the check\n", kProgram);
    return 1;
  }
  int status = 0;
  for (int c = 0; c < run.consumers && status == 0; c++) {
    const int* log = run.received + (size_t)c * MAX_TOTAL;
    for (int i = 0; i < run.tallies[c].count; i++) {
      size_t slot = (size_t)(log[i] / ITEM_STRIDE) * run.items + log[i] % ITEM_STRIDE;
      if (taken[slot]) {
        printf("%s: item %d was taken twice\n", kProgram, log[i]);
        status = 1;
        break;
      }
      taken[slot] = 1;
    }
  }
  for (int p = 0; p < run.producers && status == 0; p++) {
    for (int k = 0; k < run.items; k++) {
      if (!taken[(size_t)p * run.items + k]) {
        printf("%s: item %d was never taken\n", kProgram, item_of(p, k));
        status = 1;
        break;
      }
    }
  }
  free(taken);
  return status;
}

static int check_results(const intptr_t counts[]) {
  int in_sequence = run.consumers == 1;
  long total = 0;
  uint64_t sum = 0;
  for (int c = 0; c < run.consumers; c++) {
    if (check_consumer(c, &run.tallies[c], counts[c], in_sequence) != 0) return 1;
    total += run.tallies[c].count;
    sum += run.tallies[c].sum;
  }
  long expected_total = (long)run.producers * run.items;
  if (total != expected_total) {
    printf("%s: the consumers took %ld items, expected %ld\n", kProgram, total, expected_total);
    return 1;
  }
  if (check_each_item_once() != 0) return 1;
  uint64_t expected_sum = 0;
  uint32_t expected_hash = HASH_START;
  for (int p = 0; p < run.producers; p++) {
    for (int k = 0; k < run.items; k++) {
      expected_sum += (uint64_t)item_of(p, k);
      expected_hash = hash_step(expected_hash, item_of(p, k));
    }
  }
  if (sum != expected_sum) {
    printf("%s: the items sum to %llu, expected %llu\n", kProgram, (unsigned long long)sum,
           (unsigned long long)expected_sum);
    return 1;
  }
  /* One producer and one consumer: the whole sequence is known in advance. */
  if (run.producers == 1 && run.consumers == 1 && run.tallies[0].hash != expected_hash) {
    printf("%s: the items hash to %08x, expected %08x\n", kProgram, run.tallies[0].hash,
           expected_hash);
    return 1;
  }
  printf("verified\n");
  return 0;
}

/* The first `cpus` of the CPUs this process may use (all of them when there are fewer); returns
 * how many the set holds. */
static int first_cpus(int cpus, cpu_set_t* set) {
  cpu_set_t allowed;
  CPU_ZERO(set);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 0;
  int taken = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && taken < cpus; cpu++) {
    if (CPU_ISSET(cpu, &allowed)) {
      CPU_SET(cpu, set);
      taken++;
    }
  }
  return taken;
}

static pthread_t start(void* (*fn)(void*), int index, const pthread_attr_t* attr) {
  pthread_t thread;
  int error = pthread_create(&thread, attr, fn, (void*)(intptr_t)index);
  if (error != 0) {
    fprintf(stderr, "%s: cannot start a thread: %s\n", kProgram, strerror(error));
    exit(1);
  }
  return thread;
}

int main(int argc, char** argv) {
  int items = 10000;
  int producers = 1;
  int consumers = 1;
  int workers = 1;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"items", &items, 1, MAX_TOTAL, "items per producer"},
      {"producers", &producers, 1, MAX_PRODUCERS, "producer threads"},
      {"consumers", &consumers, 1, MAX_CONSUMERS, "consumer threads"},
      {"workers", &workers, 1, 1024, "CPUs the threads run on (at most this process's)"},
  };
  int status = sample_parse_flags(kProgram, argc, argv, flags, 4, &wrong_result);
  if (status >= 0) return status;
  if ((long)items * producers > MAX_TOTAL) {
    fprintf(stderr, "%s: %d producers of %d items each make more than %d items\n", kProgram,
            producers, items, MAX_TOTAL);
    return 2;
  }

  run.producers = producers;
  run.consumers = consumers;
  run.items = items;
  run.wrong_result = wrong_result;
  run.received = malloc((size_t)consumers * MAX_TOTAL * sizeof *run.received);
  if (run.received == NULL) {
    fprintf(stderr, "%s: no memory for the consumers' logs\n", kProgram);
    return 1;
  }
  sem_init(&run.s, 0, 1);
  sem_init(&run.n, 0, 0);
  sem_init(&run.e, 0, BUFSIZE);
  cpu_set_t cpus;
  int cpu_count = first_cpus(workers, &cpus);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (cpu_count > 0) pthread_attr_setaffinity_np(&attr, sizeof cpus, &cpus);

  double begin = sample_now();
  pthread_t threads[MAX_PRODUCERS + MAX_CONSUMERS];
  for (int p = 0; p < producers; p++) threads[p] = start(prod, p, &attr);
  for (int c = 0; c < consumers; c++) threads[producers + c] = start(cons, c, &attr);
  intptr_t counts[MAX_CONSUMERS];
  for (int i = 0; i < producers + consumers; i++) {
    void* result = NULL;
    pthread_join(threads[i], &result);
    if (i >= producers) counts[i - producers] = (intptr_t)result;
  }
  double seconds = sample_now() - begin;

  printf(
      "%s: %d items from %d producer%s to %d consumer%s through a %d-slot buffer on %d CPU%s: "
      "%.3f s\n",
      kProgram, producers * items, producers, producers == 1 ? "" : "s", consumers,
      consumers == 1 ? "" : "s", BUFSIZE, cpu_count, cpu_count == 1 ? "" : "s", seconds);
  status = check_results(counts);
  pthread_attr_destroy(&attr);
  sem_destroy(&run.s);
  sem_destroy(&run.n);
  sem_destroy(&run.e);
  free(run.received);
  return status;
}

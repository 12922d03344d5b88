/* samples/prodcons: the producer-consumer program of the MDX thesis (Ch. 4), in MDX's annotated
 * dialect, made finite and checked.
 *
 * A circular queue in the shared vector `buffer`, guarded by three semaphores as in the thesis:
 * `s` the critical section, `n` the items waiting, `e` the free slots. `prod` and `cons` are LMDX
 * threads, placed by the runtime on any node; main starts them and joins them.
 *
 * Producer p puts items p * 1,000,000 + 0, 1, 2, ... (--items of them, 10,000 by default). As in
 * the thesis, a single producer keeps the queue's rear in a local variable `re` and a single
 * consumer its front in `fr`. With several producers or consumers (--producers, --consumers) the
 * rear or the front lives in shared memory instead, guarded by `s` like the buffer; every item is
 * then slower, since the page of the indices moves between nodes too. The producer that finishes
 * last puts one end marker per consumer behind every item.
 *
 * Each consumer checks the order of what it takes (with one consumer, each producer's items must
 * come exactly in sequence; with several, each consumer sees every producer's items in increasing
 * order), counts them, sums them, hashes them in the order taken, and writes them to its row of
 * the shared log `received`. Main then checks every count, that every item was taken exactly once,
 * each consumer's hash against its log, the sum against the one computed sequentially, and with
 * one producer and one consumer the hash of the whole sequence. It prints `verified`, or what
 * differs and exits 1.
 *
 *   ./lmdx run prodcons -n 4 [-- --items N --producers P --consumers C --wrong-result]
 *
 * --wrong-result makes producer 0 put a wrong item in the middle of its sequence: a self-check of
 * the checks, which must then report it.
 */
#include <lmdx/lmdx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUFSIZE 10
#define DEFAULT_ITEMS 10000
#define MAX_PRODUCERS 8
#define MAX_CONSUMERS 8
#define MAX_TOTAL 200000       /* items of all producers together */
#define ITEM_STRIDE 1000000    /* item = producer * ITEM_STRIDE + its number */
#define END_OF_ITEMS (-1)      /* the end marker */
#define HASH_START 2166136261u /* FNV-1a */

/* What main tells the threads. */
struct prodcons_run {
  int producers;
  int consumers;
  int items; /* per producer */
  int wrong_result;
};

/* What the producers and consumers share besides the buffer, used only under the semaphore s. */
struct queue_ends {
  int rear;           /* where the next item goes, when there are several producers */
  int front;          /* where the next item is taken, when there are several consumers */
  int producers_done; /* producers that have put all their items */
};

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

LMDX_shared int buffer[BUFSIZE];
LMDX_shared struct queue_ends queue;
LMDX_shared struct prodcons_run run;
LMDX_shared struct tally tallies[MAX_CONSUMERS];
LMDX_shared int received[MAX_CONSUMERS][MAX_TOTAL]; /* each consumer's items, in order */

static int item_of(int producer, int number) { return producer * ITEM_STRIDE + number; }

static uint32_t hash_step(uint32_t hash, int item) {
  uint32_t value = (uint32_t)item;
  for (int byte = 0; byte < 4; byte++) {
    hash = (hash ^ ((value >> (8 * byte)) & 0xffu)) * 16777619u;
  }
  return hash;
}

/* Puts an item at *rear, the index of the queue's next free slot. */
static void put(int item, int* rear) {
  LMDX_sema_P(e); /* wait for a free slot */
  LMDX_sema_P(s);
  buffer[*rear] = item;
  *rear = (*rear + 1) % BUFSIZE;
  LMDX_sema_V(s);
  LMDX_sema_V(n); /* one more item */
}

/* Takes the item at *front, the index of the queue's oldest item. */
static int get(int* front) {
  LMDX_sema_P(n); /* wait for an item */
  LMDX_sema_P(s);
  int item = buffer[*front];
  *front = (*front + 1) % BUFSIZE;
  LMDX_sema_V(s);
  LMDX_sema_V(e); /* one more free slot */
  return item;
}

LMDX_thread prod(void* arg) {
  int p = (int)(intptr_t)arg;
  int items = run.items;
  int producers = run.producers;
  int consumers = run.consumers;
  int wrong_result = run.wrong_result;
  /* As in the thesis, a lone producer keeps the rear in a local variable; several share it. */
  int re = 0;
  int* rear = producers == 1 ? &re : &queue.rear;
  for (int k = 0; k < items; k++) {
    int item = item_of(p, k);
    if (wrong_result && p == 0 && k == items / 2) item = item_of(p, k + 1);
    put(item, rear);
  }
  /* The last producer to finish stops the consumers: its end markers come after every item. */
  LMDX_sema_P(s);
  queue.producers_done++;
  int last = queue.producers_done == producers;
  LMDX_sema_V(s);
  if (last) {
    for (int c = 0; c < consumers; c++) put(END_OF_ITEMS, rear);
  }
}

/* Checks one item against what this consumer took before; last[p] is the number of producer p's
 * item it took last (-1: none yet). */
static void check_item(struct tally* t, int item, int last[], int producers, int items,
                       int in_sequence) {
  int p = item / ITEM_STRIDE;
  int k = item % ITEM_STRIDE;
  int known = item >= 0 && p < producers && k < items;
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

LMDX_thread cons(void* arg) {
  int c = (int)(intptr_t)arg;
  int producers = run.producers;
  int in_sequence = run.consumers == 1;
  int items = run.items;
  /* As in the thesis, a lone consumer keeps the front in a local variable; several share it. */
  int fr = 0;
  int* front = run.consumers == 1 ? &fr : &queue.front;
  int last[MAX_PRODUCERS];
  for (int p = 0; p < producers; p++) last[p] = -1;
  struct tally t = {0, 0, HASH_START, 0, -1, 0, 0};
  for (;;) {
    int item = get(front);
    if (item == END_OF_ITEMS) break;
    check_item(&t, item, last, producers, items, in_sequence);
    if (t.count < MAX_TOTAL) received[c][t.count] = item;
    t.count++;
    t.sum += (uint64_t)item;
    t.hash = hash_step(t.hash, item);
  }
  tallies[c] = t;
  return (void*)(intptr_t)t.count;
}

/* ---- main's checks, against values computed sequentially ---------------------------------- */

static unsigned char taken[MAX_TOTAL]; /* main's: item (p, k) at p * items + k */

/* Each consumer's own findings, and its hash against its log. Returns 0 when all agree. */
static int check_consumer(int c, const struct tally* t, intptr_t joined_count, int in_sequence) {
  if (t->errors != 0) {
    if (in_sequence) {
      printf("prodcons: consumer %d's item %d is %d, expected %d\n", c, t->first_bad_position,
             t->first_bad_item, t->first_bad_expected);
    } else {
      printf("prodcons: consumer %d's item %d is %d, after %d\n", c, t->first_bad_position,
             t->first_bad_item, t->first_bad_expected);
    }
    printf("prodcons: consumer %d found %d items out of order\n", c, t->errors);
    return 1;
  }
  if (t->count > MAX_TOTAL) {
    printf("prodcons: consumer %d took %d items, more than all producers put\n", c, t->count);
    return 1;
  }
  if (joined_count != t->count) {
    printf("prodcons: consumer %d returned %ld but counted %d items\n", c, (long)joined_count,
           t->count);
    return 1;
  }
  uint32_t hash = HASH_START;
  for (int i = 0; i < t->count; i++) hash = hash_step(hash, received[c][i]);
  if (hash != t->hash) {
    printf("prodcons: consumer %d's log hashes to %08x, its tally says %08x\n", c, hash, t->hash);
    return 1;
  }
  return 0;
}

/* Every item taken exactly once, by whichever consumer. */
static int check_each_item_once(int producers, int consumers, int items) {
  memset(taken, 0, sizeof taken);
  for (int c = 0; c < consumers; c++) {
    for (int i = 0; i < tallies[c].count; i++) {
      int item = received[c][i];
      int slot = item / ITEM_STRIDE * items + item % ITEM_STRIDE;
      if (taken[slot]) {
        printf("prodcons: item %d was taken twice\n", item);
        return 1;
      }
      taken[slot] = 1;
    }
  }
  for (int p = 0; p < producers; p++) {
    for (int k = 0; k < items; k++) {
      if (!taken[p * items + k]) {
        printf("prodcons: item %d was never taken\n", item_of(p, k));
        return 1;
      }
    }
  }
  return 0;
}

static int check_results(int producers, int consumers, int items, const intptr_t counts[]) {
  int in_sequence = consumers == 1;
  long total = 0;
  uint64_t sum = 0;
  for (int c = 0; c < consumers; c++) {
    struct tally t = tallies[c];
    if (check_consumer(c, &t, counts[c], in_sequence) != 0) return 1;
    total += t.count;
    sum += t.sum;
  }
  long expected_total = (long)producers * items;
  if (total != expected_total) {
    printf("prodcons: the consumers took %ld items, expected %ld\n", total, expected_total);
    return 1;
  }
  if (check_each_item_once(producers, consumers, items) != 0) return 1;

  uint64_t expected_sum = 0;
  uint32_t expected_hash = HASH_START;
  for (int p = 0; p < producers; p++) {
    for (int k = 0; k < items; k++) {
      expected_sum += (uint64_t)item_of(p, k);
      expected_hash = hash_step(expected_hash, item_of(p, k));
    }
  }
  if (sum != expected_sum) {
    printf("prodcons: the items sum to %llu, expected %llu\n", (unsigned long long)sum,
           (unsigned long long)expected_sum);
    return 1;
  }
  /* One producer and one consumer: the whole sequence is known in advance. */
  if (producers == 1 && consumers == 1 && tallies[0].hash != expected_hash) {
    printf("prodcons: the items hash to %08x, expected %08x\n", tallies[0].hash, expected_hash);
    return 1;
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
  int items = DEFAULT_ITEMS;
  int producers = 1;
  int consumers = 1;
  int wrong_result = 0;
  for (int i = 1; i < argc; i++) {
    const char* value = i + 1 < argc ? argv[i + 1] : "";
    if (strcmp(argv[i], "--items") == 0 && parse_number(value, 1, MAX_TOTAL, &items)) {
      i++;
    } else if (strcmp(argv[i], "--producers") == 0 &&
               parse_number(value, 1, MAX_PRODUCERS, &producers)) {
      i++;
    } else if (strcmp(argv[i], "--consumers") == 0 &&
               parse_number(value, 1, MAX_CONSUMERS, &consumers)) {
      i++;
    } else if (strcmp(argv[i], "--wrong-result") == 0) {
      wrong_result = 1;
    } else {
      fprintf(stderr,
              "prodcons: bad argument '%s'; usage: prodcons [--items N] [--producers 1-%d] "
              "[--consumers 1-%d] [--wrong-result]\n",
              argv[i], MAX_PRODUCERS, MAX_CONSUMERS);
      return 2;
    }
  }
  if ((long)items * producers > MAX_TOTAL) {
    fprintf(stderr, "prodcons: %d producers of %d items each make more than %d items\n", producers,
            items, MAX_TOTAL);
    return 2;
  }

  run.producers = producers;
  run.consumers = consumers;
  run.items = items;
  run.wrong_result = wrong_result;
  LMDX_sema_init(s, 1);
  LMDX_sema_init(n, 0);
  LMDX_sema_init(e, BUFSIZE);

  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int p = 0; p < producers; p++) LMDX_start_thread(prod, (void*)(intptr_t)p);
  for (int c = 0; c < consumers; c++) LMDX_start_thread(cons, (void*)(intptr_t)c);
  /* A bare thread name joins the oldest thread this node started from it, so these loops join
   * the producers and the consumers in the order they were started. */
  for (int p = 0; p < producers; p++) LMDX_join_thread(prod);
  intptr_t counts[MAX_CONSUMERS];
  for (int c = 0; c < consumers; c++) counts[c] = (intptr_t)LMDX_join_thread(cons);
  double elapsed = seconds_since(&start);

  printf(
      "prodcons: %d items from %d producer%s to %d consumer%s through a %d-slot buffer on %d "
      "nodes: %.3f s\n",
      producers * items, producers, producers == 1 ? "" : "s", consumers, consumers == 1 ? "" : "s",
      BUFSIZE, lmdx_size(), elapsed);
  return check_results(producers, consumers, items, counts);
}

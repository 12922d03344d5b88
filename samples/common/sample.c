#include "samples/common/sample.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_WORKERS 1024

static void print_usage(FILE* out, const char* program, const struct sample_flag* flags, int count,
                        int has_wrong_result) {
  fprintf(out, "usage: lmdx run %s [-n NODES] [--protocol P] [--stats] [-- FLAGS]\nflags:\n",
          program);
  for (int i = 0; i < count; i++) {
    fprintf(out, "  --%-14s %s (%ld to %ld; default %d)\n", flags[i].name, flags[i].meaning,
            flags[i].low, flags[i].high, *flags[i].value);
  }
  if (has_wrong_result) {
    fprintf(out, "  --%-14s spoil the result on purpose: the check must report it\n",
            "wrong-result");
  }
}

static int parse_long(const char* text, long low, long high, long* out) {
  char* end = NULL;
  long value = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < low || value > high) return 0;
  *out = value;
  return 1;
}

int sample_parse_flags(const char* program, int argc, char** argv, const struct sample_flag* flags,
                       int count, int* wrong_result) {
  for (int i = 1; i < argc; i++) {
    const char* arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      print_usage(stdout, program, flags, count, wrong_result != NULL);
      return 0;
    }
    if (wrong_result != NULL && strcmp(arg, "--wrong-result") == 0) {
      *wrong_result = 1;
      continue;
    }
    const struct sample_flag* flag = NULL;
    for (int f = 0; f < count; f++) {
      if (strncmp(arg, "--", 2) == 0 && strcmp(arg + 2, flags[f].name) == 0) flag = &flags[f];
    }
    if (flag == NULL) {
      fprintf(stderr, "%s: unknown argument '%s'\n", program, arg);
      print_usage(stderr, program, flags, count, wrong_result != NULL);
      return 2;
    }
    long value = 0;
    if (i + 1 >= argc || !parse_long(argv[i + 1], flag->low, flag->high, &value)) {
      fprintf(stderr, "%s: %s needs a whole number from %ld to %ld, not '%s'\n", program, arg,
              flag->low, flag->high, i + 1 < argc ? argv[i + 1] : "");
      return 2;
    }
    *flag->value = (int)value;
    i++;
  }
  return -1;
}

double sample_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

void sample_band(int rows, int worker, int workers, int* first, int* end) {
  *first = (int)((long)rows * worker / workers);
  *end = (int)((long)rows * (worker + 1) / workers);
}

int sample_worker_node(int worker, int workers) {
  return (int)((long)worker * lmdx_size() / workers);
}

int sample_run_workers(const char* program, void* (*fn)(void*), int workers) {
  if (workers > MAX_WORKERS) {
    fprintf(stderr, "%s: at most %d workers, not %d\n", program, MAX_WORKERS, workers);
    return 1;
  }
  lmdx_thread_t threads[MAX_WORKERS];
  for (int w = 0; w < workers; w++) {
    threads[w] = lmdx_start_thread_on(sample_worker_node(w, workers), fn, (void*)(intptr_t)w);
  }
  int failed = 0;
  for (int w = 0; w < workers; w++) {
    void* result = lmdx_join_thread(threads[w]);
    if (result != NULL) {
      printf("%s: worker %d on node %d failed\n", program, w, sample_worker_node(w, workers));
      failed = 1;
    }
  }
  return failed;
}

void* sample_shared(const char* program, const char* name, size_t bytes) {
  void* address = lmdx_shared_var(name, bytes);
  if (address == NULL) {
    char why[256];
    snprintf(why, sizeof why, "%s: no shared variable '%s' of %zu bytes", program, name, bytes);
    lmdx_abort(1, why);
  }
  return address;
}

const char* sample_protocol(const void* address) {
  const char* name = lmdx_protocol_of(address);
  return name != NULL ? name : "?";
}

#include "samples/common/sample_flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void print_usage(FILE* out, const char* program, const struct sample_flag* flags, int count,
                        int has_wrong_result) {
  fprintf(out, "usage: %s [flags]\nflags:\n", program);
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

#include "samples/common/sample_threads.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sample_run_threads(const char* program, void* (*fn)(void*), int workers) {
  pthread_t* threads = malloc((size_t)workers * sizeof *threads);
  if (threads == NULL) {
    fprintf(stderr, "%s: no memory for %d threads\n", program, workers);
    exit(1);
  }
  for (int w = 0; w < workers; w++) {
    int error = pthread_create(&threads[w], NULL, fn, (void*)(intptr_t)w);
    if (error != 0) {
      fprintf(stderr, "%s: cannot start worker %d: %s\n", program, w, strerror(error));
      exit(1);
    }
  }
  int failed = 0;
  for (int w = 0; w < workers; w++) {
    void* result = NULL;
    pthread_join(threads[w], &result);
    if (result != NULL) {
      printf("%s: worker %d failed\n", program, w);
      failed = 1;
    }
  }
  free(threads);
  return failed;
}

void* sample_private(const char* program, size_t bytes) {
  /* Large blocks from malloc start 16 bytes past a page boundary here: lu's block updates ran about
   * a third slower on such a matrix than on LMDX's page-aligned variable, a difference that had
   * nothing to do with keeping memory coherent. */
  void* memory = NULL;
  if (posix_memalign(&memory, 4096, bytes > 0 ? bytes : 1) != 0) {
    fprintf(stderr, "%s: no memory for %zu bytes\n", program, bytes);
    exit(1);
  }
  return memory;
}

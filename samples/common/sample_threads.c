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

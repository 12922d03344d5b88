#include "samples/common/sample.h"

#include <stdint.h>
#include <stdio.h>

#define MAX_WORKERS 1024

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

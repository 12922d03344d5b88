/* What the plain-threads versions of the samples share: starting their workers as POSIX threads
 * in one process. These versions are the reference for the LMDX ones, the same kernel over
 * private memory (malloc), so nothing here or in them calls LMDX. */
#ifndef LMDX_SAMPLES_COMMON_SAMPLE_THREADS_H_
#define LMDX_SAMPLES_COMMON_SAMPLE_THREADS_H_

#include "samples/common/sample_flags.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Starts fn((void*)w) on a POSIX thread for every worker w and joins them all. Returns 0, or
 * prints which worker failed (returned other than NULL) and returns 1. A worker that cannot start
 * ends the process with status 1: those started would wait for it at their barrier for ever. */
int sample_run_threads(const char* program, void* (*fn)(void*), int workers);

#ifdef __cplusplus
}
#endif

#endif /* LMDX_SAMPLES_COMMON_SAMPLE_THREADS_H_ */

/* samples/common: what the LMDX samples share: where their workers run, how they start them and
 * how they find their shared variables (the flags, clock and bands, which the MPI versions use
 * too, are in sample_flags.h). Each sample is an LMDX program in threads style:
 * main runs on rank 0, starts one LMDX thread per worker on the nodes, joins them and checks the
 * result against a sequential computation of its own. */
#ifndef LMDX_SAMPLES_COMMON_SAMPLE_H_
#define LMDX_SAMPLES_COMMON_SAMPLE_H_

#include <lmdx/lmdx.h>

#include "samples/common/sample_flags.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The node that runs worker w: consecutive workers share a node, in rank order. */
int sample_worker_node(int worker, int workers);

/* Starts fn((void*)w) for every worker w on its node and joins them all. Returns 0, or prints
 * which worker failed and returns 1. */
int sample_run_workers(const char* program, void* (*fn)(void*), int workers);

/* The variable `name` of `bytes` bytes (lmdx_shared_var), or prints why not and ends the job. */
void* sample_shared(const char* program, const char* name, size_t bytes);

/* "protocol P" of the variable at address, for the result line. */
const char* sample_protocol(const void* address);

#ifdef __cplusplus
}
#endif

#endif /* LMDX_SAMPLES_COMMON_SAMPLE_H_ */

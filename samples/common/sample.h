/* samples/common: what the samples share: their flags, their clock, where their workers run and
 * how a worker's share of the rows is chosen. Each sample is an LMDX program in threads style:
 * main runs on rank 0, starts one LMDX thread per worker on the nodes, joins them and checks the
 * result against a sequential computation of its own. */
#ifndef LMDX_SAMPLES_COMMON_SAMPLE_H_
#define LMDX_SAMPLES_COMMON_SAMPLE_H_

#include <lmdx/lmdx.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A flag `--NAME VALUE` that takes a whole number from low to high. */
struct sample_flag {
  const char* name; /* without the dashes */
  int* value;       /* holds the default, receives the value */
  long low;
  long high;
  const char* meaning; /* for the usage line */
};

/* Parses argv[1..]: the flags, `--wrong-result` when wrong_result is not NULL (a self-check: the
 * sample spoils its own result, and its check must then report it), and `--help`. Returns -1 to
 * go on; otherwise main returns what it returns: 0 after --help, 2 after printing which argument
 * is wrong and the usage. */
int sample_parse_flags(const char* program, int argc, char** argv, const struct sample_flag* flags,
                       int count, int* wrong_result);

/* Seconds on the monotonic clock. */
double sample_now(void);

/* Rows [*first, *end) of `rows` for worker w of `workers`: bands as equal as they can be, in
 * order, so that with one worker per node each band lies where a block-homed variable's home for
 * it is. */
void sample_band(int rows, int worker, int workers, int* first, int* end);

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

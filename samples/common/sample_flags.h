/* What every version of a sample shares, LMDX or MPI: its flags, its clock and the bands of rows
 * its workers own. Nothing here calls LMDX, so MPI programs link it too. */
#ifndef LMDX_SAMPLES_COMMON_SAMPLE_FLAGS_H_
#define LMDX_SAMPLES_COMMON_SAMPLE_FLAGS_H_

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

#ifdef __cplusplus
}
#endif

#endif /* LMDX_SAMPLES_COMMON_SAMPLE_FLAGS_H_ */

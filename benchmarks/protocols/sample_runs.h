// One run of a sample (or of a synthetic sharing pattern) under one protocol on N nodes, through
// `lmdx run` as a user runs it, and what it cost: the time the program reports for its parallel
// part, and the job's protocol statistics.
#ifndef LMDX_BENCHMARKS_PROTOCOLS_SAMPLE_RUNS_H_
#define LMDX_BENCHMARKS_PROTOCOLS_SAMPLE_RUNS_H_

#include <string>
#include <vector>

namespace lmdx::bench {

struct SampleSpec {
  std::string name;
  std::vector<std::string> default_args;  // the report's size: seconds per run
  std::vector<std::string> quick_args;    // --quick: a size that shows every path in a moment
  std::string message_binary;  // under bazel-bin: its explicit-message version, if it has one
  std::string mpi_binary;      // under bazel-bin: its MPI version, if it has one
  std::string threads_binary;  // under bazel-bin: its POSIX threads version, if it has one
};

// The rows of the report besides the protocols: a sample's message, MPI and plain-threads
// versions.
inline constexpr const char* kMessages = "messages";
inline constexpr const char* kMpi = "mpi";
inline constexpr const char* kThreads = "threads";

// jacobi, matmul, fft, radix, prodcons, lu.
const std::vector<SampleSpec>& ReportSamples();

// A sharing pattern of benchmarks/protocols/patterns.cc and the iterations the report runs.
struct PatternSpec {
  std::string name;
  std::vector<std::string> default_args;  // the report's: under a second and a half per run
  std::vector<std::string> quick_args;    // --quick: every path in a moment
};

// prodcons, migratory, false-sharing, read-mostly, neighbour.
const std::vector<PatternSpec>& ReportPatterns();

// Under bazel-bin: the patterns program.
inline constexpr const char* kPatternsBinary = "benchmarks/protocols/patterns";

struct RunResult {
  std::string sample;    // or the pattern's name
  std::string protocol;  // or kMessages, kMpi, kThreads
  int nodes = 0;
  bool ok = false;
  std::string failure;  // why not ok: the launcher's words or a missing `verified`
  double seconds = 0;   // the sample's own figure for its parallel part
  // Sums over the nodes, from the statistics JSON.
  double read_faults = 0;
  double write_faults = 0;
  double pages_fetched = 0;
  double diffs_made = 0;
  double diff_bytes = 0;
  double messages = 0;
  double bytes = 0;
};

// Runs `tool run SAMPLE -n NODES --protocol PROTOCOL -- ARGS` with the statistics written to a
// file under scratch_dir, and reads the results; the output of a failed run goes to stderr.
RunResult RunSample(const std::string& tool, const SampleSpec& sample,
                    const std::vector<std::string>& args, const std::string& protocol, int nodes,
                    const std::string& scratch_dir);

// `tool run BIN_DIR/patterns -n NODES --protocol PROTOCOL -- PATTERN ARGS`, as RunSample.
RunResult RunPattern(const std::string& tool, const std::string& bin_dir,
                     const PatternSpec& pattern, const std::vector<std::string>& args,
                     const std::string& protocol, int nodes, const std::string& scratch_dir);

// The sample's message version through `tool run`, with the same statistics (messages, bytes).
RunResult RunMessageVersion(const std::string& tool, const std::string& bin_dir,
                            const SampleSpec& sample, const std::vector<std::string>& args,
                            int nodes, const std::string& scratch_dir);

// The sample's MPI version through OpenMPI's mpirun: its time only.
RunResult RunMpiVersion(const std::string& bin_dir, const SampleSpec& sample,
                        const std::vector<std::string>& args, int nodes,
                        const std::string& scratch_dir);

// The sample's plain-threads version, run directly with `--workers NODES`: one process of that
// many POSIX threads over private memory, beside the job of as many nodes. Its time only.
RunResult RunThreadsVersion(const std::string& bin_dir, const SampleSpec& sample,
                            const std::vector<std::string>& args, int nodes,
                            const std::string& scratch_dir);

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_PROTOCOLS_SAMPLE_RUNS_H_

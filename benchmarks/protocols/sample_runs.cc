#include "benchmarks/protocols/sample_runs.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include "benchmarks/net/child_process.h"

namespace lmdx::bench {

const std::vector<SampleSpec>& ReportSamples() {
  static const std::vector<SampleSpec> samples = {
      {"jacobi",
       {},
       {"--size", "256", "--iterations", "20"},
       "samples/jacobi/jacobi_msg",
       "samples/jacobi/jacobi_mpi",
       "samples/jacobi/jacobi_threads"},
      {"matmul",
       {},
       {"--size", "128"},
       "samples/matmul/matmul_msg",
       "",
       "samples/matmul/matmul_threads"},
      {"fft",
       {},
       {"--log2-points", "12"},
       "samples/fft/fft_msg",
       "samples/fft/fft_mpi",
       "samples/fft/fft_threads"},
      {"radix",
       {},
       {"--keys", "65536"},
       "samples/radix/radix_msg",
       "",
       "samples/radix/radix_threads"},
      {"prodcons",
       {"--items", "2000", "--producers", "2", "--consumers", "2"},
       {"--items", "200", "--producers", "2", "--consumers", "2"},
       "samples/prodcons/prodcons_msg",
       "",
       "samples/prodcons/prodcons_threads"},
      {"lu",
       {},
       {"--size", "128", "--block", "16"},
       "samples/lu/lu_msg",
       "",
       "samples/lu/lu_threads"},
  };
  return samples;
}

const std::vector<PatternSpec>& ReportPatterns() {
  static const std::vector<PatternSpec> patterns = {
      {"prodcons", {}, {"50"}},    {"migratory", {}, {"20"}}, {"false-sharing", {}, {"20"}},
      {"read-mostly", {}, {"50"}},  // two updates of the table, every 25 iterations
      {"neighbour", {}, {"20"}},
  };
  return patterns;
}

namespace {

using Environment = std::vector<std::pair<std::string, std::string>>;

// The sum over the nodes of one of their counters in the statistics JSON, {"nodes": [{...}, ...]}
// (protobuf's JSON writes 64-bit counters as strings, doubles as numbers). Only a node's own
// fields count, at depth 3: objects inside a node (its traffic by message type, its figures by
// protocol) may repeat a field's name for a part of the node's figure.
double SumOverNodes(const std::string& json, const std::string& field) {
  const std::string key = "\"" + field + "\"";
  double sum = 0;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == '"') {
      in_string = true;
      if (depth != 3 || json.compare(i, key.size(), key) != 0) continue;
      std::size_t at = json.find_first_not_of(" :\"", i + key.size());
      if (at != std::string::npos) sum += std::strtod(json.c_str() + at, nullptr);
    }
  }
  return sum;
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Runs argv with its standard error in stderr_file (the statistics tables would bury the
// progress line); `program` is the name its result line starts with ("jacobi: ...: 0.12 s").
// Fills result.seconds, or result.failure after showing the output and the errors on stderr.
bool RunAndTime(const std::vector<std::string>& argv, const Environment& env,
                const std::string& program, const std::string& stderr_file, RunResult& result) {
  const std::regex time_line("^" + program + ": .*: ([0-9.]+) s( \\(.*\\))?$");
  std::vector<std::string> output;
  bool verified = false;
  bool timed = false;
  ChildOutcome outcome = run_child(
      argv, env,
      [&](const std::string& line) {
        output.push_back(line);
        std::smatch match;
        if (line == "verified") verified = true;
        if (!timed && std::regex_match(line, match, time_line)) {
          result.seconds = std::stod(match[1].str());
          timed = true;
        }
      },
      stderr_file);
  if (outcome.ok() && verified && timed) return true;
  result.failure = !outcome.ok() ? "the job " + describe(outcome)
                   : !verified   ? "it did not print verified"
                                 : "it printed no time";
  for (const std::string& line : output) std::cerr << "  | " << line << '\n';
  std::ifstream errors(stderr_file);
  for (std::string line; std::getline(errors, line);) std::cerr << "  ! " << line << '\n';
  std::cerr << result.sample << " (" << result.protocol << ") on " << result.nodes
            << " nodes: " << result.failure << std::endl;
  return false;
}

// Reads the job's statistics into result.
bool ReadStatistics(const std::string& stats_file, RunResult& result) {
  std::ifstream in(stats_file);
  std::stringstream json;
  json << in.rdbuf();
  const std::string text = json.str();
  if (text.empty()) {
    result.failure = "no statistics in " + stats_file;
    std::cerr << result.sample << " (" << result.protocol << ") on " << result.nodes
              << " nodes: " << result.failure << std::endl;
    return false;
  }
  result.read_faults = SumOverNodes(text, "read_faults");
  result.write_faults = SumOverNodes(text, "write_faults");
  result.pages_fetched = SumOverNodes(text, "pages_fetched");
  result.diffs_made = SumOverNodes(text, "diffs_made");
  result.diff_bytes = SumOverNodes(text, "diff_bytes");
  result.messages = SumOverNodes(text, "messages_sent");
  // Bytes moved: those messages carried and those read or written one-sidedly, which no message
  // carried but which crossed between the nodes all the same.
  result.bytes = SumOverNodes(text, "bytes_sent") + SumOverNodes(text, "bytes_read_directly") +
                 SumOverNodes(text, "bytes_written_directly");
  return true;
}

RunResult RunWithStatistics(const std::string& tool, const std::string& program,
                            const std::string& shown_name, const std::vector<std::string>& flags,
                            const std::vector<std::string>& args, const std::string& scratch_dir,
                            RunResult result) {
  const std::string stats_file = scratch_dir + "/stats.json";
  std::remove(stats_file.c_str());
  std::vector<std::string> argv = {tool, "run", program, "-n", std::to_string(result.nodes)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--timeout", "600", "--"});
  argv.insert(argv.end(), args.begin(), args.end());
  Environment env = {{"LMDX_STATS", "1"}, {"LMDX_STATS_JSON", stats_file}};
  result.ok = RunAndTime(argv, env, shown_name, scratch_dir + "/stderr.txt", result) &&
              ReadStatistics(stats_file, result);
  return result;
}

RunResult Blank(const std::string& sample, const std::string& protocol, int nodes) {
  RunResult result;
  result.sample = sample;
  result.protocol = protocol;
  result.nodes = nodes;
  return result;
}

}  // namespace

RunResult RunSample(const std::string& tool, const SampleSpec& sample,
                    const std::vector<std::string>& args, const std::string& protocol, int nodes,
                    const std::string& scratch_dir) {
  return RunWithStatistics(tool, sample.name, sample.name, {"--protocol", protocol}, args,
                           scratch_dir, Blank(sample.name, protocol, nodes));
}

RunResult RunPattern(const std::string& tool, const std::string& bin_dir,
                     const PatternSpec& pattern, const std::vector<std::string>& args,
                     const std::string& protocol, int nodes, const std::string& scratch_dir) {
  std::vector<std::string> pattern_args = {pattern.name};
  pattern_args.insert(pattern_args.end(), args.begin(), args.end());
  return RunWithStatistics(tool, bin_dir + "/" + kPatternsBinary, "patterns",
                           {"--protocol", protocol}, pattern_args, scratch_dir,
                           Blank(pattern.name, protocol, nodes));
}

RunResult RunMessageVersion(const std::string& tool, const std::string& bin_dir,
                            const SampleSpec& sample, const std::vector<std::string>& args,
                            int nodes, const std::string& scratch_dir) {
  const std::string program = bin_dir + "/" + sample.message_binary;
  return RunWithStatistics(tool, program, BaseName(program), {}, args, scratch_dir,
                           Blank(sample.name, kMessages, nodes));
}

RunResult RunMpiVersion(const std::string& bin_dir, const SampleSpec& sample,
                        const std::vector<std::string>& args, int nodes,
                        const std::string& scratch_dir) {
  RunResult result = Blank(sample.name, kMpi, nodes);
  std::string mpirun = find_on_path("mpirun");
  if (mpirun.empty()) {
    result.failure = "no mpirun on PATH (OpenMPI's openmpi-bin)";
    std::cerr << sample.name << " (mpi): " << result.failure << std::endl;
    return result;
  }
  const std::string program = bin_dir + "/" + sample.mpi_binary;
  std::vector<std::string> argv = {mpirun, "--oversubscribe", "-n", std::to_string(nodes), program};
  argv.insert(argv.end(), args.begin(), args.end());
  Environment env;
  if (::geteuid() == 0) {  // OpenMPI refuses root unless told twice
    env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};
  }
  result.ok = RunAndTime(argv, env, BaseName(program), scratch_dir + "/stderr.txt", result);
  return result;
}

RunResult RunThreadsVersion(const std::string& bin_dir, const SampleSpec& sample,
                            const std::vector<std::string>& args, int nodes,
                            const std::string& scratch_dir) {
  RunResult result = Blank(sample.name, kThreads, nodes);
  const std::string program = bin_dir + "/" + sample.threads_binary;
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--workers", std::to_string(nodes)});
  result.ok = RunAndTime(argv, {}, BaseName(program), scratch_dir + "/stderr.txt", result);
  return result;
}

}  // namespace lmdx::bench

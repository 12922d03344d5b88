// `lmdx bench threads`: the cost of LMDX threads — starting and joining a thread on another node
// next to the one-way latency measured in the same job, a switch between user-level threads, and
// how many idle LMDX threads a node holds in 1 GiB. Medians over --runs jobs. The lmdx tool execs
// this with LMDX_TOOL set.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "benchmarks/net/child_process.h"
#include "benchmarks/net/job_figures.h"

namespace lmdx::bench {
namespace {

bool RunOnce(const std::string& tool, const std::string& program, int rounds, Figures& figures) {
  return RunJobFigures({tool, "run", program, "-n", "2", "--", std::to_string(rounds)}, {},
                       "threads", 4, "threads", figures);
}

int Main(int argc, char** argv) {
  std::string tool;
  if (const char* env = std::getenv("LMDX_TOOL")) tool = env;
  int rounds = 2000;
  int runs = 5;
  CLI::App app{"lmdx bench threads: LMDX thread start/join, switch and memory costs (2 nodes)",
               "lmdx bench threads"};
  app.add_option("--rounds", rounds, "message round trips per run (start/join pairs: half)")
      ->check(CLI::Range(10, 1000000));
  app.add_option("--runs", runs, "jobs run; figures are medians over them")
      ->check(CLI::Range(1, 50));
  app.add_option("--lmdx-tool", tool, "the lmdx tool that launches LMDX jobs");
  CLI11_PARSE(app, argc, argv);
  if (tool.empty()) {
    std::cerr << "threads: LMDX_TOOL is not set (run `lmdx bench threads`, or pass --lmdx-tool)\n";
    return 2;
  }
  const std::string program = own_directory() + "/threads_timing";
  std::vector<Figures> all;
  all.reserve(static_cast<std::size_t>(runs));
  for (int run = 0; run < runs; ++run) {
    std::cerr << "running threads_timing on 2 nodes (run " << run + 1 << " of " << runs << ")"
              << std::endl;
    Figures figures;
    if (!RunOnce(tool, program, rounds, figures)) return 1;
    all.push_back(figures);
  }
  Figures f;
  for (const auto& [name, unused] : all[0]) {
    std::vector<double> values;
    values.reserve(all.size());
    for (const Figures& run : all) values.push_back(run.at(name));
    std::sort(values.begin(), values.end());
    f[name] = values[values.size() / 2];
  }
  std::printf("\nLMDX threads, 2 nodes (median of %d runs)\n", runs);
  std::printf("%-48s %12s\n", "operation", "value");
  std::printf("%-48s %9.2f µs\n", "one-way latency, 8 B message", f["latency_8"]);
  std::printf("%-48s %9.2f µs  %.1f latencies\n", "start + join of a thread on the other node",
              f["start_join"], f["start_join"] / f["latency_8"]);
  std::printf("%-48s %9.3f µs\n", "switch between user-level threads (yield)", f["switch"]);
  std::printf("%-48s %9.0f B\n", "memory of an idle (parked) LMDX thread", f["idle_bytes"]);
  std::printf("%-48s %9.0f\n", "idle LMDX threads in 1 GiB",
              f["idle_bytes"] > 0 ? static_cast<double>(1ull << 30) / f["idle_bytes"] : 0.0);
  return 0;
}

}  // namespace
}  // namespace lmdx::bench

int main(int argc, char** argv) {
  try {
    return lmdx::bench::Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "threads: " << error.what() << std::endl;
    return 1;
  }
}

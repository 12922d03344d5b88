// `lmdx bench tasks`: what tasks cost and how they scale. The spawn and run of an empty task and a
// fib call on one node; a steal across nodes next to the one-way latency of the same job; Task
// Bench's METG(50%) (the smallest task at which half the machine's time goes to the tasks) on 1
// and 2 nodes; and the task samples on 1 and 2 nodes against one plain thread. Medians over
// --runs jobs. The lmdx tool execs this with LMDX_TOOL set.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "benchmarks/net/child_process.h"
#include "benchmarks/net/job_figures.h"

namespace lmdx::bench {
namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

struct Context {
  std::string tool;
  std::string timing;
  std::string samples;  // bazel-bin/samples
  int runs = 3;
};

// The median over ctx.runs jobs of each figure `lmdx run tasks_timing -n NODES -- ARGS` prints.
bool Measure(const Context& ctx, int nodes, const std::vector<std::string>& args,
             std::size_t expected, Figures& medians) {
  std::vector<Figures> all;
  for (int run = 0; run < ctx.runs; ++run) {
    std::vector<std::string> argv = {ctx.tool, "run", ctx.timing, "-n", std::to_string(nodes),
                                     "--"};
    argv.insert(argv.end(), args.begin(), args.end());
    Figures figures;
    if (!RunJobFigures(argv, {}, "tasks", expected, "tasks", figures)) return false;
    all.push_back(figures);
  }
  for (const auto& [name, unused] : all[0]) {
    std::vector<double> values;
    for (const Figures& run : all) values.push_back(run.at(name));
    medians[name] = Median(values);
  }
  return true;
}

// A sample's run: the parallel time and the one-thread time it prints ("... 0.123 s ... 0.456
// s"), medians over ctx.runs jobs.
bool RunSample(const Context& ctx, const std::string& name, const std::vector<std::string>& args,
               int nodes, double& seconds, double& sequential) {
  std::vector<double> times;
  std::vector<double> plain;
  static const std::regex number(R"(([0-9]+\.[0-9]+) s\b)");
  for (int run = 0; run < ctx.runs; ++run) {
    std::vector<std::string> argv = {ctx.tool,
                                     "run",
                                     ctx.samples + "/" + name + "/" + name,
                                     "-n",
                                     std::to_string(nodes),
                                     "--protocol",
                                     "hlrc",
                                     "--"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<double> found;
    bool verified = false;
    ChildOutcome outcome = run_child(argv, {}, [&](const std::string& line) {
      if (line == "verified") verified = true;
      if (!found.empty()) return;
      for (auto it = std::sregex_iterator(line.begin(), line.end(), number);
           it != std::sregex_iterator(); ++it) {
        found.push_back(std::atof((*it)[1].str().c_str()));
      }
    });
    if (!outcome.ok() || !verified || found.size() < 2) {
      std::cerr << "tasks: " << name << " on " << nodes
                << " nodes failed: " << (outcome.ok() ? "no verified result" : describe(outcome))
                << std::endl;
      return false;
    }
    times.push_back(found[0]);
    plain.push_back(found[1]);
  }
  seconds = Median(times);
  sequential = Median(plain);
  return true;
}

int Main(int argc, char** argv) {
  Context ctx;
  if (const char* env = std::getenv("LMDX_TOOL")) ctx.tool = env;
  bool quick = false;
  CLI::App app{"lmdx bench tasks: spawn, steal, METG and the task samples on 1 and 2 nodes",
               "lmdx bench tasks"};
  app.add_option("--runs", ctx.runs, "jobs run per figure; figures are medians over them")
      ->check(CLI::Range(1, 50));
  app.add_flag("--quick", quick, "small sizes (a check that everything runs, not a measure)");
  app.add_option("--lmdx-tool", ctx.tool, "the lmdx tool that launches LMDX jobs");
  CLI11_PARSE(app, argc, argv);
  if (ctx.tool.empty()) {
    std::cerr << "tasks: LMDX_TOOL is not set (run `lmdx bench tasks`, or pass --lmdx-tool)\n";
    return 2;
  }
  ctx.timing = own_directory() + "/tasks_timing";
  ctx.samples = own_directory() + "/../../samples";

  std::cerr << "measuring the spawn and run of a task (1 node)" << std::endl;
  Figures overhead;
  if (!Measure(ctx, 1, {"overhead", quick ? "20000" : "1000000"}, 2, overhead)) return 1;
  std::cerr << "measuring steals (2 nodes)" << std::endl;
  Figures steal;
  if (!Measure(ctx, 2, {"steal", quick ? "20" : "200"}, 3, steal)) return 1;

  std::printf("\nLMDX tasks (median of %d runs)\n", ctx.runs);
  std::printf("%-56s %12s\n", "operation", "value");
  std::printf("%-56s %9.1f ns\n", "spawn + run of an empty task, 1 node", overhead["spawn_run_ns"]);
  std::printf("%-56s %9.1f ns\n", "fib(25) per call (spawn, run, wait), 1 node",
              overhead["fib_call_ns"]);
  std::printf("%-56s %9.2f µs\n", "one-way latency, 8 B message, 2 nodes", steal["latency_8"]);
  double latency = std::max(steal["latency_8"], 1e-9);
  std::printf("%-56s %9.2f µs  %.1f latencies\n", "steal: spawn to start on the other node",
              steal["steal_us"], steal["steal_us"] / latency);
  std::printf("%-56s %9.2f µs  %.1f latencies\n", "  the same while the spawning node computes",
              steal["steal_busy_us"], steal["steal_busy_us"] / latency);

  std::printf("\nTask Bench efficiency (independent tasks of a given size, spawned by a tree)\n");
  const std::vector<int> grains =
      quick ? std::vector<int>{100, 10} : std::vector<int>{1000, 200, 100, 50, 20, 10, 5, 2, 1};
  std::printf("%-12s %10s %10s\n", "task µs", "1 node", "2 nodes");
  int metg[3] = {0, 0, 0};
  for (int grain : grains) {
    double efficiency[3] = {0, 0, 0};
    for (int nodes : {1, 2}) {
      int tasks = std::max(64, (quick ? 5000 : 60000) * nodes / grain);
      std::cerr << "measuring tasks of " << grain << " µs on " << nodes << " node(s)" << std::endl;
      Figures figures;
      if (!Measure(ctx, nodes, {"grain", std::to_string(grain), std::to_string(tasks)}, 1,
                   figures)) {
        return 1;
      }
      efficiency[nodes] = figures["efficiency"];
      if (efficiency[nodes] >= 0.5) metg[nodes] = grain;  // grains go down: the last one holding
    }
    std::printf("%-12d %9.0f%% %9.0f%%\n", grain, efficiency[1] * 100, efficiency[2] * 100);
  }
  for (int nodes : {1, 2}) {
    if (metg[nodes] > 0) {
      std::printf("METG(50%%), %d node%s: %d µs\n", nodes, nodes == 1 ? "" : "s", metg[nodes]);
    } else {
      std::printf("METG(50%%), %d node%s: above %d µs\n", nodes, nodes == 1 ? "" : "s",
                  grains.front());
    }
  }

  struct SampleRun {
    const char* name;
    std::vector<std::string> args;
    std::vector<std::string> quick_args;
  };
  const std::vector<SampleRun> samples = {
      {"fib", {"--n", "30"}, {"--n", "20"}},
      {"fib", {"--n", "35", "--cutoff", "15"}, {"--n", "25", "--cutoff", "10"}},
      {"nqueens", {"--n", "14"}, {"--n", "9"}},
      {"uts", {"--depth", "10"}, {"--depth", "6"}},
      {"mandelbrot", {}, {"--width", "128", "--height", "96"}},
      {"quicksort", {}, {"--keys", "100000"}},
  };
  std::printf("\nTask samples under hlrc, seconds (the sample's own time of its tasks)\n");
  std::printf("%-34s %9s %9s %9s %10s\n", "sample", "1 thread", "1 node", "2 nodes", "2 vs 1 node");
  for (const SampleRun& sample : samples) {
    const auto& args = quick ? sample.quick_args : sample.args;
    std::string label = sample.name;
    for (const std::string& arg : args) label += " " + arg;
    double one = 0, two = 0, plain = 0, unused = 0;
    std::cerr << "running " << label << " on 1 and 2 nodes" << std::endl;
    if (!RunSample(ctx, sample.name, args, 1, one, plain)) return 1;
    if (!RunSample(ctx, sample.name, args, 2, two, unused)) return 1;
    std::printf("%-34s %9.3f %9.3f %9.3f %9.2fx\n", label.c_str(), plain, one, two,
                two > 0 ? one / two : 0.0);
  }
  return 0;
}

}  // namespace
}  // namespace lmdx::bench

int main(int argc, char** argv) {
  try {
    return lmdx::bench::Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "tasks: " << error.what() << std::endl;
    return 1;
  }
}

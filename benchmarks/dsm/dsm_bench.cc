// `lmdx bench dsm`: the cost of the DSM's basic operations next to their floor measured in the
// same jobs: a remote read fault against (one-way latency + 4 KiB transfer + the machine's own
// fault round trip), each part reported. Medians over many pages, repeated --runs times. The
// lmdx tool execs this with LMDX_TOOL set.
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

bool RunOnce(const std::string& tool, const std::string& program, int pages, Figures& figures) {
  // The fresh pages are a cyclic variable: every other page homed at rank 0, never opened there.
  return RunJobFigures({tool, "run", program, "-n", "2", "--", std::to_string(pages)},
                       {{"LMDX_DSM_HOME", "cyclic"}}, "dsm", 7, "dsm", figures);
}

}  // namespace
}  // namespace lmdx::bench

namespace lmdx::bench {
namespace {

int Main(int argc, char** argv) {
  std::string tool;
  if (const char* env = std::getenv("LMDX_TOOL")) tool = env;
  int pages = 2000;
  int runs = 5;
  CLI::App app{"lmdx bench dsm: DSM fault and transfer costs next to their floor (2 nodes)",
               "lmdx bench dsm"};
  app.add_option("--pages", pages, "pages measured per run (median over them)")
      ->check(CLI::Range(10, 100000));
  app.add_option("--runs", runs, "jobs run; operations are medians over them")
      ->check(CLI::Range(1, 50));
  app.add_option("--lmdx-tool", tool, "the lmdx tool that launches LMDX jobs");
  CLI11_PARSE(app, argc, argv);
  if (tool.empty()) {
    std::cerr << "dsm: LMDX_TOOL is not set (run `lmdx bench dsm`, or pass --lmdx-tool)\n";
    return 2;
  }
  const std::string program = own_directory() + "/dsm_timing";
  std::vector<Figures> all;
  all.reserve(static_cast<std::size_t>(runs));
  for (int run = 0; run < runs; ++run) {
    std::cerr << "running dsm_timing on 2 nodes, " << pages << " pages (run " << run + 1 << " of "
              << runs << ")" << std::endl;
    Figures figures;
    if (!RunOnce(tool, program, pages, figures)) return 1;
    all.push_back(figures);
  }
  // Each DSM figure is its median over the runs. Each part of the floor is its minimum: the
  // machine's best, so that a run where the message pingpong happened to be slow (two busy
  // threads per node share these two cores) cannot flatter the ratios.
  Figures f;
  for (const auto& [name, unused] : all[0]) {
    std::vector<double> values;
    values.reserve(all.size());
    for (const Figures& run : all) values.push_back(run.at(name));
    std::sort(values.begin(), values.end());
    bool floor_part = name == "latency_8" || name == "transfer_4k" || name == "local_fault";
    f[name] = floor_part ? values.front() : values[values.size() / 2];
  }
  double floor = f["latency_8"] + f["transfer_4k"] + f["local_fault"];
  std::printf(
      "\nDSM costs, protocol sc, 2 nodes (%d runs, each a median over %d pages; operations: median "
      "over the runs, floor parts: best run)\n",
      runs, pages);
  std::printf("%-44s %10s\n", "operation", "µs");
  std::printf("%-44s %10.2f\n", "one-way latency, 8 B message", f["latency_8"]);
  std::printf("%-44s %10.2f\n", "one-way 4 KiB message", f["transfer_4k"]);
  std::printf("%-44s %10.2f\n", "local fault round trip (SIGSEGV+mprotect)", f["local_fault"]);
  std::printf("%-44s %10.2f\n", "floor: latency + 4 KiB + local fault", floor);
  std::printf("%-44s %10.2f  %.2fx floor\n", "remote read fault, first fetch of the page",
              f["read_fault"], f["read_fault"] / floor);
  std::printf("%-44s %10.2f  %.2fx (latency x2 + local fault)\n",
              "write fault upgrading a local copy", f["write_fault"],
              f["write_fault"] / (2 * f["latency_8"] + f["local_fault"]));
  std::printf("%-44s %10.2f  %.2fx (latency + 4 KiB)\n", "lmdx_get of 4 KiB from the home",
              f["get_4k"], f["get_4k"] / (f["latency_8"] + f["transfer_4k"]));
  std::printf("%-44s %10.2f  %.2fx floor\n", "read fault, the home was writing the page",
              f["read_fault_home_writing"], f["read_fault_home_writing"] / floor);
  std::printf(
      "  (the home first takes its own write access away: an mprotect downgrade, which\n"
      "   costs 5-6 µs on an idle machine and 20-50 µs while the other core is busy)\n");
  std::printf("target: remote read fault within 1.5x of the floor: %s\n",
              f["read_fault"] <= 1.5 * floor ? "met" : "missed");
  return 0;
}

}  // namespace
}  // namespace lmdx::bench

int main(int argc, char** argv) {
  try {
    return lmdx::bench::Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "dsm: " << error.what() << std::endl;
    return 1;
  }
}

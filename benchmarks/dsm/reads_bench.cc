// `lmdx bench reads`: what reaching a home's copies costs under hlrc when they are read and
// written straight in the home's memory (one-sided) and when the home is asked by messages, while
// the home computes and while it waits at a barrier, over each network of this host: the fault
// that fetches again a page the node held before, the fault that takes a first copy of a page,
// and the release that sends the node's writes.
// The lmdx tool execs this with LMDX_TOOL set; it starts refetch_timing jobs found beside it.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/net/child_process.h"
#include "benchmarks/net/job_figures.h"

namespace lmdx::bench {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

struct Network {
  const char* name;  // the table's row
  Env env;
  const char* one_sided;  // how the one-sided read is made, for the lines under the table
};

struct Settings {
  std::string tool;
  int pages = 240;
  int rounds = 24;
  double compute_ms = 60;
  int runs = 3;
};

// Each figure's median over the runs; false when a job failed.
bool Measure(const Settings& settings, const Network& network, const char* one_sided,
             Figures& figures) {
  std::vector<Figures> all;
  for (int run = 0; run < settings.runs; ++run) {
    std::cerr << "running refetch_timing over " << network.name << ", one-sided " << one_sided
              << " (run " << run + 1 << " of " << settings.runs << ")" << std::endl;
    Env env = network.env;
    env.emplace_back("LMDX_PROTOCOL", "hlrc");
    env.emplace_back("LMDX_DSM_ONE_SIDED", one_sided);
    // Rank 1's reads walk the pages at a stride: fetching ahead would leave few faults to time.
    env.emplace_back("LMDX_DSM_FETCH_AHEAD", "off");
    char compute[32];
    std::snprintf(compute, sizeof compute, "%g", settings.compute_ms);
    Figures one;
    if (!RunJobFigures({settings.tool, "run", own_directory() + "/refetch_timing", "-n", "2", "--",
                        std::to_string(settings.pages), std::to_string(settings.rounds), compute},
                       env, "reads", 8, "refetch_timing", one)) {
      return false;
    }
    all.push_back(std::move(one));
  }
  for (const auto& [name, unused] : all.front()) {
    std::vector<double> values;
    for (const Figures& run : all) values.push_back(run.at(name));
    std::sort(values.begin(), values.end());
    figures[name] = values[values.size() / 2];
  }
  return true;
}

int Main(int argc, char** argv) {
  Settings settings;
  if (const char* env = std::getenv("LMDX_TOOL")) settings.tool = env;
  CLI::App app{
      "lmdx bench reads: under hlrc on 2 nodes, the fault that fetches again a page held before,\n"
      "the fault that takes a first copy, and the release that sends a node's writes, reaching the "
      "home's memory one-sidedly and\n"
      "by messages, while the home computes and while it waits",
      "lmdx bench reads"};
  app.add_option("--pages", settings.pages, "pages rank 1 reads, a sixth of them per round")
      ->check(CLI::Range(6, 60000));
  app.add_option("--rounds", settings.rounds, "rounds; the first six bring every page once")
      ->check(CLI::Range(8, 10000));
  app.add_option("--compute-ms", settings.compute_ms,
                 "how long the home computes in the rounds it computes")
      ->check(CLI::Range(1.0, 10000.0));
  app.add_option("--runs", settings.runs, "jobs per cell; each figure is their median")
      ->check(CLI::Range(1, 50));
  app.add_option("--lmdx-tool", settings.tool, "the lmdx tool that launches LMDX jobs");
  CLI11_PARSE(app, argc, argv);
  if (settings.tool.empty()) {
    std::cerr << "reads: LMDX_TOOL is not set (run `lmdx bench reads`, or pass --lmdx-tool)\n";
    return 2;
  }

  const Network networks[] = {
      {"shm",
       {{"LMDX_TRANSPORT", "shm"}},
       "plain copies through a mapping of the home's memory file (process_vm_readv and\n  "
       "process_vm_writev where the kernel refuses the mapping)"},
      {"fabric (UCX sm)",
       {{"LMDX_TRANSPORT", "fabric"}, {"UCX_TLS", "sm"}},
       "reads by ucp_get_nbx (emulated by UCX's worker at the home here); diffs by messages"},
      {"fabric (UCX tcp)",
       {{"LMDX_TRANSPORT", "fabric"}, {"UCX_TLS", "tcp"}},
       "reads by ucp_get_nbx (emulated by UCX's worker at the home here); diffs by messages"},
      {"tcp", {{"LMDX_TRANSPORT", "tcp"}}, nullptr},
  };
  struct Row {
    const Network* network;
    Figures messages;
    Figures direct;
  };
  std::vector<Row> rows;
  for (const Network& network : networks) {
    Row row{&network, {}, {}};
    if (!Measure(settings, network, "off", row.messages)) return 1;
    if (!Measure(settings, network, "auto", row.direct)) return 1;
    rows.push_back(std::move(row));
  }

  // One table per operation: the fault's and the release's.
  const struct {
    const char* title;
    const char* computing;
    const char* waiting;
    const char* count = "faults";  // operations timed per column in a job
  } operations[] = {
      {"Refetch faults: rank 1 reads a page it held before, which the home's writes invalidated",
       "refetch_home_computing", "refetch_home_waiting"},
      {"First reads: rank 1 reads a page the home wrote and no other node held before",
       "first_home_computing", "first_home_waiting", "first_faults"},
      {"Releases: rank 1 unlocks a lock it manages after writing a byte of a page homed at rank 0",
       "release_home_computing", "release_home_waiting"},
  };
  for (const auto& operation : operations) {
    std::printf("\n%s\n(hlrc, 2 nodes; median µs over %d jobs, %.0f per column a job)\n",
                operation.title, settings.runs, rows.front().direct[operation.count]);
    std::printf("%-18s %23s   %23s\n", "", "home computing", "home waiting at barrier");
    std::printf("%-18s %10s %12s   %10s %12s\n", "network", "messages", "one-sided", "messages",
                "one-sided");
    for (const Row& row : rows) {
      // A network without one-sided access asks the home in both runs: its column is empty.
      auto direct = [&row](const char* figure) {
        char cell[32] = "-";
        if (row.network->one_sided) std::snprintf(cell, sizeof cell, "%.1f", row.direct.at(figure));
        return std::string(cell);
      };
      std::printf("%-18s %10.1f %12s   %10.1f %12s\n", row.network->name,
                  row.messages.at(operation.computing), direct(operation.computing).c_str(),
                  row.messages.at(operation.waiting), direct(operation.waiting).c_str());
    }
  }
  std::printf(
      "\nmessages: LMDX_DSM_ONE_SIDED=off, the home's progress thread serves each request\n");
  for (const Network& network : networks) {
    if (network.one_sided) std::printf("one-sided over %s: %s\n", network.name, network.one_sided);
  }
  std::printf("tcp has no one-sided access: its pages and diffs always go by messages\n");
  return 0;
}

}  // namespace
}  // namespace lmdx::bench

int main(int argc, char** argv) {
  try {
    return lmdx::bench::Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "reads: " << error.what() << std::endl;
    return 1;
  }
}

// `lmdx bench reads`: what a fault that fetches again a page the node held before costs under
// hlrc when the page is read straight from its home's memory (one-sided) and when the home is
// asked by a message, while the home computes and while it waits at a barrier, over each network
// of this host. The lmdx tool execs this with LMDX_TOOL set; it starts refetch_timing jobs found
// beside it.
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
bool Measure(const Settings& settings, const Network& network, const char* reads,
             Figures& figures) {
  std::vector<Figures> all;
  for (int run = 0; run < settings.runs; ++run) {
    std::cerr << "running refetch_timing over " << network.name << ", reads " << reads << " (run "
              << run + 1 << " of " << settings.runs << ")" << std::endl;
    Env env = network.env;
    env.emplace_back("LMDX_PROTOCOL", "hlrc");
    env.emplace_back("LMDX_DSM_READS", reads);
    char compute[32];
    std::snprintf(compute, sizeof compute, "%g", settings.compute_ms);
    Figures one;
    if (!RunJobFigures({settings.tool, "run", own_directory() + "/refetch_timing", "-n", "2", "--",
                        std::to_string(settings.pages), std::to_string(settings.rounds), compute},
                       env, "reads", 3, "refetch_timing", one)) {
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
      "lmdx bench reads: the fault that fetches again a page held before, under hlrc on 2 nodes,\n"
      "read from the home's memory (one-sided) and asked of the home by a message, while the\n"
      "home computes and while it waits",
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
      {"shm", {{"LMDX_TRANSPORT", "shm"}}, "process_vm_readv"},
      {"fabric (UCX sm)",
       {{"LMDX_TRANSPORT", "fabric"}, {"UCX_TLS", "sm"}},
       "ucp_get_nbx (emulated by UCX's worker at the home here)"},
      {"fabric (UCX tcp)",
       {{"LMDX_TRANSPORT", "fabric"}, {"UCX_TLS", "tcp"}},
       "ucp_get_nbx (emulated by UCX's worker at the home here)"},
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
    if (!Measure(settings, network, "messages", row.messages)) return 1;
    if (!Measure(settings, network, "auto", row.direct)) return 1;
    rows.push_back(std::move(row));
  }

  std::printf(
      "\nRefetch faults under hlrc, 2 nodes: rank 1 reads a page it held before, which the home's\n"
      "writes invalidated (median µs per fault over %d jobs; %.0f faults timed per column a job)\n",
      settings.runs, rows.front().direct["faults"]);
  std::printf("%-18s %23s   %23s\n", "", "home computing", "home waiting at barrier");
  std::printf("%-18s %10s %12s   %10s %12s\n", "network", "messages", "one-sided", "messages",
              "one-sided");
  for (const Row& row : rows) {
    // A network without one-sided reads asks the home in both runs: its second column is empty.
    auto direct = [&row](const char* figure) {
      char cell[32] = "-";
      if (row.network->one_sided) std::snprintf(cell, sizeof cell, "%.1f", row.direct.at(figure));
      return std::string(cell);
    };
    std::printf("%-18s %10.1f %12s   %10.1f %12s\n", row.network->name,
                row.messages.at("refetch_home_computing"), direct("refetch_home_computing").c_str(),
                row.messages.at("refetch_home_waiting"), direct("refetch_home_waiting").c_str());
  }
  std::printf("messages: LMDX_DSM_READS=messages, the home's progress thread serves the fetch\n");
  for (const Network& network : networks) {
    if (network.one_sided) std::printf("one-sided over %s: %s\n", network.name, network.one_sided);
  }
  std::printf("tcp has no one-sided reads: its pages are always asked for\n");
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

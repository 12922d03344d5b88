// `lmdx bench walk`: one rank reading, then writing, a large variable homed on the other node in
// address order, under each home-based protocol with fetching ahead on and off, next to the same
// loops over private memory in the same jobs. The lmdx tool execs this with LMDX_TOOL set; it
// starts walk_timing jobs found beside it.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/net/child_process.h"
#include "benchmarks/net/job_figures.h"

namespace lmdx::bench {
namespace {

struct Settings {
  std::string tool;
  int mib = 64;
  int runs = 3;
  std::vector<std::string> protocols = {"update", "rc", "lrc", "hlrc"};
  std::vector<std::string> transports = {"shm", "tcp"};
};

// Each figure's median over the runs; false when a job failed.
bool Measure(const Settings& settings, const std::string& protocol, const std::string& transport,
             const char* fetch_ahead, Figures& figures) {
  std::vector<Figures> all;
  for (int run = 0; run < settings.runs; ++run) {
    std::cerr << "running walk_timing under " << protocol << " over " << transport
              << ", fetch ahead " << fetch_ahead << " (run " << run + 1 << " of " << settings.runs
              << ")" << std::endl;
    Figures one;
    if (!RunJobFigures({settings.tool, "run", own_directory() + "/walk_timing", "-n", "2", "--",
                        std::to_string(settings.mib)},
                       {{"LMDX_PROTOCOL", protocol},
                        {"LMDX_TRANSPORT", transport},
                        {"LMDX_DSM_FETCH_AHEAD", fetch_ahead}},
                       "walk", 5, "walk_timing", one)) {
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

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

int Main(int argc, char** argv) {
  Settings settings;
  if (const char* env = std::getenv("LMDX_TOOL")) settings.tool = env;
  std::string protocols = "update,rc,lrc,hlrc";
  std::string transports = "shm,tcp";
  CLI::App app{
      "lmdx bench walk: one rank of 2 reading, then writing, a large variable homed on the other\n"
      "node in address order, under each home-based protocol with fetching ahead on and off",
      "lmdx bench walk"};
  app.add_option("--mib", settings.mib, "MiB walked each way")->check(CLI::Range(1, 4096));
  app.add_option("--runs", settings.runs, "jobs per case; figures are medians over them")
      ->check(CLI::Range(1, 50));
  app.add_option("--protocols", protocols, "comma-separated: update, rc, lrc, hlrc");
  app.add_option("--transports", transports, "comma-separated: shm, tcp, udp, fabric");
  app.add_option("--lmdx-tool", settings.tool, "the lmdx tool that launches LMDX jobs");
  CLI11_PARSE(app, argc, argv);
  if (settings.tool.empty()) {
    std::cerr << "walk: LMDX_TOOL is not set (run `lmdx bench walk`, or pass --lmdx-tool)\n";
    return 2;
  }
  settings.protocols = SplitList(protocols);
  settings.transports = SplitList(transports);
  for (const std::string& protocol : settings.protocols) {
    if (protocol != "update" && protocol != "rc" && protocol != "lrc" && protocol != "hlrc") {
      std::cerr << "walk: --protocols: \"" << protocol
                << "\" is not a home-based protocol (update, rc, lrc, hlrc)\n";
      return 2;
    }
  }
  struct Row {
    std::string protocol, transport, fetch_ahead;
    Figures figures;
  };
  std::vector<Row> rows;
  for (const std::string& transport : settings.transports) {
    for (const std::string& protocol : settings.protocols) {
      for (const char* fetch_ahead : {"off", "auto"}) {
        Row row{protocol, transport, fetch_ahead, {}};
        if (!Measure(settings, protocol, transport, fetch_ahead, row.figures)) return 1;
        rows.push_back(std::move(row));
      }
    }
  }
  std::printf(
      "\nOne rank of 2 walking %d MiB homed on the other node, word by word in address order "
      "(MB/s, median of %d runs)\n",
      settings.mib, settings.runs);
  std::printf("%-8s %-9s %-11s %10s %10s %15s %13s %13s\n", "protocol", "transport", "fetch-ahead",
              "read", "write", "write+release", "private read", "private write");
  for (const Row& row : rows) {
    const Figures& f = row.figures;
    std::printf("%-8s %-9s %-11s %10.0f %10.0f %15.0f %13.0f %13.0f\n", row.protocol.c_str(),
                row.transport.c_str(), row.fetch_ahead.c_str(), f.at("read_mbs"), f.at("write_mbs"),
                f.at("write_release_mbs"), f.at("private_read_mbs"), f.at("private_write_mbs"));
  }
  std::printf(
      "read: rank 1 sums every word of rank 0's half; write: it stores every word of another\n"
      "variable's half homed at rank 0, and write+release adds the barrier that sends the writes\n"
      "home. private: the same loops over private memory in the same job, before LMDX starts.\n");
  return 0;
}

}  // namespace
}  // namespace lmdx::bench

int main(int argc, char** argv) {
  try {
    return lmdx::bench::Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "walk: " << error.what() << std::endl;
    return 1;
  }
}

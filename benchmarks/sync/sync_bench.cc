// `lmdx bench sync`: lock, barrier and semaphore timings, each also in units of the one-way
// message latency measured in the same job (the floor of any protocol). The lmdx tool execs this
// with LMDX_TOOL set; it runs sync_timing jobs found beside it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "benchmarks/net/child_process.h"

namespace lmdx::bench {
namespace {

struct Row {
  std::string name;
  int nodes = 0;
  double micros = 0;
  double latency = 0;  // one-way latency of the same job
};

const std::map<std::string, std::string>& Descriptions() {
  static const std::map<std::string, std::string> text = {
      {"lock_local_reacquire", "lock+unlock, token resting here (no message)"},
      {"lock_uncontended_remote", "lock acquire, token resting at another node"},
      {"lock_contended", "lock+unlock, every node contending, per acquire"},
      {"sema_handoff", "semaphore V to the waiting P on another node"},
      {"barrier_all_tree", "lmdx_barrier_all (4-ary tree over the nodes)"},
      {"barrier_named_central", "named barrier, count = nodes (central manager)"},
  };
  return text;
}

// Runs one job; appends its rows. False (after a line on stderr) when it failed.
bool RunJob(const std::string& tool, const std::string& program, int nodes, const char* mode,
            int iterations, std::vector<Row>& rows) {
  std::vector<std::string> argv = {
      tool, "run", program, "-n", std::to_string(nodes), "--", mode, std::to_string(iterations)};
  std::cerr << "running sync_timing " << mode << " on " << nodes << " nodes" << std::endl;
  std::vector<Row> found;
  std::vector<double> latencies;
  std::vector<std::string> other;
  ChildOutcome outcome = run_child(argv, {}, [&](const std::string& line) {
    if (line.rfind("sync,", 0) != 0) {
      other.push_back(line);
      return;
    }
    std::stringstream in(line.substr(5));
    Row row;
    std::string nodes_text, micros_text;
    std::getline(in, row.name, ',');
    std::getline(in, nodes_text, ',');
    std::getline(in, micros_text, ',');
    row.nodes = std::atoi(nodes_text.c_str());
    row.micros = std::atof(micros_text.c_str());
    if (row.name == "latency") {
      latencies.push_back(row.micros);
    } else {
      found.push_back(row);
    }
  });
  if (!outcome.ok() || latencies.empty() || found.empty()) {
    for (const auto& l : other) std::cerr << "  | " << l << '\n';
    std::cerr << "sync: the " << mode << " job on " << nodes
              << " nodes failed: " << (outcome.ok() ? "it reported nothing" : describe(outcome))
              << std::endl;
    return false;
  }
  // The smaller of the two measurements (before and after): the machine's floor in that job.
  double latency = latencies[0];
  for (double l : latencies) latency = std::min(latency, l);
  for (Row& row : found) {
    row.latency = latency;
    rows.push_back(row);
  }
  return true;
}

int Main(int argc, char** argv) {
  std::string tool;
  if (const char* env = std::getenv("LMDX_TOOL")) tool = env;
  int iterations = 2000;
  std::vector<int> barrier_nodes = {2, 4, 8, 16};
  CLI::App app{
      "Lock, barrier and semaphore timings on this machine, each also in units of the one-way\n"
      "message latency (half an 8-byte round trip) measured in the same job.",
      "lmdx bench sync"};
  app.add_option("--iterations", iterations, "timed operations per figure")->default_val(2000);
  app.add_option("--barrier-nodes", barrier_nodes, "job sizes for the barrier figures")
      ->default_str("2 4 8 16");
  app.add_option("--lmdx-tool", tool, "the lmdx tool that launches LMDX jobs")
      ->default_str("$LMDX_TOOL");
  CLI11_PARSE(app, argc, argv);
  if (tool.empty()) {
    std::cerr << "sync: LMDX_TOOL is not set (run `lmdx bench sync`, or pass --lmdx-tool)\n";
    return 1;
  }
  const std::string program = own_directory() + "/sync_timing";
  std::vector<Row> rows;
  bool failed = !RunJob(tool, program, 3, "lock", iterations, rows);
  for (int nodes : barrier_nodes) {
    failed |= !RunJob(tool, program, nodes, "barrier", iterations, rows);
  }
  std::printf(
      "\nsync operations on this host (one-way latency: half an 8 B round trip, same job)\n");
  std::printf("%-24s %5s %10s %10s %9s  %s\n", "operation", "nodes", "time us", "one-way us",
              "latencies", "what");
  for (const Row& row : rows) {
    auto it = Descriptions().find(row.name);
    std::printf("%-24s %5d %10.2f %10.2f %9.2f  %s\n", row.name.c_str(), row.nodes, row.micros,
                row.latency, row.micros / row.latency,
                it != Descriptions().end() ? it->second.c_str() : "");
  }
  std::fflush(stdout);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace lmdx::bench

int main(int argc, char** argv) {
  try {
    return lmdx::bench::Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "sync: " << error.what() << std::endl;
    return 1;
  }
}

#include "tools/bench_command.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tools/usage_error.h"

namespace lmdx::tools {

const std::vector<Benchmark>& Benchmarks() {
  static const std::vector<Benchmark> table = {
      {"pingpong", "benchmarks/net/pingpong_bench",
       "half round-trip latency and bandwidth, 8 B to 64 MiB, 2 nodes over shm and TCP; OpenMPI "
       "beside"},
      {"overlap", "benchmarks/net/overlap_bench",
       "send and receive overheads, LogP/LogGP parameters and overlap of computation with "
       "lmdx_isend/lmdx_irecv, every network beside OpenMPI; --quick"},
      {"sync", "benchmarks/sync/sync_bench",
       "lock, barrier (2-16 nodes) and semaphore times, also in one-way message latencies"},
      {"dsm", "benchmarks/dsm/dsm_bench",
       "page fault, upgrade and lmdx_get costs next to latency + transfer + local fault, 2 nodes"},
      {"reads", "benchmarks/dsm/reads_bench",
       "refetch faults under hlrc read from the home's memory and asked by messages, 2 nodes"},
      {"walk", "benchmarks/dsm/walk_bench",
       "one rank reading and writing a large variable homed elsewhere in order, MB/s, fetch "
       "ahead on and off, 2 nodes"},
      {"protocols", "benchmarks/protocols/protocols_bench",
       "every sample (1, 2, 4 nodes) and sharing pattern (2, 4 nodes) under every protocol: "
       "time, faults, messages, bytes"},
      {"threads", "benchmarks/threads/threads_bench",
       "remote thread start+join next to the latency, user-level switch, idle threads per GiB"},
      {"tasks", "benchmarks/tasks/tasks_bench",
       "spawn + run of a task, a steal next to the latency, METG(50%) and the task samples on 1 "
       "and 2 nodes"},
  };
  return table;
}

namespace {

std::string BenchmarkList() {
  std::string text;
  for (const Benchmark& b : Benchmarks()) text += std::string("\n  ") + b.name + "  " + b.summary;
  return text;
}

}  // namespace

CLI::App* AddBenchCommand(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Run a benchmark and print its table");
  bench->footer(
      "lmdx bench NAME [ARGS...]   (lmdx bench NAME --help: the benchmark's options)\n"
      "Benchmarks:" +
      BenchmarkList());
  // The driver parses its own options.
  bench->prefix_command();
  return bench;
}

int BenchCommand(const std::vector<std::string>& args, const Paths& paths) {
  if (args.empty()) throw UsageError("name a benchmark; known:" + BenchmarkList());
  const Benchmark* found = nullptr;
  for (const Benchmark& b : Benchmarks()) {
    if (args[0] == b.name) found = &b;
  }
  if (found == nullptr) {
    throw UsageError("no benchmark named '" + args[0] + "'; known:" + BenchmarkList());
  }
  if (!paths.installed_prefix().empty()) {
    throw UsageError(
        "the benchmarks run from the LMDX repository, where they are built: run "
        "./lmdx bench " +
        args[0] + " there");
  }
  std::string driver = (paths.bin() / found->driver).string();
  if (!IsExecutableFile(driver)) {
    throw UsageError("the benchmark driver is not built (no " + driver + "); run ./lmdx build");
  }
  ::setenv("LMDX_TOOL", SelfPath().c_str(), 1);
  if (!paths.home().empty()) ::setenv("LMDX_HOME", paths.home().c_str(), 1);
  std::vector<char*> argv = {driver.data()};
  for (std::size_t i = 1; i < args.size(); ++i) argv.push_back(const_cast<char*>(args[i].c_str()));
  argv.push_back(nullptr);
  ::execv(driver.c_str(), argv.data());
  throw UsageError("cannot start " + driver + ": " + std::strerror(errno));
}

}  // namespace lmdx::tools

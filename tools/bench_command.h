#ifndef LMDX_TOOLS_BENCH_COMMAND_H_
#define LMDX_TOOLS_BENCH_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "tools/paths.h"

namespace lmdx::tools {

// A benchmark driver `lmdx bench NAME` runs. Drivers start their jobs with `lmdx run` through
// LMDX_TOOL, so they measure what users run.
struct Benchmark {
  const char* name;
  const char* driver;  // relative to bazel-bin
  const char* summary;
};

const std::vector<Benchmark>& Benchmarks();

CLI::App* AddBenchCommand(CLI::App& app);
// args[0] is the benchmark's name, the rest go to its driver. Replaces this process with the
// driver; returns only on failure (throws UsageError for an unknown name or a missing driver).
int BenchCommand(const std::vector<std::string>& args, const Paths& paths);

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_BENCH_COMMAND_H_

// `lmdx bench protocols`: every sample under every protocol on 1, 2 and 4 nodes, beside its
// message, MPI and plain-threads versions, then every synthetic sharing pattern
// (benchmarks/protocols/patterns.cc) under every protocol on 2 and 4 nodes (flags choose), each
// run through `lmdx run` as a user runs it (the threads versions directly), verified by the
// program itself; writes results.json, results.csv, results.md and a chart per sample into --out,
// and prints the tables. The lmdx tool execs this with LMDX_TOOL set.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "benchmarks/net/child_process.h"
#include "benchmarks/protocols/report.h"
#include "benchmarks/protocols/sample_runs.h"

namespace lmdx::bench {
namespace {

// A comma-separated list; "none" is the empty one.
std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  if (text == "none") return items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

const SampleSpec* SampleNamed(const std::string& name) {
  for (const SampleSpec& sample : ReportSamples()) {
    if (sample.name == name) return &sample;
  }
  return nullptr;
}

const PatternSpec* PatternNamed(const std::string& name) {
  for (const PatternSpec& pattern : ReportPatterns()) {
    if (pattern.name == name) return &pattern;
  }
  return nullptr;
}

// Checks the lists; returns "" or what is wrong, naming the flag and the value.
std::string CheckSetup(const ReportSetup& setup) {
  for (const std::string& name : setup.samples) {
    if (SampleNamed(name) == nullptr) {
      return "--samples: no sample '" + name +
             "' (known: jacobi, matmul, fft, radix, prodcons, lu)";
    }
  }
  for (const std::string& name : setup.patterns) {
    if (PatternNamed(name) == nullptr) {
      return "--patterns: no pattern '" + name +
             "' (known: prodcons, migratory, false-sharing, read-mostly, neighbour)";
    }
  }
  for (const std::string& p : setup.protocols) {
    if (p != "sc" && p != "update" && p != "rc" && p != "lrc" && p != "hlrc") {
      return "--protocols: '" + p + "' is not one of sc, update, rc, lrc, hlrc";
    }
  }
  for (int n : setup.nodes) {
    if (n < 1 || n > 64) return "--nodes: " + std::to_string(n) + " is not from 1 to 64";
  }
  for (int n : setup.pattern_nodes) {
    if (n < 1 || n > 64) return "--pattern-nodes: " + std::to_string(n) + " is not from 1 to 64";
  }
  if (setup.samples.empty() && setup.patterns.empty()) {
    return "--samples and --patterns are both none: nothing to run";
  }
  if (setup.protocols.empty() || (!setup.samples.empty() && setup.nodes.empty()) ||
      (!setup.patterns.empty() && setup.pattern_nodes.empty())) {
    return "--protocols, --nodes and --pattern-nodes each need at least one value";
  }
  return "";
}

int Main(int argc, char** argv) {
  std::string tool;
  if (const char* env = std::getenv("LMDX_TOOL")) tool = env;
  std::string samples = "jacobi,matmul,fft,radix,prodcons,lu";
  std::string protocols = "sc,update,rc,lrc,hlrc";
  std::string nodes = "1,2,4";
  std::string patterns = "prodcons,migratory,false-sharing,read-mostly,neighbour";
  std::string pattern_nodes = "2,4";
  std::string out = "protocols-report";
  bool quick = false;
  bool no_baselines = false;
  int repeat = 3;
  CLI::App app{
      "lmdx bench protocols: what each consistency protocol costs on each sample and sharing "
      "pattern, by node count",
      "lmdx bench protocols"};
  app.add_option("--samples", samples, "comma-separated samples, or none")->capture_default_str();
  app.add_option("--protocols", protocols, "comma-separated protocols")->capture_default_str();
  app.add_option("--nodes", nodes, "comma-separated node counts for the samples")
      ->capture_default_str();
  app.add_option("--patterns", patterns, "comma-separated sharing patterns, or none")
      ->capture_default_str();
  app.add_option("--pattern-nodes", pattern_nodes, "comma-separated node counts for the patterns")
      ->capture_default_str();
  app.add_option("--out", out, "folder for results.json, .csv, .md and the charts")
      ->capture_default_str();
  app.add_flag("--quick", quick,
               "small sizes: every path in about two minutes, figures meaningless");
  app.add_option("--repeat", repeat, "runs of each case; the fastest is reported")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  app.add_flag("--no-baselines", no_baselines,
               "skip the samples' explicit-message, MPI and plain-threads versions");
  app.footer(
      "Each run is `lmdx run SAMPLE -n N --protocol P` at the sample's default size "
      "(or --quick's), then `lmdx run patterns -n N --protocol P -- PATTERN` for the sharing "
      "patterns; the threads version runs as `SAMPLE_threads --workers N`, one process. A run "
      "that fails or is not verified is reported as failed and the driver exits 1 at the end.");
  CLI11_PARSE(app, argc, argv);
  if (tool.empty()) {
    std::cerr << "lmdx bench protocols: LMDX_TOOL is not set; run it as `lmdx bench protocols`\n";
    return 2;
  }

  ReportSetup setup;
  setup.samples = SplitList(samples);
  setup.protocols = SplitList(protocols);
  for (const std::string& n : SplitList(nodes)) setup.nodes.push_back(std::atoi(n.c_str()));
  setup.patterns = SplitList(patterns);
  for (const std::string& n : SplitList(pattern_nodes)) {
    setup.pattern_nodes.push_back(std::atoi(n.c_str()));
  }
  setup.quick = quick;
  if (std::string wrong = CheckSetup(setup); !wrong.empty()) {
    std::cerr << "lmdx bench protocols: " << wrong << '\n';
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    std::cerr << "lmdx bench protocols: cannot create " << out << ": " << ec.message() << '\n';
    return 1;
  }

  // What runs: every protocol, then the sample's message, MPI and plain-threads versions, on
  // every node count (the threads version with as many threads as nodes); then every pattern
  // under every protocol on the patterns' node counts.
  struct Planned {
    const SampleSpec* sample;    // a sample's run, or
    const PatternSpec* pattern;  // a pattern's: one of the two is null
    std::string variant;
    int nodes;
  };
  std::vector<Planned> plan;
  for (const std::string& name : setup.samples) {
    const SampleSpec* sample = SampleNamed(name);
    std::vector<std::string> variants = setup.protocols;
    if (!no_baselines && !sample->message_binary.empty()) variants.push_back(kMessages);
    if (!no_baselines && !sample->mpi_binary.empty()) variants.push_back(kMpi);
    if (!no_baselines && !sample->threads_binary.empty()) variants.push_back(kThreads);
    for (const std::string& variant : variants) {
      for (int n : setup.nodes) plan.push_back({sample, nullptr, variant, n});
    }
  }
  for (const std::string& name : setup.patterns) {
    for (const std::string& protocol : setup.protocols) {
      for (int n : setup.pattern_nodes) plan.push_back({nullptr, PatternNamed(name), protocol, n});
    }
  }
  const std::string bin_dir = own_directory() + "/../..";
  std::vector<RunResult> runs;
  std::vector<RunResult> pattern_runs;
  int failed = 0;
  for (const Planned& step : plan) {
    const std::string& name = step.sample ? step.sample->name : step.pattern->name;
    std::fprintf(stderr, "\r[%zu/%zu] %s%s, %s, %d node%s ...          ",
                 runs.size() + pattern_runs.size() + 1, plan.size(), step.pattern ? "pattern " : "",
                 name.c_str(), step.variant.c_str(), step.nodes, step.nodes == 1 ? "" : "s");
    std::fflush(stderr);
    // This machine's figures vary from run to run (other load, the 2 cores' scheduling): the
    // fastest of a few runs is the one least disturbed. A failure in any run is the result.
    RunResult best;
    for (int attempt = 0; attempt < repeat; ++attempt) {
      RunResult run;
      if (step.pattern != nullptr) {
        const PatternSpec& pattern = *step.pattern;
        run = RunPattern(tool, bin_dir, pattern, quick ? pattern.quick_args : pattern.default_args,
                         step.variant, step.nodes, out);
      } else {
        const SampleSpec& sample = *step.sample;
        const std::vector<std::string>& args = quick ? sample.quick_args : sample.default_args;
        if (step.variant == kMessages) {
          run = RunMessageVersion(tool, bin_dir, sample, args, step.nodes, out);
        } else if (step.variant == kMpi) {
          run = RunMpiVersion(bin_dir, sample, args, step.nodes, out);
        } else if (step.variant == kThreads) {
          run = RunThreadsVersion(bin_dir, sample, args, step.nodes, out);
        } else {
          run = RunSample(tool, sample, args, step.variant, step.nodes, out);
        }
      }
      if (!run.ok || attempt == 0 || run.seconds < best.seconds) best = run;
      if (!run.ok) break;
    }
    (step.pattern != nullptr ? pattern_runs : runs).push_back(best);
    if (!best.ok) ++failed;
  }
  std::fprintf(stderr, "\r%zu runs, %d failed%40s\n", plan.size(), failed, "");
  std::remove((out + "/stats.json").c_str());
  std::remove((out + "/stderr.txt").c_str());
  std::string table = WriteReport(out, setup, runs, pattern_runs);
  std::vector<std::string> charts = DrawCharts(out, setup, runs);
  std::cout << table << "\nwritten: " << out << "/results.json, results.csv, results.md";
  for (const std::string& chart : charts) std::cout << ", " << chart;
  std::cout << std::endl;
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace lmdx::bench

int main(int argc, char** argv) { return lmdx::bench::Main(argc, argv); }

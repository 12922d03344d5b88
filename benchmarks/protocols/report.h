// The protocol report's files: results.json, results.csv, results.md (the samples' tables, then the
// sharing patterns') and, when gnuplot is there, one chart per sample (time, faults, messages and
// bytes per protocol and node count).
#ifndef LMDX_BENCHMARKS_PROTOCOLS_REPORT_H_
#define LMDX_BENCHMARKS_PROTOCOLS_REPORT_H_

#include <string>
#include <vector>

#include "benchmarks/protocols/sample_runs.h"

namespace lmdx::bench {

struct ReportSetup {
  std::vector<std::string> samples;
  std::vector<std::string> protocols;
  std::vector<int> nodes;
  std::vector<std::string> patterns;
  std::vector<int> pattern_nodes;
  bool quick = false;
};

// Writes results.json, results.csv and results.md into dir; returns the Markdown tables.
// pattern_runs are the sharing patterns' runs (RunResult::sample is the pattern).
std::string WriteReport(const std::string& dir, const ReportSetup& setup,
                        const std::vector<RunResult>& runs,
                        const std::vector<RunResult>& pattern_runs);

// Draws dir/NAME.png for every sample with gnuplot; returns the files drawn, or an empty list
// after saying on stderr why there are none.
std::vector<std::string> DrawCharts(const std::string& dir, const ReportSetup& setup,
                                    const std::vector<RunResult>& runs);

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_PROTOCOLS_REPORT_H_

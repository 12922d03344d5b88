// Benchmark drivers run a timing job through `lmdx run` and read the figures it prints as
// "PREFIX,NAME,VALUE" lines; every other line is shown only if the job fails.
#ifndef LMDX_BENCHMARKS_NET_JOB_FIGURES_H_
#define LMDX_BENCHMARKS_NET_JOB_FIGURES_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lmdx::bench {

using Figures = std::map<std::string, double>;

// Runs argv with extra_env; false (after lines on stderr naming `what`) when the job failed or
// printed fewer than `expected` figures.
bool RunJobFigures(const std::vector<std::string>& argv,
                   const std::vector<std::pair<std::string, std::string>>& extra_env,
                   const std::string& prefix, std::size_t expected, const char* what,
                   Figures& figures);

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_NET_JOB_FIGURES_H_

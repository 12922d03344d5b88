#include "benchmarks/net/job_figures.h"

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "benchmarks/net/child_process.h"

namespace lmdx::bench {

bool RunJobFigures(const std::vector<std::string>& argv,
                   const std::vector<std::pair<std::string, std::string>>& extra_env,
                   const std::string& prefix, std::size_t expected, const char* what,
                   Figures& figures) {
  const std::string head = prefix + ",";
  std::vector<std::string> other;
  ChildOutcome outcome = run_child(argv, extra_env, [&](const std::string& line) {
    if (line.rfind(head, 0) != 0) {
      other.push_back(line);
      return;
    }
    std::stringstream in(line.substr(head.size()));
    std::string name, value;
    std::getline(in, name, ',');
    std::getline(in, value, ',');
    figures[name] = std::atof(value.c_str());
  });
  if (!outcome.ok() || figures.size() < expected) {
    for (const auto& l : other) std::cerr << "  | " << l << '\n';
    std::cerr << what << ": the job failed: "
              << (outcome.ok() ? "it reported too little" : describe(outcome)) << std::endl;
    return false;
  }
  return true;
}

}  // namespace lmdx::bench

#include "tests/testing/stats_table.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <numeric>
#include <optional>
#include <sstream>

namespace lmdx::testing {

std::vector<std::uint64_t> StatsColumn(const std::string& output, const std::string& column) {
  std::istringstream lines(output);
  std::string line;
  std::optional<std::size_t> at;
  std::vector<std::uint64_t> values;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> cells{std::istream_iterator<std::string>(words), {}};
    if (!cells.empty() && cells[0] == "rank") {
      auto found = std::find(cells.begin(), cells.end(), column);
      at = found == cells.end() ? std::nullopt : std::optional<std::size_t>(found - cells.begin());
    } else if (at && *at < cells.size() && !cells.empty() &&
               std::isdigit(static_cast<unsigned char>(cells[0][0]))) {
      values.push_back(std::stoull(cells[*at]));
    } else {
      at.reset();
    }
  }
  return values;
}

std::uint64_t StatsColumnSum(const std::string& output, const std::string& column) {
  std::vector<std::uint64_t> values = StatsColumn(output, column);
  return std::accumulate(values.begin(), values.end(), std::uint64_t{0});
}

std::uint64_t StatsColumnMax(const std::string& output, const std::string& column) {
  std::vector<std::uint64_t> values = StatsColumn(output, column);
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

std::uint64_t StatsFramesSent(const std::string& output, const std::string& type) {
  // A line such as "  hlrc-fetch       r0:5/20480 r1:5/24": frames/bytes per rank.
  std::istringstream lines(output);
  std::string line;
  std::uint64_t frames = 0;
  while (std::getline(lines, line)) {
    std::istringstream cells(line);
    std::string name;
    if (!(cells >> name) || name != type) continue;
    std::string cell;
    while (cells >> cell) {
      const std::size_t colon = cell.find(':');
      const std::size_t slash = cell.find('/');
      if (cell[0] != 'r' || colon == std::string::npos || slash == std::string::npos ||
          slash < colon) {
        continue;
      }
      frames += std::stoull(cell.substr(colon + 1, slash - colon - 1));
    }
  }
  return frames;
}

}  // namespace lmdx::testing

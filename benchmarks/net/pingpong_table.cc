#include "benchmarks/net/pingpong_table.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>

namespace lmdx::bench {
namespace {

struct Row {
  const PingPongResult* lmdx = nullptr;
  const PingPongResult* mpi = nullptr;
};

// Every size either run measured, in increasing order; a size one run lacks shows as "-".
std::map<std::uint64_t, Row> rows_of(const PingPongComparison& c) {
  std::map<std::uint64_t, Row> rows;
  if (c.lmdx) {
    for (const auto& r : *c.lmdx) rows[r.size_bytes].lmdx = &r;
  }
  if (c.mpi) {
    for (const auto& r : *c.mpi) rows[r.size_bytes].mpi = &r;
  }
  return rows;
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

// Latency and bandwidth span six orders of magnitude: keep about four significant digits.
std::string latency_text(double us) { return fixed(us, us < 10 ? 2 : us < 1000 ? 1 : 0); }
std::string bandwidth_text(double mbps) { return fixed(mbps, mbps < 10 ? 2 : mbps < 100 ? 1 : 0); }

std::optional<double> ratio(double a, double b) {
  if (b <= 0) return std::nullopt;
  return a / b;
}

// A row's ratios: with rounds, the medians of the rounds' own (the bandwidth ratio of a round is
// the inverse of its latency ratio, the sizes being the same), else those of the two figures
// shown. The lowest and highest latency ratio over the rounds, when there were rounds.
struct RowRatios {
  std::optional<double> latency;
  std::optional<double> bandwidth;
  std::optional<std::pair<double, double>> latency_range;
};

RowRatios ratios_of(const PingPongComparison& c, std::uint64_t size, const Row& row) {
  RowRatios out;
  auto rounds = c.round_latency_ratios.find(size);
  if (rounds != c.round_latency_ratios.end() && !rounds->second.empty()) {
    const std::vector<double>& latency = rounds->second;
    std::vector<double> bandwidth(latency.size());
    std::transform(latency.begin(), latency.end(), bandwidth.begin(),
                   [](double value) { return 1.0 / value; });
    out.latency = median(latency);
    out.bandwidth = median(bandwidth);
    auto [lowest, highest] = std::minmax_element(latency.begin(), latency.end());
    out.latency_range = std::make_pair(*lowest, *highest);
  } else if (row.lmdx && row.mpi) {
    out.latency = ratio(row.lmdx->latency_us, row.mpi->latency_us);
    // Same size on both sides, so this equals the bandwidth ratio without the rounding of tiny
    // bandwidths in the printed lines.
    out.bandwidth = ratio(row.mpi->latency_us, row.lmdx->latency_us);
  }
  return out;
}

}  // namespace

std::string human_size(std::uint64_t bytes) {
  constexpr std::uint64_t KiB = 1024;
  constexpr std::uint64_t MiB = KiB * KiB;
  if (bytes >= MiB && bytes % MiB == 0) return std::to_string(bytes / MiB) + " MiB";
  if (bytes >= KiB && bytes % KiB == 0) return std::to_string(bytes / KiB) + " KiB";
  return std::to_string(bytes) + " B";
}

std::vector<PingPongResult> combine_rounds(const std::vector<std::vector<PingPongResult>>& rounds) {
  std::map<std::uint64_t, std::vector<double>> latencies;
  for (const auto& round : rounds) {
    for (const auto& r : round) latencies[r.size_bytes].push_back(r.latency_us);
  }
  std::vector<PingPongResult> combined;
  for (auto& [size, values] : latencies) {
    PingPongResult r;
    r.size_bytes = size;
    r.latency_us = median(values);
    r.bandwidth_mbps = r.latency_us > 0 ? static_cast<double>(size) / r.latency_us : 0.0;
    combined.push_back(r);
  }
  return combined;
}

std::map<std::uint64_t, std::vector<double>> round_ratios(
    const std::vector<std::vector<PingPongResult>>& lmdx,
    const std::vector<std::vector<PingPongResult>>& mpi) {
  std::map<std::uint64_t, std::vector<double>> ratios;
  for (std::size_t round = 0; round < lmdx.size() && round < mpi.size(); ++round) {
    std::map<std::uint64_t, double> mpi_latency;
    for (const auto& r : mpi[round]) mpi_latency[r.size_bytes] = r.latency_us;
    for (const auto& r : lmdx[round]) {
      auto found = mpi_latency.find(r.size_bytes);
      if (found == mpi_latency.end()) continue;
      if (std::optional<double> value = ratio(r.latency_us, found->second)) {
        ratios[r.size_bytes].push_back(*value);
      }
    }
  }
  return ratios;
}

void print_table(const PingPongComparison& c, std::ostream& out) {
  const bool both = c.lmdx && c.mpi;
  char line[256];
  std::snprintf(line, sizeof line, "%10s", "size");
  out << line;
  if (c.lmdx) {
    std::snprintf(line, sizeof line, " %14s %12s", "LMDX lat (us)", "LMDX MB/s");
    out << line;
  }
  if (c.mpi) {
    std::snprintf(line, sizeof line, " %14s %12s", "MPI lat (us)", "MPI MB/s");
    out << line;
  }
  const bool ranges = both && !c.round_latency_ratios.empty();
  if (both) {
    std::snprintf(line, sizeof line, " %10s %10s", "lat ratio", "bw ratio");
    out << line;
  }
  if (ranges) {
    std::snprintf(line, sizeof line, " %16s", "lat ratio range");
    out << line;
  }
  out << '\n';

  for (const auto& [size, row] : rows_of(c)) {
    std::snprintf(line, sizeof line, "%10s", human_size(size).c_str());
    out << line;
    auto columns = [&](const PingPongResult* r) {
      std::snprintf(line, sizeof line, " %14s %12s", r ? latency_text(r->latency_us).c_str() : "-",
                    r ? bandwidth_text(r->bandwidth_mbps).c_str() : "-");
      out << line;
    };
    if (c.lmdx) columns(row.lmdx);
    if (c.mpi) columns(row.mpi);
    const RowRatios ratios = ratios_of(c, size, row);
    if (both) {
      std::snprintf(line, sizeof line, " %10s %10s",
                    ratios.latency ? (fixed(*ratios.latency, 2) + "x").c_str() : "-",
                    ratios.bandwidth ? (fixed(*ratios.bandwidth, 2) + "x").c_str() : "-");
      out << line;
    }
    if (ranges) {
      std::string text = ratios.latency_range ? fixed(ratios.latency_range->first, 2) + "-" +
                                                    fixed(ratios.latency_range->second, 2) + "x"
                                              : "-";
      std::snprintf(line, sizeof line, " %16s", text.c_str());
      out << line;
    }
    out << '\n';
  }
}

void write_csv(const PingPongComparison& c, std::ostream& out) {
  const bool both = c.lmdx && c.mpi;
  out << "size_bytes";
  if (c.lmdx) out << ",lmdx_latency_us,lmdx_bandwidth_MBps";
  if (c.mpi) out << ",mpi_latency_us,mpi_bandwidth_MBps";
  const bool ranges = both && !c.round_latency_ratios.empty();
  if (both) out << ",latency_ratio_lmdx_over_mpi,bandwidth_ratio_lmdx_over_mpi";
  if (ranges) out << ",latency_ratio_lowest,latency_ratio_highest";
  out << '\n';
  for (const auto& [size, row] : rows_of(c)) {
    out << size;
    auto columns = [&](const PingPongResult* r) {
      if (r) {
        out << ',' << fixed(r->latency_us, 3) << ',' << fixed(r->bandwidth_mbps, 3);
      } else {
        out << ",,";
      }
    };
    if (c.lmdx) columns(row.lmdx);
    if (c.mpi) columns(row.mpi);
    const RowRatios ratios = ratios_of(c, size, row);
    if (both) {
      out << ',' << (ratios.latency ? fixed(*ratios.latency, 4) : "") << ','
          << (ratios.bandwidth ? fixed(*ratios.bandwidth, 4) : "");
    }
    if (ranges) {
      if (ratios.latency_range) {
        out << ',' << fixed(ratios.latency_range->first, 4) << ','
            << fixed(ratios.latency_range->second, 4);
      } else {
        out << ",,";
      }
    }
    out << '\n';
  }
}

}  // namespace lmdx::bench

// The driver's report: LMDX and MPI results side by side, per message size, as a table for
// people and as CSV for scripts.
#ifndef LMDX_BENCHMARKS_NET_PINGPONG_TABLE_H_
#define LMDX_BENCHMARKS_NET_PINGPONG_TABLE_H_

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/net/pingpong_common.h"

namespace lmdx::bench {

// One run's results, or nothing when that run was not made or failed; absent runs get no columns.
// With several rounds, each side's figures are the medians over the rounds, and the latency
// ratio's lowest and highest over the rounds (each LMDX run against the MPI run beside it) show
// how far one round could be trusted on this machine.
struct PingPongComparison {
  std::optional<std::vector<PingPongResult>> lmdx;
  std::optional<std::vector<PingPongResult>> mpi;
  std::map<std::uint64_t, std::pair<double, double>> latency_ratio_range;  // by size
};

// Several rounds' results of one side as one: per size, the median latency over the rounds (and
// the bandwidth of that latency). Sizes missing from a round are taken from the others.
std::vector<PingPongResult> combine_rounds(const std::vector<std::vector<PingPongResult>>& rounds);
// Per size both sides measured in a round, the lowest and highest LMDX/MPI latency ratio.
std::map<std::uint64_t, std::pair<double, double>> ratio_ranges(
    const std::vector<std::vector<PingPongResult>>& lmdx,
    const std::vector<std::vector<PingPongResult>>& mpi);

// "8 B", "4 KiB", "64 MiB"; sizes that are not whole KiB or MiB stay in bytes.
std::string human_size(std::uint64_t bytes);

void print_table(const PingPongComparison& comparison, std::ostream& out);
void write_csv(const PingPongComparison& comparison, std::ostream& out);

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_NET_PINGPONG_TABLE_H_

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
// With several rounds, each side's figures are the medians over the rounds, and each round's
// ratio (its LMDX job against the MPI job beside it) is kept: the ratios shown are the medians of
// those, and their lowest and highest show how far one round could be trusted on this machine.
// The ratio of the two sides' medians would compare jobs minutes apart: this machine changes
// state within seconds, sometimes in ways the driver's look at it does not see (a 1 MiB tcp round
// took 111 or 538 us for LMDX and 120 or 630 for OpenMPI within one run), and the two medians
// could then come from different states (538 against 123, 4.4x, where the rounds said 0.9x).
struct PingPongComparison {
  std::optional<std::vector<PingPongResult>> lmdx;
  std::optional<std::vector<PingPongResult>> mpi;
  std::map<std::uint64_t, std::vector<double>> round_latency_ratios;  // by size, LMDX/MPI
};

// Several rounds' results of one side as one: per size, the median latency over the rounds (and
// the bandwidth of that latency). Sizes missing from a round are taken from the others.
std::vector<PingPongResult> combine_rounds(const std::vector<std::vector<PingPongResult>>& rounds);
// Per size, the LMDX/MPI latency ratio of each round that measured it on both sides.
std::map<std::uint64_t, std::vector<double>> round_ratios(
    const std::vector<std::vector<PingPongResult>>& lmdx,
    const std::vector<std::vector<PingPongResult>>& mpi);

// "8 B", "4 KiB", "64 MiB"; sizes that are not whole KiB or MiB stay in bytes.
std::string human_size(std::uint64_t bytes);

void print_table(const PingPongComparison& comparison, std::ostream& out);
void write_csv(const PingPongComparison& comparison, std::ostream& out);

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_NET_PINGPONG_TABLE_H_

// The driver's report: LMDX and MPI results side by side, per message size, as a table for
// people and as CSV for scripts.
#ifndef LMDX_BENCHMARKS_NET_PINGPONG_TABLE_H_
#define LMDX_BENCHMARKS_NET_PINGPONG_TABLE_H_

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/net/pingpong_common.h"

namespace lmdx::bench {

// One run's results, or nothing when that run was not made or failed; absent runs get no columns.
struct PingPongComparison {
  std::optional<std::vector<PingPongResult>> lmdx;
  std::optional<std::vector<PingPongResult>> mpi;
};

// "8 B", "4 KiB", "64 MiB"; sizes that are not whole KiB or MiB stay in bytes.
std::string human_size(std::uint64_t bytes);

void print_table(const PingPongComparison& comparison, std::ostream& out);
void write_csv(const PingPongComparison& comparison, std::ostream& out);

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_NET_PINGPONG_TABLE_H_

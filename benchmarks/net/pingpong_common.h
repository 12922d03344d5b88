// The ping-pong pattern shared by the LMDX and MPI versions of the benchmark, so that both
// measure exactly the same thing and differ only in the two calls that move a message.
#ifndef LMDX_BENCHMARKS_NET_PINGPONG_COMMON_H_
#define LMDX_BENCHMARKS_NET_PINGPONG_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace lmdx::bench {

struct PingPongOptions {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = std::uint64_t{64} << 20;
  int reps = 5;
  // Each timed repetition aims at this long: long enough to swamp the clock's resolution and a
  // stray scheduler tick, short enough that the whole sweep stays within a few seconds.
  double target_ms = 100.0;
};

// Adds --min, --max, --reps and --target-ms to app. Both programs and the driver accept the same
// flags, so the driver can pass them through unchanged.
void add_pingpong_flags(CLI::App& app, PingPongOptions& options);

// The standard sizes (8 B, 64 B, ..., 256 KiB, 1 MiB, 8 MiB, 64 MiB) within [min, max], plus min
// and max themselves, so that `--min 100 --max 100` measures exactly 100 B.
std::vector<std::uint64_t> pingpong_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes);

// A pattern that depends on the message size: a stale buffer left over from another size, or a
// buffer never written by a receive, does not pass for the right contents.
void fill_pattern(std::span<std::byte> buf, std::uint64_t size);
// Index of the first byte that differs from the pattern, or -1 when all match.
std::int64_t check_pattern(std::span<const std::byte> buf, std::uint64_t size);

double median(std::vector<double> values);

// The only difference between the two programs: how one message goes to or comes from the peer.
class PingPongChannel {
 public:
  virtual ~PingPongChannel() = default;
  virtual void send(const void* buf, std::size_t len) = 0;
  // Returns the received length; a message longer than cap is an error the channel reports.
  virtual std::size_t recv(void* buf, std::size_t cap) = 0;
  // Ends the whole job after a failed check, from whichever rank found it.
  [[noreturn]] virtual void fail(const std::string& message) = 0;
};

struct PingPongResult {
  std::uint64_t size_bytes = 0;
  double latency_us = 0;      // median over repetitions of half the round-trip time
  double bandwidth_mbps = 0;  // size / latency, in 10^6 bytes per second
  std::uint64_t iterations = 0;
};

// The machine-readable lines both programs print and the driver parses.
inline constexpr const char* kPingPongHeader = "size_bytes,latency_us,bandwidth_MBps";
std::string format_result_line(const PingPongResult& result);
// Parses one line printed by format_result_line; false for anything else (headers, comments,
// output of the launcher).
bool parse_result_line(const std::string& line, PingPongResult& result);

// Runs the whole sweep. Rank 0 drives and prints to out; rank 1 echoes. Other ranks return at
// once. Returns on both ranks when the sweep is over.
void run_pingpong(const PingPongOptions& options, int rank, PingPongChannel& channel,
                  std::ostream& out);

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_NET_PINGPONG_COMMON_H_

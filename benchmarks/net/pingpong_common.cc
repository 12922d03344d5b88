#include "benchmarks/net/pingpong_common.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <sstream>

namespace lmdx::bench {
namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

// Calibration stops once one phase lasts this fraction of the target: long enough for a stable
// estimate of the per-round-trip time, short enough to cost little. It also serves as warm-up
// (connections opened, buffers touched, caches and branch predictors trained).
constexpr double kCalibrationFraction = 0.1;
constexpr std::uint64_t kMinCalibrationPhases = 2;
constexpr std::uint64_t kMaxIterations = 10'000'000;

// Rank 0 tells rank 1 what comes next in a small message of its own, outside the timed loops,
// so that rank 1 needs no copy of rank 0's decisions (iteration counts come from timing).
struct Control {
  std::uint64_t size = 0;  // message size of the next phase; with iterations 0: the sweep is over
  std::uint64_t iterations = 0;
  std::uint64_t verify = 0;  // 1: clear the buffer before the phase and check the last message
};

using Clock = std::chrono::steady_clock;

std::uint8_t size_seed(std::uint64_t size) {
  // splitmix64 finaliser: neighbouring sizes get unrelated seeds.
  std::uint64_t z = size + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::uint8_t>(z ^ (z >> 31));
}

// Position-dependent, so a message delivered shifted or with a block repeated fails the check.
inline std::uint8_t pattern_byte(std::uint64_t i, std::uint8_t seed) {
  return static_cast<std::uint8_t>(seed + i * 37 + (i >> 8) * 11 + (i >> 16) * 5);
}

std::string describe_mismatch(std::uint64_t size, std::int64_t at) {
  std::ostringstream s;
  s << "ping-pong: the message of " << size << " bytes arrived with wrong contents (first bad byte "
    << at << ")";
  return s.str();
}

class Driver {
 public:
  Driver(const PingPongOptions& options, PingPongChannel& channel, std::ostream& out)
      : options_(options), channel_(channel), out_(out) {}

  void run() {
    out_ << kPingPongHeader << '\n' << std::flush;
    for (std::uint64_t size : pingpong_sizes(options_.min_bytes, options_.max_bytes)) {
      out_ << format_result_line(measure(size)) << '\n' << std::flush;
    }
    send_control(Control{});
  }

 private:
  PingPongResult measure(std::uint64_t size) {
    // At least one byte, so that a 0-byte message still has a valid buffer address.
    send_buf_.resize(std::max<std::uint64_t>(size, 1));
    recv_buf_.resize(send_buf_.size());
    fill_pattern(send_buf_, size);

    const std::uint64_t iterations = calibrate(size);
    std::vector<double> half_rtt_us;
    for (int rep = 0; rep < options_.reps; ++rep) {
      const bool verify = rep == options_.reps - 1;
      if (verify) std::fill(recv_buf_.begin(), recv_buf_.end(), std::byte{0});
      const double seconds = phase(size, iterations, verify);
      half_rtt_us.push_back(seconds * 1e6 / (2.0 * static_cast<double>(iterations)));
    }
    const std::int64_t bad = check_pattern(std::span(recv_buf_).first(size), size);
    if (bad >= 0) channel_.fail(describe_mismatch(size, bad));

    PingPongResult result;
    result.size_bytes = size;
    result.iterations = iterations;
    result.latency_us = median(half_rtt_us);
    result.bandwidth_mbps =
        result.latency_us > 0 ? static_cast<double>(size) / result.latency_us : 0.0;
    return result;
  }

  // Doubles the iteration count until one phase lasts long enough to time, then scales it to
  // the target, so small messages run many round trips and 64 MiB only a few.
  std::uint64_t calibrate(std::uint64_t size) {
    const double target_s = options_.target_ms / 1e3;
    std::uint64_t n = 1;
    for (std::uint64_t phases = 1;; ++phases, n *= 2) {
      const double seconds = phase(size, n, false);
      if ((phases >= kMinCalibrationPhases && seconds >= target_s * kCalibrationFraction) ||
          n >= kMaxIterations) {
        const double per_round_trip = seconds / static_cast<double>(n);
        const double limit = static_cast<double>(kMaxIterations);
        const double wanted = per_round_trip > 0 ? target_s / per_round_trip : limit;
        return static_cast<std::uint64_t>(std::llround(std::clamp(wanted, 1.0, limit)));
      }
    }
  }

  double phase(std::uint64_t size, std::uint64_t iterations, bool verify) {
    send_control(Control{size, iterations, verify ? 1u : 0u});
    // Rank 1 answers once it is ready, so its preparation stays outside the timed loop.
    Control ack;
    channel_.recv(&ack, sizeof ack);

    const auto start = Clock::now();
    for (std::uint64_t i = 0; i < iterations; ++i) {
      channel_.send(send_buf_.data(), size);
      const std::size_t got = channel_.recv(recv_buf_.data(), size);
      if (got != size) {
        channel_.fail("ping-pong: sent " + std::to_string(size) + " bytes, got back " +
                      std::to_string(got));
      }
    }
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  void send_control(const Control& control) { channel_.send(&control, sizeof control); }

  const PingPongOptions& options_;
  PingPongChannel& channel_;
  std::ostream& out_;
  std::vector<std::byte> send_buf_;
  std::vector<std::byte> recv_buf_;
};

void echo(PingPongChannel& channel) {
  std::vector<std::byte> buf;
  for (;;) {
    Control control;
    if (channel.recv(&control, sizeof control) != sizeof control) {
      channel.fail("ping-pong: rank 1 got a malformed control message");
    }
    if (control.iterations == 0) return;
    if (buf.size() < std::max<std::uint64_t>(control.size, 1)) {
      buf.resize(std::max<std::uint64_t>(control.size, 1));
    }
    if (control.verify) std::fill(buf.begin(), buf.end(), std::byte{0});
    channel.send(&control, sizeof control);

    std::size_t got = 0;
    for (std::uint64_t i = 0; i < control.iterations; ++i) {
      got = channel.recv(buf.data(), buf.size());
      channel.send(buf.data(), got);
    }
    if (control.verify) {
      if (got != control.size) {
        channel.fail("ping-pong: rank 1 expected " + std::to_string(control.size) + " bytes, got " +
                     std::to_string(got));
      }
      const std::int64_t bad = check_pattern(std::span(buf).first(got), control.size);
      if (bad >= 0) channel.fail(describe_mismatch(control.size, bad));
    }
  }
}

}  // namespace

void add_pingpong_flags(CLI::App& app, PingPongOptions& options) {
  app.add_option("--min", options.min_bytes, "smallest message size (e.g. 8, 4KiB)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--max", options.max_bytes, "largest message size (e.g. 1MiB, 64MiB)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--reps", options.reps, "timed repetitions per size; the median is reported")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--target-ms", options.target_ms, "aimed duration of one timed repetition")
      ->check(CLI::Range(1.0, 60000.0))
      ->capture_default_str();
}

std::vector<std::uint64_t> pingpong_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes) {
  static constexpr std::uint64_t kStandard[] = {8,         64,      512,     4 * KiB, 32 * KiB,
                                                256 * KiB, 1 * MiB, 8 * MiB, 64 * MiB};
  std::vector<std::uint64_t> sizes;
  if (min_bytes > max_bytes) return sizes;
  sizes.push_back(min_bytes);
  for (std::uint64_t s : kStandard) {
    if (s > min_bytes && s < max_bytes) sizes.push_back(s);
  }
  if (max_bytes != min_bytes) sizes.push_back(max_bytes);
  return sizes;
}

void fill_pattern(std::span<std::byte> buf, std::uint64_t size) {
  const std::uint8_t seed = size_seed(size);
  for (std::uint64_t i = 0; i < buf.size(); ++i) buf[i] = std::byte{pattern_byte(i, seed)};
}

std::int64_t check_pattern(std::span<const std::byte> buf, std::uint64_t size) {
  const std::uint8_t seed = size_seed(size);
  for (std::uint64_t i = 0; i < buf.size(); ++i) {
    if (buf[i] != std::byte{pattern_byte(i, seed)}) return static_cast<std::int64_t>(i);
  }
  return -1;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  if (values.size() % 2 == 1) return values[mid];
  const double upper = values[mid];
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2.0;
}

std::string format_result_line(const PingPongResult& result) {
  char line[96];
  std::snprintf(line, sizeof line, "%llu,%.3f,%.3f",
                static_cast<unsigned long long>(result.size_bytes), result.latency_us,
                result.bandwidth_mbps);
  return line;
}

bool parse_result_line(const std::string& line, PingPongResult& result) {
  unsigned long long size = 0;
  double latency = 0;
  double bandwidth = 0;
  int consumed = 0;
  if (std::sscanf(line.c_str(), "%llu,%lf,%lf%n", &size, &latency, &bandwidth, &consumed) != 3) {
    return false;
  }
  // Tolerate a trailing carriage return or spaces, nothing else.
  for (std::size_t i = static_cast<std::size_t>(consumed); i < line.size(); ++i) {
    if (line[i] != '\r' && line[i] != ' ') return false;
  }
  if (line.empty() || line[0] < '0' || line[0] > '9') return false;
  result = PingPongResult{size, latency, bandwidth, 0};
  return true;
}

void run_pingpong(const PingPongOptions& options, int rank, PingPongChannel& channel,
                  std::ostream& out) {
  if (rank == 0) {
    Driver(options, channel, out).run();
  } else if (rank == 1) {
    echo(channel);
  }
}

}  // namespace lmdx::bench

// Checks the parts of the ping-pong both programs share, over an in-process channel, so that a
// broken pattern check or parser shows up here rather than as plausible-looking numbers.
#include "benchmarks/net/pingpong_common.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "benchmarks/net/pingpong_table.h"

namespace lmdx::bench {
namespace {

struct Failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One direction of a two-thread message pipe; closing it wakes and fails every waiter, so a
// failing rank never leaves the other blocked.
class Queue {
 public:
  void push(std::vector<std::byte> m) {
    std::lock_guard lock(mu_);
    messages_.push_back(std::move(m));
    cv_.notify_all();
  }
  std::vector<std::byte> pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !messages_.empty(); });
    if (closed_) throw Failed("closed");
    auto m = std::move(messages_.front());
    messages_.pop_front();
    return m;
  }
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<std::byte>> messages_;
  bool closed_ = false;
};

class QueueChannel : public PingPongChannel {
 public:
  QueueChannel(Queue& in, Queue& out, std::size_t corrupt_len = 0)
      : in_(in), out_(out), corrupt_len_(corrupt_len) {}
  void send(const void* buf, std::size_t len) override {
    const auto* p = static_cast<const std::byte*>(buf);
    std::vector<std::byte> m(p, p + len);
    // Damages one byte of every message of the chosen length, as a broken transport would.
    if (corrupt_len_ != 0 && len == corrupt_len_) m[len / 2] ^= std::byte{1};
    out_.push(std::move(m));
  }
  std::size_t recv(void* buf, std::size_t cap) override {
    auto m = in_.pop();
    if (m.size() > cap) fail("truncated");
    if (!m.empty()) std::memcpy(buf, m.data(), m.size());
    return m.size();
  }
  [[noreturn]] void fail(const std::string& message) override {
    in_.close();
    out_.close();
    throw Failed(message);
  }

 private:
  Queue& in_;
  Queue& out_;
  std::size_t corrupt_len_;
};

// Runs both ranks; returns rank 0's output, or throws rank 0's failure.
std::string run_pair(const PingPongOptions& options, std::size_t corrupt_len = 0) {
  Queue to0, to1;
  QueueChannel rank0(to0, to1);
  QueueChannel rank1(to1, to0, corrupt_len);
  std::thread echo([&] {
    try {
      std::ostringstream ignored;
      run_pingpong(options, 1, rank1, ignored);
    } catch (const Failed&) {
    }
  });
  std::ostringstream out;
  try {
    run_pingpong(options, 0, rank0, out);
  } catch (...) {
    echo.join();
    throw;
  }
  echo.join();
  return out.str();
}

TEST(PingPongSizes, StandardSweepAndBounds) {
  EXPECT_EQ(
      pingpong_sizes(8, 64 << 20),
      (std::vector<std::uint64_t>{8, 64, 512, 4096, 32768, 262144, 1 << 20, 8 << 20, 64 << 20}));
  EXPECT_EQ(pingpong_sizes(100, 100), (std::vector<std::uint64_t>{100}));
  EXPECT_EQ(pingpong_sizes(100, 5000), (std::vector<std::uint64_t>{100, 512, 4096, 5000}));
  EXPECT_TRUE(pingpong_sizes(10, 9).empty());
}

TEST(PingPongPattern, DetectsDamageShiftsAndOtherSizes) {
  std::vector<std::byte> buf(100000);
  fill_pattern(buf, buf.size());
  EXPECT_EQ(check_pattern(buf, buf.size()), -1);
  EXPECT_NE(check_pattern(buf, buf.size() - 1), -1);                      // another size's pattern
  EXPECT_NE(check_pattern(std::span(buf).subspan(256), buf.size()), -1);  // shifted by 256
  buf[777] ^= std::byte{0x80};
  EXPECT_EQ(check_pattern(buf, buf.size()), 777);
}

TEST(PingPongStats, Median) {
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

TEST(PingPongOutput, LinesRoundTripAndOthersAreRejected) {
  PingPongResult r;
  ASSERT_TRUE(parse_result_line(format_result_line({4096, 11.5, 356.17, 0}), r));
  EXPECT_EQ(r.size_bytes, 4096u);
  EXPECT_DOUBLE_EQ(r.latency_us, 11.5);
  EXPECT_DOUBLE_EQ(r.bandwidth_mbps, 356.17);
  for (const char* other :
       {kPingPongHeader, "", "# note", "8,1.0", "8,1,2,3", "-8,1,2", "[1] 8,1,2", "8,1,2 junk"}) {
    EXPECT_FALSE(parse_result_line(other, r)) << other;
  }
}

TEST(PingPongRun, MeasuresEverySizeAndChecksContents) {
  PingPongOptions options{.min_bytes = 0, .max_bytes = 40000, .reps = 3, .target_ms = 2};
  std::istringstream lines(run_pair(options));
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, kPingPongHeader);
  std::vector<std::uint64_t> sizes;
  while (std::getline(lines, line)) {
    PingPongResult r;
    ASSERT_TRUE(parse_result_line(line, r)) << line;
    EXPECT_GT(r.latency_us, 0);
    sizes.push_back(r.size_bytes);
  }
  EXPECT_EQ(sizes, pingpong_sizes(0, 40000));
}

TEST(PingPongRun, DamagedEchoIsCaught) {
  PingPongOptions options{.min_bytes = 512, .max_bytes = 4096, .reps = 2, .target_ms = 1};
  EXPECT_THROW(run_pair(options, 4096), Failed);
}

TEST(PingPongTable, RatiosAndMissingColumns) {
  PingPongComparison c;
  c.lmdx = std::vector<PingPongResult>{{8, 13, 8.0 / 13, 0}, {64, 20, 3.2, 0}};
  c.mpi = std::vector<PingPongResult>{{8, 10, 0.8, 0}};
  std::ostringstream csv;
  write_csv(c, csv);
  EXPECT_EQ(csv.str(),
            "size_bytes,lmdx_latency_us,lmdx_bandwidth_MBps,mpi_latency_us,mpi_bandwidth_MBps,"
            "latency_ratio_lmdx_over_mpi,bandwidth_ratio_lmdx_over_mpi\n"
            "8,13.000,0.615,10.000,0.800,1.3000,0.7692\n"
            "64,20.000,3.200,,,,\n");
  c.mpi.reset();
  std::ostringstream table;
  print_table(c, table);
  EXPECT_EQ(table.str().find("MPI"), std::string::npos);
  EXPECT_NE(table.str().find("64 B"), std::string::npos);
  EXPECT_EQ(human_size(64 << 20), "64 MiB");
  EXPECT_EQ(human_size(1000), "1000 B");
}

// Each round's ratio is taken between its own two jobs, and the ratios shown are the medians of
// those: the two sides' medians (14 against 10 at 8 B) would pair jobs from different rounds.
TEST(PingPongTable, RoundsCombineIntoMediansAndPairedRatios) {
  std::vector<std::vector<PingPongResult>> lmdx = {
      {{8, 12, 0, 0}, {1024, 100, 0, 0}}, {{8, 30, 0, 0}, {1024, 110, 0, 0}}, {{8, 14, 0, 0}}};
  std::vector<std::vector<PingPongResult>> mpi = {
      {{8, 10, 0, 0}, {1024, 100, 0, 0}}, {{8, 10, 0, 0}, {1024, 100, 0, 0}}, {{8, 20, 0, 0}}};
  std::vector<PingPongResult> combined = combine_rounds(lmdx);
  ASSERT_EQ(combined.size(), 2u);
  EXPECT_EQ(combined[0].size_bytes, 8u);
  EXPECT_DOUBLE_EQ(combined[0].latency_us, 14);  // the median of 12, 30 and 14
  EXPECT_DOUBLE_EQ(combined[0].bandwidth_mbps, 8.0 / 14);
  EXPECT_DOUBLE_EQ(combined[1].latency_us, 105);  // two rounds measured it

  PingPongComparison c;
  c.lmdx = combined;
  c.mpi = combine_rounds(mpi);
  c.round_latency_ratios = round_ratios(lmdx, mpi);
  ASSERT_EQ(c.round_latency_ratios.size(), 2u);
  // 12 against 10, 30 against 10, 14 against 20.
  EXPECT_EQ(c.round_latency_ratios[8], (std::vector<double>{1.2, 3.0, 0.7}));
  EXPECT_EQ(c.round_latency_ratios[1024], (std::vector<double>{1.0, 1.1}));
  std::ostringstream table;
  print_table(c, table);
  EXPECT_NE(table.str().find("lat ratio range"), std::string::npos) << table.str();
  // 8 B: the median latency ratio 1.20x (not 1.40x), the median bandwidth ratio 1/1.2.
  EXPECT_NE(table.str().find("1.20x      0.83x       0.70-3.00x"), std::string::npos)
      << table.str();
  EXPECT_EQ(table.str().find("1.40x"), std::string::npos) << table.str();
  std::ostringstream csv;
  write_csv(c, csv);
  EXPECT_NE(csv.str().find(",latency_ratio_lowest,latency_ratio_highest\n"), std::string::npos);
  EXPECT_NE(csv.str().find("\n8,14.000,0.571,10.000,0.800,1.2000,0.8333,0.7000,3.0000\n"),
            std::string::npos)
      << csv.str();
  // Two rounds at 1 KiB: the medians are the means of the two.
  EXPECT_NE(csv.str().find(",1.0500,0.9545,1.0000,1.1000\n"), std::string::npos) << csv.str();
}

}  // namespace
}  // namespace lmdx::bench

#include "benchmarks/net/overlap_common.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace lmdx::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kData = 0;
constexpr int kControl = 1;

double Since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Computation the caller does between post and wait: the core stays busy, as a program's would.
void Compute(double us) {
  auto until = Clock::now() + std::chrono::duration<double, std::micro>(us);
  while (Clock::now() < until) {
  }
}

class Phases {
 public:
  Phases(OverlapChannel& channel, std::size_t bytes, double target_ms)
      : channel_(channel), me_(channel.rank()), bytes_(bytes), out_(bytes), in_(bytes + 64) {
    for (std::size_t i = 0; i < bytes; ++i) out_[i] = static_cast<std::byte>(i * 7 + bytes);
    // A first guess from the size; the round trip measured next sets the rest.
    reps_ = std::clamp<int>(static_cast<int>(target_ms * 1000 / (20 + bytes / 500.0)), 10, 5000);
  }

  // A tiny message each way: both ranks leave it together.
  void Sync() {
    char token = 0;
    int r = channel_.irecv(&token, 1, kControl);
    channel_.wait(channel_.isend(&token, 1, kControl));
    channel_.wait(r);
  }

  void Receive() { channel_.wait(channel_.irecv(in_.data(), in_.size(), kData)); }
  void Send() { channel_.wait(channel_.isend(out_.data(), bytes_, kData)); }

  // Half a round trip, rank 0 timing.
  double HalfRoundTrip() {
    Sync();
    auto start = Clock::now();
    for (int i = 0; i < reps_; ++i) {
      if (me_ == 0) {
        Send();
        Receive();
      } else {
        Receive();
        Send();
      }
    }
    double half = Since(start) / (2.0 * reps_);
    half_ = half;
    return half;
  }

  // o_s: rank 0's isend plus wait, each after the network has drained from the one before.
  double SendOverhead() {
    Sync();
    double total = 0;
    for (int i = 0; i < reps_; ++i) {
      if (me_ == 0) {
        auto start = Clock::now();
        Send();
        total += Since(start);
        Compute(2 * half_ + 5);
      } else {
        Receive();
      }
    }
    Sync();
    return total / reps_;
  }

  // o_r: rank 1's irecv plus wait once its message is surely there (it asked for it, then
  // computed for three of the size's half round trips).
  double ReceiveOverhead() {
    Sync();
    double total = 0;
    char go = 1;
    for (int i = 0; i < reps_; ++i) {
      if (me_ == 0) {
        channel_.wait(channel_.irecv(&go, 1, kControl));
        Send();
      } else {
        channel_.wait(channel_.isend(&go, 1, kControl));
        Compute(3 * half_ + 5);
        auto start = Clock::now();
        Receive();
        total += Since(start);
      }
    }
    // Rank 1 measured; rank 0 reports.
    double mean = total / reps_;
    if (me_ == 1) {
      channel_.wait(channel_.isend(&mean, sizeof mean, kControl));
    } else {
      channel_.wait(channel_.irecv(&mean, sizeof mean, kControl));
    }
    Sync();
    return mean;
  }

  // g: a stream of messages, rank 1's receives posted first, timed on rank 0 until rank 1 says
  // it has them all (the ack's half round trip, small_half, taken off).
  double Gap(double small_half) {
    int stream =
        std::max(10, std::min(reps_, static_cast<int>((std::size_t{64} << 20) / (bytes_ + 1))));
    std::vector<std::vector<std::byte>> buffers;
    std::vector<int> slots;
    if (me_ == 1) {
      buffers.resize(static_cast<std::size_t>(stream), std::vector<std::byte>(bytes_ + 64));
      for (auto& buffer : buffers)
        slots.push_back(channel_.irecv(buffer.data(), buffer.size(), kData));
    }
    Sync();
    char ack = 0;
    auto start = Clock::now();
    if (me_ == 0) {
      for (int i = 0; i < stream; ++i) slots.push_back(channel_.isend(out_.data(), bytes_, kData));
      for (int slot : slots) channel_.wait(slot);
      channel_.wait(channel_.irecv(&ack, 1, kControl));
    } else {
      for (int slot : slots) channel_.wait(slot);
      channel_.wait(channel_.isend(&ack, 1, kControl));
    }
    double total = Since(start);
    Sync();
    return std::max(0.0, total - small_half) / stream;
  }

  // Both ranks exchange a message per repetition: first with nothing between post and wait, then
  // computing as long as an exchange took. The share of the exchange the computation hid.
  double Overlap() {
    auto exchange = [&](double compute_us) {
      Sync();
      auto start = Clock::now();
      for (int i = 0; i < reps_; ++i) {
        int r = channel_.irecv(in_.data(), in_.size(), kData);
        int s = channel_.isend(out_.data(), bytes_, kData);
        if (compute_us > 0) Compute(compute_us);
        channel_.wait(s);
        channel_.wait(r);
      }
      return Since(start) / reps_;
    };
    double alone = exchange(0);
    double with_compute = exchange(alone);
    double hidden = alone + alone - with_compute;
    return std::clamp(hidden / alone, 0.0, 1.0) * 100;
  }

  // Both ranks must run as many repetitions: rank 0's figure decides, sent to rank 1.
  void SetRepetitions(double half_us, double target_ms) {
    if (me_ == 0) {
      channel_.wait(channel_.isend(&half_us, sizeof half_us, kControl));
    } else {
      channel_.wait(channel_.irecv(&half_us, sizeof half_us, kControl));
    }
    half_ = half_us;
    reps_ = std::clamp<int>(static_cast<int>(target_ms * 1000 / (4 * half_us + 10)), 10, 20000);
  }

 private:
  OverlapChannel& channel_;
  int me_;
  std::size_t bytes_;
  std::vector<std::byte> out_;
  std::vector<std::byte> in_;
  int reps_ = 10;
  double half_ = 0;
};

}  // namespace

OverlapOptions QuickOverlapOptions() {
  OverlapOptions options;
  options.sizes = {8, 8192, 1 << 20};
  options.target_ms = 3;
  return options;
}

void MeasureOverlap(OverlapChannel& channel, const OverlapOptions& options) {
  double small_half = 0;
  for (std::uint64_t size : options.sizes) {
    Phases phases(channel, size, options.target_ms);
    phases.HalfRoundTrip();  // warms the path, and sizes the phases from its figure
    double half = phases.HalfRoundTrip();
    phases.SetRepetitions(half, options.target_ms);
    half = phases.HalfRoundTrip();
    if (small_half == 0) small_half = half;
    double os = phases.SendOverhead();
    double orr = phases.ReceiveOverhead();
    double gap = phases.Gap(small_half);
    double overlap = phases.Overlap();
    if (channel.rank() == 0) {
      std::printf(
          "overlap size=%llu rtt2_us=%.2f os_us=%.2f or_us=%.2f g_us=%.2f L_us=%.2f "
          "overlap_pct=%.0f\n",
          static_cast<unsigned long long>(size), half, os, orr, gap, std::max(0.0, half - os - orr),
          overlap);
      std::fflush(stdout);
    }
  }
}

}  // namespace lmdx::bench

#include "benchmarks/net/core_to_core.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace lmdx::bench {
namespace {

// Enough round trips that a repetition lasts milliseconds in either state, few enough that
// the whole measurement stays well under a tenth of a second.
constexpr unsigned kRoundTrips = 20000;
constexpr int kRepetitions = 5;

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// The first two CPUs of this thread's affinity mask, or nothing.
std::optional<std::pair<int, int>> two_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return std::nullopt;
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  if (cpus.size() < 2) return std::nullopt;
  return std::pair{cpus[0], cpus[1]};
}

// The line both threads write: each waits for the other's number, then writes the next.
struct alignas(64) Line {
  std::atomic<unsigned> turn{0};
  std::atomic<bool> failed{false};
};

}  // namespace

std::optional<double> measure_core_to_core_ns() {
  const auto cpus = two_cpus();
  if (!cpus) return std::nullopt;
  std::vector<double> one_way_ns;
  for (int rep = 0; rep < kRepetitions; ++rep) {
    Line line;
    double elapsed_ns = 0;
    // Two fresh threads, so that the caller's affinity (which the jobs it starts inherit) is
    // never touched.
    std::thread answerer([&] {
      if (!pin_to(cpus->second)) line.failed.store(true);
      for (unsigned i = 1; i < 2 * kRoundTrips; i += 2) {
        while (line.turn.load(std::memory_order_acquire) != i) {
          if (line.failed.load(std::memory_order_relaxed)) return;
        }
        line.turn.store(i + 1, std::memory_order_release);
      }
    });
    std::thread asker([&] {
      if (!pin_to(cpus->first)) {
        line.failed.store(true);
        return;
      }
      const auto start = std::chrono::steady_clock::now();
      for (unsigned i = 0; i < 2 * kRoundTrips; i += 2) {
        line.turn.store(i + 1, std::memory_order_release);
        while (line.turn.load(std::memory_order_acquire) != i + 2) {
          if (line.failed.load(std::memory_order_relaxed)) return;
        }
      }
      elapsed_ns =
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
              .count();
    });
    asker.join();
    answerer.join();
    if (line.failed.load()) return std::nullopt;
    one_way_ns.push_back(elapsed_ns / (2.0 * kRoundTrips));
  }
  std::sort(one_way_ns.begin(), one_way_ns.end());
  return one_way_ns[one_way_ns.size() / 2];
}

namespace {

bool alike(double a, double b) {
  return a > 0 && b > 0 && std::max(a, b) <= kSameStateFactor * std::min(a, b);
}

}  // namespace

bool steady(const MachineState& state) {
  return state.before_ns && state.after_ns && alike(*state.before_ns, *state.after_ns);
}

bool same_state(const MachineState& a, const MachineState& b) {
  return steady(a) && steady(b) && alike(*a.before_ns, *b.before_ns);
}

std::string describe(const MachineState& state) {
  if (!state.before_ns || !state.after_ns) return "?";
  char text[64];
  if (steady(state)) {
    std::snprintf(text, sizeof text, "%.0f ns", *state.before_ns);
  } else {
    std::snprintf(text, sizeof text, "%.0f->%.0f ns", *state.before_ns, *state.after_ns);
  }
  return text;
}

}  // namespace lmdx::bench

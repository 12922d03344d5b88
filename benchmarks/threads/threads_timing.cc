// The job behind `lmdx bench threads` (2 nodes, threads style: rank 0 runs main). Prints one line
// per figure, "threads,NAME,VALUE", which the driver turns into the table:
//   latency_8       one-way latency of an 8 B message between the nodes (half a round trip,
//                   echoed by an LMDX thread on node 1)
//   start_join      lmdx_start_thread_on(1, ...) then lmdx_join_thread, microseconds per pair
//   switch          one switch between two user-level threads of one worker (yield), microseconds
//   idle_bytes      memory an idle (parked) user-level thread holds, bytes
#include <lmdx/lmdx.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

#include "threads/scheduler.h"

namespace {

using Clock = std::chrono::steady_clock;

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void* Echo(void* rounds) {
  long count = reinterpret_cast<long>(rounds);
  char buffer[8];
  lmdx_status status{};
  for (long i = 0; i < count; ++i) {
    lmdx_recv(0, buffer, sizeof buffer, &status);
    lmdx_send(0, buffer, sizeof buffer);
  }
  return nullptr;
}

void* Empty(void*) { return nullptr; }

double OneWayMicros(int rounds) {
  lmdx_thread_t echo =
      lmdx_start_thread_on(1, Echo, reinterpret_cast<void*>(static_cast<long>(rounds)));
  char buffer[8] = {};
  lmdx_status status{};
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(rounds));
  for (int i = 0; i < rounds; ++i) {
    auto start = Clock::now();
    lmdx_send(1, buffer, sizeof buffer);
    lmdx_recv(1, buffer, sizeof buffer, &status);
    times.push_back(Micros(Clock::now() - start) / 2);
  }
  lmdx_join_thread(echo);
  return Median(times);
}

double StartJoinMicros(int rounds) {
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(rounds));
  for (int i = 0; i < rounds; ++i) {
    auto start = Clock::now();
    lmdx_join_thread(lmdx_start_thread_on(1, Empty, nullptr));
    times.push_back(Micros(Clock::now() - start));
  }
  return Median(times);
}

// Two user-level threads of one worker yielding to each other.
double SwitchMicros(int switches) {
  lmdx::threads::Scheduler scheduler({.workers = 1});
  auto body = [switches] {
    for (int i = 0; i < switches / 2; ++i) lmdx::threads::Scheduler::Yield();
  };
  auto start = Clock::now();
  auto a = scheduler.Spawn(body);
  auto b = scheduler.Spawn(body);
  a->Join();
  b->Join();
  return Micros(Clock::now() - start) / switches;
}

long ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// Memory per parked user-level thread: resident memory before and after parking many.
double IdleBytes(int count) {
  lmdx::threads::Scheduler scheduler({.workers = 1});
  std::vector<lmdx::threads::UserThread*> parked(static_cast<std::size_t>(count), nullptr);
  std::atomic<int> ready{0};
  std::atomic<bool> release{false};
  long before = ResidentBytes();
  std::vector<std::shared_ptr<lmdx::threads::UserThread>> threads;
  threads.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    threads.push_back(scheduler.Spawn([&, i] {
      parked[static_cast<std::size_t>(i)] = lmdx::threads::Scheduler::Current();
      ready.fetch_add(1);
      while (!release.load()) lmdx::threads::Scheduler::Park();
    }));
  }
  while (ready.load() < count) usleep(1000);
  long after = ResidentBytes();
  release = true;
  for (auto* thread : parked) lmdx::threads::Scheduler::Wake(thread);
  for (auto& thread : threads) thread->Join();
  return static_cast<double>(after - before) / count;
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);  // rank 0 only; node 1 runs the threads started on it
  if (lmdx_size() != 2) {
    std::fprintf(stderr, "threads_timing runs on 2 nodes\n");
    return 2;
  }
  int rounds = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::printf("threads,latency_8,%.2f\n", OneWayMicros(rounds));
  std::printf("threads,start_join,%.2f\n", StartJoinMicros(rounds / 2));
  std::printf("threads,switch,%.3f\n", SwitchMicros(200000));
  std::printf("threads,idle_bytes,%.0f\n", IdleBytes(10000));
  return 0;
}

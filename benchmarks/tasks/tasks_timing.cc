// The job behind `lmdx bench tasks` (threads style: rank 0 runs main). One measure per run,
// argv[1]; prints "tasks,NAME,VALUE" lines, which the driver turns into its table:
//   overhead COUNT      (1 node) spawn_run_ns: a task spawns COUNT empty tasks and waits for
//                       them, ns per spawn + run; fib_call_ns: fib(25) with a task per call, ns
//                       per call (a spawn, a run and a wait)
//   steal ROUNDS        (2 nodes) latency_8: one-way latency of an 8 B message; steal_us: from a
//                       spawn on a node whose runner is taken (its task sleeps) to the task's
//                       start on the idle one; steal_busy_us: the same while the taken runner
//                       computes, so that the two nodes share the machine's cores with it
//   grain US TASKS      efficiency: TASKS tasks that each compute US microseconds, spawned by a
//                       tree of tasks: the ideal time over the measured one (Task Bench's
//                       efficiency, whose 50% point is METG)
#include <lmdx/lmdx.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t NowNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // the same clock in every process of the host
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

// Computes for about ns nanoseconds without sleeping (a task of that size).
void Compute(std::int64_t ns) {
  std::int64_t end = NowNs() + ns;
  while (NowNs() < end) {
  }
}

// ---- overhead ----

void Empty(void*) {}

struct Count {
  int tasks;
  double ns_per_task;
};

// Spawns in batches of 1,000 and waits for each, as a loop of small parallel steps does.
void SpawnMany(void* argument) {
  auto* count = static_cast<Count*>(argument);
  auto start = Clock::now();
  for (int done = 0; done < count->tasks; done += 1000) {
    for (int i = 0; i < 1000; ++i) lmdx_spawn_copy(Empty, nullptr, 0);
    lmdx_wait();
  }
  count->ns_per_task =
      std::chrono::duration<double, std::nano>(Clock::now() - start).count() / count->tasks;
}

struct FibCall {
  int n;
  long long result;
};

void FibTask(void* argument) {
  auto* call = static_cast<FibCall*>(argument);
  if (call->n < 2) {
    call->result = call->n;
    return;
  }
  FibCall left{call->n - 1, 0};
  FibCall right{call->n - 2, 0};
  lmdx_spawn(FibTask, &left, sizeof left);
  lmdx_spawn(FibTask, &right, sizeof right);
  lmdx_wait();
  call->result = left.result + right.result;
}

void Overhead(int count) {
  std::vector<double> runs;
  for (int run = 0; run < 5; ++run) {
    Count spawned{count, 0};
    lmdx_spawn(SpawnMany, &spawned, sizeof spawned);
    lmdx_wait();
    runs.push_back(spawned.ns_per_task);
  }
  std::printf("tasks,spawn_run_ns,%.1f\n", Median(runs));
  std::vector<double> fib;
  for (int run = 0; run < 3; ++run) {
    FibCall top{25, 0};
    auto start = Clock::now();
    lmdx_spawn(FibTask, &top, sizeof top);
    lmdx_wait();
    double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    fib.push_back(ns / 242785.0);  // calls of fib(25)
  }
  std::printf("tasks,fib_call_ns,%.1f\n", Median(fib));
}

// ---- steal ----

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

double OneWayMicros(int rounds) {
  lmdx_thread_t echo =
      lmdx_start_thread_on(1, Echo, reinterpret_cast<void*>(static_cast<long>(rounds)));
  char buffer[8] = {};
  lmdx_status status{};
  std::vector<double> times;
  for (int i = 0; i < rounds; ++i) {
    auto start = Clock::now();
    lmdx_send(1, buffer, sizeof buffer);
    lmdx_recv(1, buffer, sizeof buffer, &status);
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / 2);
  }
  lmdx_join_thread(echo);
  return Median(times);
}

struct Probe {
  std::int64_t started_ns;
  int rank;
};

void ProbeTask(void* argument) {
  auto* probe = static_cast<Probe*>(argument);
  probe->started_ns = NowNs();
  probe->rank = lmdx_rank();
}

struct Steal {
  std::int64_t spawned_ns;
  std::int64_t started_ns;
  int busy_rank;
  int probe_rank;
  int computes;  // the parent computes (else it sleeps)
};

// Spawns the probe, then keeps its own runner taken for 2 ms: the probe can start sooner only on
// the other node.
void BusyParent(void* argument) {
  auto* steal = static_cast<Steal*>(argument);
  Probe probe{0, -1};
  steal->busy_rank = lmdx_rank();
  steal->spawned_ns = NowNs();
  lmdx_spawn(ProbeTask, &probe, sizeof probe);
  if (steal->computes != 0) {
    Compute(2'000'000);
  } else {
    timespec pause{0, 2'000'000};
    nanosleep(&pause, nullptr);
  }
  lmdx_wait();
  steal->started_ns = probe.started_ns;
  steal->probe_rank = probe.rank;
}

void StealLatency(int rounds) {
  std::printf("tasks,latency_8,%.2f\n", OneWayMicros(rounds * 10));
  for (int computes : {0, 1}) {
    std::vector<double> times;
    for (int round = 0; round < rounds; ++round) {
      Steal steal{0, 0, -1, -1, computes};
      lmdx_spawn(BusyParent, &steal, sizeof steal);
      lmdx_wait();
      if (steal.probe_rank != steal.busy_rank) {
        times.push_back(static_cast<double>(steal.started_ns - steal.spawned_ns) / 1000.0);
      }
    }
    std::printf("tasks,%s,%.2f\n", computes != 0 ? "steal_busy_us" : "steal_us", Median(times));
  }
}

// ---- grain ----

struct Split {
  int tasks;
  int grain_ns;
};

void GrainTask(void* argument) { Compute(static_cast<const Split*>(argument)->grain_ns); }

// Spawns its tasks by halving, so that no single spawner limits the rate.
void SplitTask(void* argument) {
  const auto* split = static_cast<const Split*>(argument);
  if (split->tasks <= 8) {
    for (int i = 0; i < split->tasks; ++i) lmdx_spawn_copy(GrainTask, split, sizeof *split);
    return;
  }
  Split half{split->tasks / 2, split->grain_ns};
  Split rest{split->tasks - half.tasks, split->grain_ns};
  lmdx_spawn_copy(SplitTask, &half, sizeof half);
  lmdx_spawn_copy(SplitTask, &rest, sizeof rest);
}

void Grain(int grain_us, int tasks) {
  std::vector<double> efficiency;
  for (int run = 0; run < 3; ++run) {
    Split all{tasks, grain_us * 1000};
    auto start = Clock::now();
    lmdx_spawn_copy(SplitTask, &all, sizeof all);
    lmdx_wait();
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    double ideal = static_cast<double>(tasks) * grain_us * 1e-6 / lmdx_size();
    efficiency.push_back(ideal / seconds);
  }
  std::printf("tasks,efficiency,%.3f\n", Median(efficiency));
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);  // rank 0 only; the other nodes run tasks
  std::string measure = argc > 1 ? argv[1] : "";
  if (measure == "overhead" && argc > 2) {
    Overhead(std::atoi(argv[2]));
  } else if (measure == "steal" && argc > 2 && lmdx_size() == 2) {
    StealLatency(std::atoi(argv[2]));
  } else if (measure == "grain" && argc > 3) {
    Grain(std::atoi(argv[2]), std::atoi(argv[3]));
  } else {
    std::fprintf(stderr,
                 "usage: tasks_timing overhead COUNT | steal ROUNDS (2 nodes) | grain US TASKS\n");
    return 2;
  }
  return 0;
}

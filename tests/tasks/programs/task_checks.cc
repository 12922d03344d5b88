// Checks of the task runtime in real jobs. One scenario per run (argv[1]); rank 0 prints
// "verified: SCENARIO on N nodes" or ends the job with the first difference from what a
// sequential run gives. Every scenario but spmd runs in threads style.
#include <lmdx/lmdx.h>
#include <signal.h>
#include <unistd.h>

#include <lmdx/lmdx.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::string text = "FAILED: " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Check(bool ok, const std::string& what) {
  if (!ok) Die(what);
}

void SleepMs(int ms) {
  timespec pause{0, static_cast<long>(ms) * 1'000'000L};
  nanosleep(&pause, nullptr);
}

// ---- fib: nested spawns all the way down -----------------------------------------------------

struct FibCall {
  int n;
  int cutoff;
  std::int64_t result;
};

std::int64_t FibSequential(int n) {
  return n < 2 ? n : FibSequential(n - 1) + FibSequential(n - 2);
}

void FibTask(void* argument) {
  auto* call = static_cast<FibCall*>(argument);
  if (call->n < 2 || call->n <= call->cutoff) {
    call->result = FibSequential(call->n);
    return;
  }
  FibCall left{call->n - 1, call->cutoff, -1};
  FibCall right{call->n - 2, call->cutoff, -1};
  Check(lmdx_spawn(FibTask, &left, sizeof left) == 0, "spawn failed");
  Check(lmdx_spawn(FibTask, &right, sizeof right) == 0, "spawn failed");
  Check(lmdx_wait() == 0, "wait failed");
  call->result = left.result + right.result;
}

std::int64_t Fib(int n, int cutoff) {
  FibCall top{n, cutoff, -1};
  Check(lmdx_spawn(FibTask, &top, sizeof top) == 0, "spawn failed");
  Check(lmdx_wait() == 0, "wait failed");
  return top.result;
}

void FibScenario(int n, int cutoff) {
  std::int64_t got = Fib(n, cutoff);
  Check(got == FibSequential(n), "fib(" + std::to_string(n) + ") is " + std::to_string(got) +
                                     ", expected " + std::to_string(FibSequential(n)));
}

// ---- shared: tasks read what the spawner wrote and write what the waiter reads ----------------

constexpr int kValues = 64 * 1024;  // 64 pages of int32
constexpr int kBlocks = 16;
constexpr int kPartsPerBlock = 5;  // uneven ranges: pages written by tasks on different nodes

std::int32_t* Input() {
  return static_cast<std::int32_t*>(lmdx_shared_var("task_input", kValues * sizeof(std::int32_t)));
}
std::int32_t* Output() {
  return static_cast<std::int32_t*>(lmdx_shared_var("task_output", kValues * sizeof(std::int32_t)));
}

// Reads its own value and one far away, so that every task reads pages all over the input: a
// node that kept a stale copy of any page is caught.
std::int32_t Step(const std::int32_t* input, int i, int round) {
  std::int32_t far = input[static_cast<int>(std::int64_t{i} * 7919 % kValues)];
  return static_cast<std::int32_t>((std::int64_t{input[i]} * 2 + far + round) % 1'000'003);
}

struct Range {
  int first;
  int end;
  int round;
};

void PartTask(void* argument) {
  const auto* range = static_cast<Range*>(argument);
  const std::int32_t* input = Input();
  std::int32_t* output = Output();
  for (int i = range->first; i < range->end; ++i) output[i] = Step(input, i, range->round);
}

void BlockTask(void* argument) {
  const auto* block = static_cast<Range*>(argument);
  int length = block->end - block->first;
  for (int part = 0; part < kPartsPerBlock; ++part) {
    Range range{block->first + length * part / kPartsPerBlock,
                block->first + length * (part + 1) / kPartsPerBlock, block->round};
    Check(lmdx_spawn_copy(PartTask, &range, sizeof range) == 0, "spawn failed");
  }
  // No wait: a task's end covers its children, and its spawner's wait covers both.
}

void SharedScenario(int rounds) {
  std::int32_t* input = Input();
  std::int32_t* output = Output();
  std::vector<std::int32_t> expected_input(kValues);
  for (int i = 0; i < kValues; ++i) input[i] = expected_input[i] = i * 3 + 1;
  std::vector<std::int32_t> expected(kValues);
  for (int round = 0; round < rounds; ++round) {
    for (int b = 0; b < kBlocks; ++b) {
      Range block{kValues / kBlocks * b, kValues / kBlocks * (b + 1), round};
      Check(lmdx_spawn_copy(BlockTask, &block, sizeof block) == 0, "spawn failed");
    }
    Check(lmdx_wait() == 0, "wait failed");
    for (int i = 0; i < kValues; ++i) expected[i] = Step(expected_input.data(), i, round);
    for (int i = 0; i < kValues; ++i) {
      Check(output[i] == expected[i], "round " + std::to_string(round) + ": output[" +
                                          std::to_string(i) + "] is " + std::to_string(output[i]) +
                                          ", expected " + std::to_string(expected[i]));
    }
    // The next round reads what this one wrote: a node that kept a stale copy is caught.
    for (int i = 0; i < kValues; ++i) input[i] = expected_input[i] = output[i];
  }
}

// ---- threads: several LMDX threads per node spawn and wait at once ---------------------------

struct ThreadWork {
  int index;
  int threads;
};

void* ThreadBody(void* argument) {
  auto index = static_cast<int>(reinterpret_cast<std::intptr_t>(argument));
  int threads = lmdx_size() * 3;
  // Its own fib, and its own slice of the shared output through tasks.
  int n = 16 + index % 4;
  if (Fib(n, 4) != FibSequential(n)) return reinterpret_cast<void*>(1);
  int first = kValues / threads * index;
  int end = kValues / threads * (index + 1);
  for (int part = 0; part < 8; ++part) {
    Range range{first + (end - first) * part / 8, first + (end - first) * (part + 1) / 8, index};
    if (lmdx_spawn_copy(PartTask, &range, sizeof range) != 0) return reinterpret_cast<void*>(2);
  }
  if (lmdx_wait() != 0) return reinterpret_cast<void*>(3);
  const std::int32_t* input = Input();
  const std::int32_t* output = Output();
  for (int i = first; i < end; ++i) {
    if (output[i] != Step(input, i, index)) return reinterpret_cast<void*>(4);
  }
  return nullptr;
}

void ThreadsScenario() {
  std::int32_t* input = Input();
  for (int i = 0; i < kValues; ++i) input[i] = i % 977;
  int threads = lmdx_size() * 3;
  std::vector<lmdx_thread_t> started;
  for (int t = 0; t < threads; ++t) {
    started.push_back(lmdx_start_thread(ThreadBody, reinterpret_cast<void*>(std::intptr_t{t})));
  }
  for (int t = 0; t < threads; ++t) {
    auto result = reinterpret_cast<std::intptr_t>(lmdx_join_thread(started[t]));
    Check(result == 0, "thread " + std::to_string(t) + " failed its check " +
                           std::to_string(result) + " (1 fib, 2 spawn, 3 wait, 4 output)");
  }
}

// ---- args: copies of every size go and come back ---------------------------------------------

struct Big {
  std::uint32_t words[50'000];  // 200 KB: past any inline buffer and a message's small path
  int ran_on;
};

void BigTask(void* argument) {
  auto* big = static_cast<Big*>(argument);
  for (std::uint32_t& word : big->words) word = word * 7 + 1;
  big->ran_on = lmdx_rank();
}

struct Note {
  char text[24];
  int seen;
};

void NoteTask(void* argument) {
  auto* note = static_cast<Note*>(argument);
  note->seen = std::strcmp(note->text, "copied at the spawn") == 0 ? 1 : 2;
}

void ArgsScenario() {
  constexpr int kCount = 12;
  std::vector<std::unique_ptr<Big>> bigs;
  for (int k = 0; k < kCount; ++k) {
    bigs.push_back(std::make_unique<Big>());
    for (int w = 0; w < 50'000; ++w)
      bigs[k]->words[w] = static_cast<std::uint32_t>(k * 100'000 + w);
    bigs[k]->ran_on = -1;
    Check(lmdx_spawn(BigTask, bigs[k].get(), sizeof(Big)) == 0, "spawn failed");
  }
  // Changed after the spawn: the task works on the copy taken at the spawn.
  Note note{"copied at the spawn", 0};
  Check(lmdx_spawn(NoteTask, &note, sizeof note) == 0, "spawn failed");
  std::strcpy(note.text, "changed later");
  Check(lmdx_wait() == 0, "wait failed");
  Check(note.seen == 1, "a task saw its arguments as they were after the spawn");
  for (int k = 0; k < kCount; ++k) {
    Check(bigs[k]->ran_on >= 0, "big task " + std::to_string(k) + " wrote no copy back");
    for (int w = 0; w < 50'000; ++w) {
      auto original = static_cast<std::uint32_t>(k * 100'000 + w);
      Check(bigs[k]->words[w] == original * 7 + 1,
            "big task " + std::to_string(k) + " word " + std::to_string(w) + " came back wrong");
    }
  }
  // lmdx_spawn_copy writes nothing back.
  Note kept{"copied at the spawn", 0};
  Check(lmdx_spawn_copy(NoteTask, &kept, sizeof kept) == 0, "spawn failed");
  Check(lmdx_wait() == 0, "wait failed");
  Check(kept.seen == 0, "lmdx_spawn_copy wrote the task's copy back");
}

// ---- errors: bad calls say what is wrong and spoil nothing -----------------------------------

void Nothing(void*) {}

void ErrorsScenario() {
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  int word = 0;
  Check(lmdx_spawn(nullptr, &word, sizeof word) == LMDX_ERR_INVALID_ARGUMENT, "NULL function");
  Check(std::strstr(lmdx_last_error_message(), "NULL") != nullptr, lmdx_last_error_message());
  Check(lmdx_spawn(Nothing, nullptr, 8) == LMDX_ERR_INVALID_ARGUMENT, "NULL arguments");
  std::vector<char> huge(LMDX_TASK_MAX_ARGS + 1);
  Check(lmdx_spawn(Nothing, huge.data(), huge.size()) == LMDX_ERR_INVALID_ARGUMENT, "huge");
  Check(std::strstr(lmdx_last_error_message(), "over the limit") != nullptr,
        lmdx_last_error_message());
  Check(lmdx_wait() == 0, "a wait with nothing spawned");
  Check(Fib(12, 0) == FibSequential(12), "tasks after the failed calls");
}

// ---- spread: with several nodes, idle ones get work under every scheduler --------------------

struct Ran {
  int index;
  int rank;
};

void SleepyTask(void* argument) {
  auto* ran = static_cast<Ran*>(argument);
  SleepMs(3);
  ran->rank = lmdx_rank();
}

void SpreadScenario() {
  constexpr int kTasks = 120;
  std::vector<Ran> ran(kTasks);
  for (int k = 0; k < kTasks; ++k) {
    ran[k] = Ran{k, -1};
    Check(lmdx_spawn(SleepyTask, &ran[k], sizeof(Ran)) == 0, "spawn failed");
  }
  Check(lmdx_wait() == 0, "wait failed");
  std::vector<int> per_node(lmdx_size(), 0);
  for (int k = 0; k < kTasks; ++k) {
    Check(ran[k].rank >= 0 && ran[k].rank < lmdx_size(),
          "task " + std::to_string(k) + " ran on " + std::to_string(ran[k].rank));
    per_node[ran[k].rank] += 1;
  }
  int busy = 0;
  std::string counts;
  for (int node = 0; node < lmdx_size(); ++node) {
    busy += per_node[node] > 0 ? 1 : 0;
    counts += " " + std::to_string(per_node[node]);
  }
  // 120 tasks of 3 ms: every node is idle long enough to get some.
  Check(busy == lmdx_size(), "tasks per node:" + counts);
  std::printf("tasks per node:%s\n", counts.c_str());
}

// ---- user: the program's own placement -------------------------------------------------------

std::atomic<int> placed_elsewhere{0};

int ToTheLastNode(void*, int rank, int size, const std::uint64_t* loads) {
  Check(loads != nullptr, "no loads");
  if (rank == size - 1) return -1;
  placed_elsewhere.fetch_add(1);
  return size - 1;
}

void UserScenario() {
  Check(lmdx_set_task_scheduler(ToTheLastNode, nullptr) == 0, "set scheduler");
  constexpr int kTasks = 60;
  std::vector<Ran> ran(kTasks);
  for (int k = 0; k < kTasks; ++k) {
    ran[k] = Ran{k, -1};
    Check(lmdx_spawn(SleepyTask, &ran[k], sizeof(Ran)) == 0, "spawn failed");
  }
  Check(lmdx_wait() == 0, "wait failed");
  int on_last = 0;
  for (const Ran& r : ran) on_last += r.rank == lmdx_size() - 1 ? 1 : 0;
  // Every task the placement sent away ran there, and nothing else did (the test runs the other
  // node under the sharing scheduler, which does not steal).
  Check(placed_elsewhere.load() > 0, "the placement was never asked");
  Check(on_last == placed_elsewhere.load(),
        std::to_string(on_last) + " tasks ran on the last node, " +
            std::to_string(placed_elsewhere.load()) + " were placed there");
  Check(lmdx_set_task_scheduler(nullptr, nullptr) == 0, "back to stealing");
}

// ---- crash and die: a task's failure ends the job with a message ------------------------------

void CrashingTask(void* argument) {
  SleepMs(5);
  if (lmdx_rank() != 0) {
    // Not NULL: UndefinedBehaviorSanitizer would stop a store to NULL before it faults.
    volatile int* unmapped = reinterpret_cast<volatile int*>(std::uintptr_t{16});
    *unmapped = *static_cast<int*>(argument);
  }
}

void DyingTask(void*) {
  SleepMs(5);
  if (lmdx_rank() != 0) ::raise(SIGKILL);
}

void FailingScenario(void (*task)(void*)) {
  int word = 1;
  for (int k = 0; k < 200; ++k) Check(lmdx_spawn_copy(task, &word, sizeof word) == 0, "spawn");
  lmdx_wait();
  Die("every task ran on rank 0; none could fail");
}

// ---- frame: a task that returns before the copies it waits for come back --------------------

void ReturnsTooEarly(void*) {
  FibCall child{10, 0, 0};
  lmdx_spawn(FibTask, &child, sizeof child);  // its copy would land in this dead frame
}

void FrameScenario() {
  lmdx_spawn_copy(ReturnsTooEarly, nullptr, 0);
  lmdx_wait();
  Die("a task returned with a copy still to come back into its frame, and nothing said so");
}

// ---- cpp: the C++ API ------------------------------------------------------------------------

struct Sum {
  int first;
  int end;
  std::int64_t total;
};

void CppScenario() {
  lmdx::shared<std::int64_t[256]> squares{"task_squares"};
  std::int64_t* base = &(*squares)[0];
  for (int i = 0; i < 256; ++i) {
    lmdx::spawn([base, i] { base[i] = std::int64_t{i} * i; });
  }
  Sum sum{0, 1000, 0};
  lmdx::spawn(sum, [](Sum& s) {
    for (int i = s.first; i < s.end; ++i) s.total += i;
  });
  lmdx::wait();
  for (int i = 0; i < 256; ++i) {
    Check((*squares)[i] == std::int64_t{i} * i, "square " + std::to_string(i));
  }
  Check(sum.total == 999 * 1000 / 2, "sum is " + std::to_string(sum.total));
}

// ---- spmd: every rank spawns ------------------------------------------------------------------

void SpmdScenario() {
  int rank = lmdx_rank();
  int size = lmdx_size();
  std::int32_t* input = Input();
  if (rank == 0) {
    for (int i = 0; i < kValues; ++i) input[i] = (i * 7) % 1000;
  }
  lmdx_barrier_all();
  int first = kValues / size * rank;
  int end = kValues / size * (rank + 1);
  for (int part = 0; part < 10; ++part) {
    Range range{first + (end - first) * part / 10, first + (end - first) * (part + 1) / 10, rank};
    Check(lmdx_spawn_copy(PartTask, &range, sizeof range) == 0, "spawn failed");
  }
  Check(Fib(18, 3) == FibSequential(18), "fib on rank " + std::to_string(rank));
  Check(lmdx_wait() == 0, "wait failed");
  lmdx_barrier_all();
  if (rank == 0) {
    const std::int32_t* output = Output();
    for (int r = 0; r < size; ++r) {
      for (int i = kValues / size * r; i < kValues / size * (r + 1); ++i) {
        Check(output[i] == Step(input, i, r),
              "output[" + std::to_string(i) + "] of rank " + std::to_string(r) + " is wrong");
      }
    }
  }
  lmdx_barrier_all();
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  int number = argc > 2 ? std::atoi(argv[2]) : 0;
  if (scenario == "spmd") {
    lmdx_init_spmd(&argc, &argv);
    SpmdScenario();
    if (lmdx_rank() == 0) std::printf("verified: spmd on %d nodes\n", lmdx_size());
    lmdx_finalize();
    return 0;
  }
  lmdx_init(&argc, &argv);
  if (scenario == "fib") {
    FibScenario(number, argc > 3 ? std::atoi(argv[3]) : 0);
  } else if (scenario == "shared") {
    SharedScenario(number);
  } else if (scenario == "threads") {
    ThreadsScenario();
  } else if (scenario == "args") {
    ArgsScenario();
  } else if (scenario == "errors") {
    ErrorsScenario();
  } else if (scenario == "spread") {
    SpreadScenario();
  } else if (scenario == "user") {
    UserScenario();
  } else if (scenario == "crash") {
    FailingScenario(CrashingTask);
  } else if (scenario == "die") {
    FailingScenario(DyingTask);
  } else if (scenario == "frame") {
    FrameScenario();
  } else if (scenario == "cpp") {
    CppScenario();
  } else {
    Die("unknown scenario " + scenario);
  }
  std::printf("verified: %s on %d nodes\n", scenario.c_str(), lmdx_size());
  return 0;
}

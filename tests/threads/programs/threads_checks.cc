// Checks of LMDX threads across nodes, threads style (rank 0 runs main, the others serve). One
// scenario per run (argv[1]); rank 0 prints "verified: SCENARIO" or ends the job with the first
// difference from what a sequential run gives.
#include <lmdx/lmdx.h>

#include <lmdx/lmdx.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
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

std::intptr_t Number(void* pointer) { return reinterpret_cast<std::intptr_t>(pointer); }
void* Pointer(std::intptr_t number) { return reinterpret_cast<void*>(number); }

std::int64_t* SharedCounter() {
  return static_cast<std::int64_t*>(lmdx_shared_var("counter", sizeof(std::int64_t)));
}

// Returns i * i and, in the upper bits, the node it ran on; counts itself under a lock.
void* Square(void* argument) {
  std::intptr_t i = Number(argument);
  lmdx_lock("counter_lock");
  *SharedCounter() += 1;
  lmdx_unlock("counter_lock");
  return Pointer((static_cast<std::intptr_t>(lmdx_thread_node(lmdx_thread_self())) << 32) |
                 (i * i));
}

void Many(int count) {
  int size = lmdx_size();
  std::vector<lmdx_thread_t> threads;
  threads.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) threads.push_back(lmdx_start_thread(Square, Pointer(i)));
  std::vector<int> per_node(static_cast<std::size_t>(size), 0);
  for (int i = 0; i < count; ++i) {
    Check(threads[i] != LMDX_THREAD_INVALID, "lmdx_start_thread failed");
    std::intptr_t result = Number(lmdx_join_thread(threads[i]));
    Check((result & 0xffffffff) == static_cast<std::intptr_t>(i) * i,
          "thread " + std::to_string(i) + " returned " + std::to_string(result & 0xffffffff));
    int node = static_cast<int>(result >> 32);
    Check(node == lmdx_thread_node(threads[i]), "a thread ran on another node than its id says");
    per_node[static_cast<std::size_t>(node)] += 1;
  }
  for (int node = 0; node < size; ++node) {
    Check(per_node[node] == count / size, "round-robin gave node " + std::to_string(node) + " " +
                                              std::to_string(per_node[node]) + " threads");
  }
  Check(*SharedCounter() == count, "the shared counter is " + std::to_string(*SharedCounter()));
}

void* CountAndSignal(void*) {
  lmdx_lock("counter_lock");
  *SharedCounter() += 1;
  lmdx_unlock("counter_lock");
  lmdx_sema_v("done");
  return nullptr;
}

void Detached(int count) {
  lmdx_sema_init("done", 0);
  for (int i = 0; i < count; ++i) {
    Check(lmdx_start_dthread(CountAndSignal, nullptr) != LMDX_THREAD_INVALID, "start_dthread");
  }
  for (int i = 0; i < count; ++i) lmdx_sema_p("done");
  Check(*SharedCounter() == count, "detached threads counted " + std::to_string(*SharedCounter()));
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  lmdx_thread_t detached = lmdx_start_dthread(CountAndSignal, nullptr);
  Check(lmdx_join_thread(detached) == nullptr && lmdx_last_error() == LMDX_ERR_MISUSE,
        "joining a detached thread was not refused");
  lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
  lmdx_sema_p("done");
}

void* Spin(void*) {
  for (;;) {
    if (lmdx_trylock("never_free") == 0) lmdx_unlock("never_free");  // a call into LMDX
  }
  return nullptr;
}

void Kill() {
  for (int node = 0; node < lmdx_size(); ++node) {
    lmdx_thread_t spinner = lmdx_start_thread_on(node, Spin, nullptr);
    Check(lmdx_kill_thread(spinner) == LMDX_OK, "lmdx_kill_thread");
    Check(lmdx_join_thread(spinner) == LMDX_KILLED, "a killed thread did not end as killed");
  }
}

void* Leaf(void* argument) { return Pointer(Number(argument) + 1); }

// Starts one thread on every node and returns the sum of their results.
void* Parent(void*) {
  std::vector<lmdx_thread_t> children;
  children.reserve(static_cast<std::size_t>(lmdx_size()));
  for (int node = 0; node < lmdx_size(); ++node) {
    children.push_back(lmdx_start_thread_on(node, Leaf, Pointer(node * 10)));
  }
  std::intptr_t sum = 0;
  for (lmdx_thread_t child : children) sum += Number(lmdx_join_thread(child));
  return Pointer(sum);
}

void Nested() {
  std::intptr_t expected = 0;
  for (int node = 0; node < lmdx_size(); ++node) expected += node * 10 + 1;
  for (int node = 0; node < lmdx_size(); ++node) {
    lmdx_thread_t parent = lmdx_start_thread_on(node, Parent, nullptr);
    Check(lmdx_thread_node(parent) == node, "lmdx_start_thread_on placed it elsewhere");
    Check(Number(lmdx_join_thread(parent)) == expected, "nested threads summed wrong");
  }
}

std::intptr_t Deep(int depth) {
  if (depth == 0) lmdx_exit_thread(Pointer(42));
  return Deep(depth - 1) + 1;
}

void* Exiting(void*) { return Pointer(Deep(5)); }

// A thread on one node joins a thread running on another; ids travel through shared memory.
void* Waiter(void* slot) {
  auto* id = static_cast<lmdx_thread_t*>(slot);
  return lmdx_join_thread(*id);
}

void* Sleeper(void*) {
  lmdx_sema_p("wake_sleeper");
  return Pointer(7);
}

void ExitAndRemoteJoin() {
  lmdx_thread_t exiting = lmdx_start_thread_on(lmdx_size() - 1, Exiting, nullptr);
  Check(Number(lmdx_join_thread(exiting)) == 42, "lmdx_exit_thread's result was lost");
  lmdx_sema_init("wake_sleeper", 0);
  auto* slot = static_cast<lmdx_thread_t*>(lmdx_shared_var("sleeper_id", sizeof(lmdx_thread_t)));
  *slot = lmdx_start_thread_on(1 % lmdx_size(), Sleeper, nullptr);
  lmdx_thread_t waiter = lmdx_start_thread_on(lmdx_size() - 1, Waiter, slot);
  lmdx_sema_v("wake_sleeper");
  Check(Number(lmdx_join_thread(waiter)) == 7, "a join from another node got the wrong result");
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  Check(lmdx_exit_thread(nullptr) == LMDX_ERR_MISUSE, "main was allowed lmdx_exit_thread");
  lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
}

void* Blocked(void*) {
  lmdx_sema_p("release_blocked");
  return Pointer(lmdx_thread_node(lmdx_thread_self()));
}

// LMDX_PLACEMENT=least_loaded: threads that stay blocked spread evenly, whatever order.
void LeastLoaded(int per_node) {
  int size = lmdx_size();
  lmdx_sema_init("release_blocked", 0);
  std::vector<lmdx_thread_t> threads;
  std::vector<int> per(static_cast<std::size_t>(size), 0);
  for (int i = 0; i < per_node * size; ++i) {
    threads.push_back(lmdx_start_thread(Blocked, nullptr));
    per[static_cast<std::size_t>(lmdx_thread_node(threads.back()))] += 1;
  }
  for (int node = 0; node < size; ++node) {
    Check(per[node] == per_node, "least-loaded gave node " + std::to_string(node) + " " +
                                     std::to_string(per[node]) + " threads");
  }
  for (std::size_t i = 0; i < threads.size(); ++i) lmdx_sema_v("release_blocked");
  for (lmdx_thread_t thread : threads) lmdx_join_thread(thread);
}

// Waits that only a kill ends: each thread tells main it is about to wait, then waits.
void* WaitOnSemaphore(void*) {
  lmdx_sema_v("ready");
  lmdx_sema_p("empty");
  return nullptr;
}
void* WaitOnLock(void*) {
  lmdx_sema_v("ready");
  lmdx_lock("held");  // main holds it
  lmdx_unlock("held");
  return nullptr;
}
void* WaitOnBarrier(void*) {
  lmdx_sema_v("ready");
  lmdx_barrier("crowd");  // never full
  return nullptr;
}
void* WaitForMessage(void*) {
  lmdx_sema_v("ready");
  char byte = 0;
  lmdx_recv_tagged(0, 77, &byte, 1, nullptr);  // main never sends tag 77
  return nullptr;
}
void* WaitOnPortForAMinute(void* node) {
  std::string name = "idle" + std::to_string(Number(node));
  lmdx_port_t port = lmdx_port_open(name.c_str(), "nothing");
  lmdx_sema_v("ready");
  lmdx_port_message message;
  lmdx_port_recv(port, 60 * 1000, &message);  // a timed wait; nobody sends
  return nullptr;
}
void* WaitForever(void*) {
  lmdx_sema_p("forever");
  return nullptr;
}

// Two of these per node hand a lock back and forth, so some are ready or running at the end.
void* TakeTurnsForever(void*) {
  for (;;) {
    lmdx_lock("turns");
    lmdx_unlock("turns");
  }
}

// Threads still parked or ready on every node when rank 0's main returns: the job ends with
// main's status and no node tears a thread down under its worker.
void LeftRunning(int per_node) {
  lmdx_sema_init("forever", 0);
  for (int node = 0; node < lmdx_size(); ++node) {
    for (int i = 0; i < per_node; ++i) {
      lmdx_start_thread_on(node, (i % 2 == 0) ? WaitForever : TakeTurnsForever, nullptr);
    }
  }
}

void* WaitToJoin(void* target) {
  lmdx_sema_v("ready");
  lmdx_join_thread(static_cast<lmdx_thread_t>(Number(target)));
  return nullptr;
}
std::string OwnedLock(std::intptr_t node) { return "owned" + std::to_string(node); }
void* HoldLockAndWait(void* node) {
  std::string name = OwnedLock(Number(node));
  lmdx_lock(name.c_str());
  lmdx_sema_v("ready");
  lmdx_sema_p("gate");
  lmdx_unlock(name.c_str());
  return nullptr;
}
void* TakeOneUnit(void*) {
  lmdx_sema_p("empty");
  return Pointer(1);
}
void* LockAndUnlock(void*) {
  lmdx_lock("held");
  lmdx_unlock("held");
  return Pointer(2);
}

// lmdx_kill_thread ends threads parked in a semaphore, a lock, a barrier, a receive (raw, and on a
// port with a timeout) and a join,
// on every node; what they waited for is withdrawn or given back, and locks a killed thread held
// are released.
void KillWaiting() {
  lmdx_sema_init("ready", 0);
  lmdx_sema_init("empty", 0);
  lmdx_sema_init("forever", 0);
  lmdx_sema_init("gate", 0);
  lmdx_barrier_init("crowd", 1000);
  lmdx_lock("held");
  std::vector<lmdx_thread_t> waiting;
  std::vector<lmdx_thread_t> forever;
  int nodes = lmdx_size();
  for (int node = 0; node < nodes; ++node) {
    lmdx_thread_t target = lmdx_start_thread_on((node + 1) % nodes, WaitForever, nullptr);
    forever.push_back(target);
    for (auto fn : {WaitOnSemaphore, WaitOnLock, WaitOnBarrier, WaitForMessage}) {
      waiting.push_back(lmdx_start_thread_on(node, fn, nullptr));
    }
    waiting.push_back(lmdx_start_thread_on(node, HoldLockAndWait, Pointer(node)));
    waiting.push_back(lmdx_start_thread_on(node, WaitOnPortForAMinute, Pointer(node)));
    waiting.push_back(lmdx_start_thread_on(node, WaitToJoin, Pointer(std::intptr_t(target))));
  }
  for (std::size_t i = 0; i < waiting.size(); ++i) lmdx_sema_p("ready");
  struct timespec pause = {0, 100 * 1000 * 1000};  // they are parked in their waits by then
  nanosleep(&pause, nullptr);
  for (lmdx_thread_t t : waiting) Check(lmdx_kill_thread(t) == LMDX_OK, "lmdx_kill_thread");
  for (lmdx_thread_t t : waiting) {
    Check(lmdx_join_thread(t) == LMDX_KILLED, "a thread killed in its wait did not end as killed");
  }
  // Each killed holder of a lock released it.
  for (int node = 0; node < nodes; ++node) {
    std::string name = OwnedLock(node);
    Check(lmdx_trylock(name.c_str()) == 0, "a killed thread's lock was not released");
    lmdx_unlock(name.c_str());
  }
  // The killed waiters left the lock's queue: the next thread gets it after main.
  lmdx_unlock("held");
  for (int node = 0; node < nodes; ++node) {
    lmdx_thread_t t = lmdx_start_thread_on(node, LockAndUnlock, nullptr);
    Check(lmdx_join_thread(t) == Pointer(2), "the lock after its killed waiters");
  }
  // A unit that reaches a killed waiter is given back: one V serves one later P.
  lmdx_thread_t taker = lmdx_start_thread(TakeOneUnit, nullptr);
  lmdx_sema_v("empty");
  Check(lmdx_join_thread(taker) == Pointer(1), "the unit given back by killed waiters");
  // The killed joiners withdrew their joins: main may join their targets.
  for (lmdx_thread_t t : forever) {
    Check(lmdx_kill_thread(t) == LMDX_OK, "lmdx_kill_thread");
    Check(lmdx_join_thread(t) == LMDX_KILLED, "a thread whose killed joiner withdrew its join");
  }
}

// exit(3) in an LMDX thread on `node` ends the job with status 3 (the test reads the status and
// the launcher's words); main waits in a join meanwhile and must not go on.
void* ExitWithThree(void*) { std::exit(3); }

void ExitInThread(int node) {
  lmdx_thread_t thread = lmdx_start_thread_on(node, ExitWithThree, nullptr);
  lmdx_join_thread(thread);
  Die("the job went on after exit(3) in a thread on rank " + std::to_string(node));
}

// Every node prints a line (no fflush), then a thread on rank 1 crashes: the lines must reach
// the launcher's output all the same.
void* PrintALine(void*) {
  std::printf("a line from rank %d\n", lmdx_rank());
  return nullptr;
}

void* CrashOutsideSharedMemory(void*) {
  volatile int* unmapped = reinterpret_cast<volatile int*>(std::uintptr_t{16});
  *unmapped = 1;
  return nullptr;
}

void PrintThenCrash() {
  std::vector<lmdx_thread_t> printers;
  for (int node = 0; node < lmdx_size(); ++node) {
    printers.push_back(lmdx_start_thread_on(node, PrintALine, nullptr));
  }
  for (lmdx_thread_t thread : printers) lmdx_join_thread(thread);
  lmdx_join_thread(lmdx_start_thread_on(1, CrashOutsideSharedMemory, nullptr));
  Die("the job went on after a crash on rank 1");
}

// The C++ wrappers: closures started on every node and on any, each writing its rows of a shared
// table from what it captured; joined by join(), by a move-assignment and by the destructor; the
// table checked against the sequential values, and the C-style start/join through the wrappers.
void* TimesSeven(void* argument) {
  auto* value = static_cast<std::int64_t*>(argument);
  *value *= 7;
  return argument;
}

void Cpp() {
  constexpr int kRows = 64;
  lmdx::shared<std::int64_t[kRows]> table{"cpp_threads_table"};
  std::int64_t* rows = &(*table)[0];
  {
    std::vector<lmdx::thread> threads;
    for (int t = 0; t < 8; ++t) {
      auto body = [rows, t] {
        for (int i = t; i < kRows; i += 8) rows[i] = std::int64_t{i} * i;
      };
      if (t % 2 == 0) {
        threads.emplace_back(t % lmdx_size(), body);
      } else {
        threads.emplace_back(body);
      }
    }
    threads[0].join();
    Check(!threads[0].joinable(), "a joined lmdx::thread is still joinable");
    threads[1] = lmdx::thread(lmdx::any_node, [rows] { rows[0] += 1000; });  // joins the old one
    threads[1].join();
  }  // the destructors join threads 2 to 7
  for (int i = 0; i < kRows; ++i) {
    std::int64_t expected = std::int64_t{i} * i + (i == 0 ? 1000 : 0);
    Check((*table)[i] == expected, "row " + std::to_string(i) + " is " +
                                       std::to_string((*table)[i]) + ", not " +
                                       std::to_string(expected));
  }
  auto* value = static_cast<std::int64_t*>(lmdx_malloc(sizeof(std::int64_t)));
  *value = 6;
  void* result = lmdx::join_thread(lmdx::start_thread(TimesSeven, value, lmdx_size() - 1));
  Check(result == value && *value == 42, "a thread started through lmdx::start_thread");
  lmdx_free(value);
  // After a failure caught in the throwing mode, a join of a thread that returns NULL succeeds.
  lmdx::set_error_mode(lmdx::errors::throw_exceptions);
  bool threw = false;
  try {
    lmdx::join_thread(12345);
  } catch (const lmdx::error&) {
    threw = true;
  }
  Check(threw, "a join of no thread did not throw");
  lmdx::thread after_failure(lmdx::any_node, [] {});
  after_failure.join();
  lmdx::set_error_mode(lmdx::errors::fatal);
}

void* Throws(void*) { throw std::runtime_error("boom"); }
void* ThrowsAnInt(void*) { throw 42; }

void ThrowInThread(bool an_int) {
  lmdx_join_thread(lmdx_start_thread_on(lmdx_size() - 1, an_int ? ThrowsAnInt : Throws, nullptr));
  Die("the job went on after an exception escaped a thread");
}

// A new user's mistake: a pointer to main's stack handed to a thread on another node, where that
// stack does not exist (each process has its own, at an address of its own).
void* ReadThroughArgument(void* argument) {
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(*static_cast<volatile int*>(argument)));
}

void PrivateArgument() {
  int on_main_stack = 7;
  lmdx_join_thread(lmdx_start_thread_on(1, ReadThroughArgument, &on_main_stack));
  Die("the job went on after a thread on rank 1 read through a pointer to rank 0's stack");
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);  // only rank 0 returns
  std::string scenario = argc > 1 ? argv[1] : "";
  int number = argc > 2 ? std::atoi(argv[2]) : 100;
  if (scenario == "many") {
    Many(number);
  } else if (scenario == "detached") {
    Detached(number);
  } else if (scenario == "kill") {
    Kill();
  } else if (scenario == "kill_waiting") {
    KillWaiting();
  } else if (scenario == "left_running") {
    LeftRunning(number);
  } else if (scenario == "nested") {
    Nested();
  } else if (scenario == "exit") {
    ExitAndRemoteJoin();
  } else if (scenario == "exit_in_thread") {
    ExitInThread(number);
  } else if (scenario == "print_then_crash") {
    PrintThenCrash();
  } else if (scenario == "throw") {
    ThrowInThread(false);
  } else if (scenario == "throw_int") {
    ThrowInThread(true);
  } else if (scenario == "cpp") {
    Cpp();
  } else if (scenario == "private_argument") {
    PrivateArgument();
  } else if (scenario == "least_loaded") {
    LeastLoaded(number);
  } else {
    Die("unknown scenario '" + scenario + "'");
  }
  std::printf("verified: %s on %d nodes\n", scenario.c_str(), lmdx_size());
  return 0;
}

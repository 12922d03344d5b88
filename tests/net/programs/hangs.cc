// Programs that hang on purpose, for the hang watch (net/hang_watch.h). Usage: hangs SCENARIO.
//   barrier_never  threads style: a barrier of count nodes + 1, which can never fill
//   lock_held      threads style: a thread on the last rank holds lock "L" and waits for a
//                  semaphore nobody posts; main waits for "L"
//   join_cycle     threads style: main holds lock "L" and joins a thread of its own node that
//                  waits for "L"
//   spmd_recv      SPMD: rank 1 waits in lmdx_recv for a message rank 0 never sends; the others
//                  wait in lmdx_barrier_all
//   late_pthread   threads style: main waits for a semaphore that a pthread (which has not
//                  called LMDX yet) posts after 2 s; ends "done" when it comes
//   computing      threads style: a thread computes (outside LMDX) for 3 s while main joins
//                  it; ends "done". With "quit", rank 0 first asks its launcher (its parent) for
//                  the report with SIGQUIT, as Ctrl-\ would.
//   stopped        SPMD: the last rank stops itself with SIGSTOP; the others wait in
//                  lmdx_barrier_all (for the heartbeat, net/heartbeat.h)
#include <lmdx/lmdx.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

void* ArriveAtNever(void*) {
  lmdx_barrier("never");
  return nullptr;
}

void* HoldLockAndWait(void*) {
  lmdx_lock("L");
  lmdx_sema_p("nobody_posts");
  lmdx_unlock("L");
  return nullptr;
}

void* TakeL(void*) {
  lmdx_lock("L");
  lmdx_unlock("L");
  return nullptr;
}

void* Compute(void* seconds) {
  auto until = std::chrono::steady_clock::now() +
               std::chrono::seconds(reinterpret_cast<std::intptr_t>(seconds));
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return nullptr;
}

int Threads(const std::string& scenario, int argc, char** argv) {
  lmdx_init(&argc, &argv);  // only rank 0 returns
  int nodes = lmdx_size();
  if (scenario == "barrier_never") {
    lmdx_barrier_init("never", nodes + 1);
    for (int node = 1; node < nodes; ++node) lmdx_start_thread_on(node, ArriveAtNever, nullptr);
    lmdx_barrier("never");
  } else if (scenario == "lock_held") {
    lmdx_sema_init("nobody_posts", 0);
    lmdx_sema_init("holding", 0);
    lmdx_start_thread_on(nodes - 1, HoldLockAndWait, nullptr);
    // Until the thread holds "L": a lock taken by main first would not be the thread's.
    while (lmdx_trylock("L") == 0) {
      lmdx_unlock("L");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    lmdx_lock("L");
  } else if (scenario == "join_cycle") {
    lmdx_lock("L");
    lmdx_join_thread(lmdx_start_thread_on(0, TakeL, nullptr));
  } else if (scenario == "late_pthread") {
    lmdx_sema_init("late", 0);
    std::thread poster([] {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      lmdx_sema_v("late");
    });
    lmdx_sema_p("late");
    poster.join();
  } else if (scenario == "computing") {
    lmdx_thread_t thread = lmdx_start_thread_on(nodes - 1, Compute, reinterpret_cast<void*>(3));
    // The signal comes from another OS thread, so that main is already in the join when the
    // report is made, however slowly a sanitizer makes it get there.
    std::thread asker;
    if (argc > 2 && std::string(argv[2]) == "quit") {
      asker = std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        ::kill(::getppid(), SIGQUIT);
      });
    }
    lmdx_join_thread(thread);
    if (asker.joinable()) asker.join();
  } else {
    std::fprintf(stderr, "hangs: unknown scenario '%s'\n", scenario.c_str());
    return 2;
  }
  std::printf("done\n");
  return 0;
}

// The last rank stops itself (SIGSTOP: what a hung node looks like from outside, its process and
// connections alive) while the others wait in lmdx_barrier_all.
int StoppedRank(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  if (lmdx_rank() == lmdx_size() - 1) ::raise(SIGSTOP);
  lmdx_barrier_all();
  lmdx_finalize();
  return 0;
}

int Spmd(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  if (lmdx_rank() == 1) {
    char byte = 0;
    lmdx_recv(0, &byte, 1, nullptr);
  }
  lmdx_barrier_all();
  lmdx_finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario == "spmd_recv") return Spmd(argc, argv);
  if (scenario == "stopped") return StoppedRank(argc, argv);
  return Threads(scenario, argc, argv);
}

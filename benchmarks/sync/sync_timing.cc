// One job of the sync benchmark. Every figure is printed by rank 0 as "sync,NAME,NODES,MICROS",
// beside the one-way message latency measured in the same job ("sync,latency,NODES,MICROS").
//   lock (3 nodes or more): local reacquire, uncontended acquire of a lock resting at another node
//     (manager on a third node), contended lock/unlock by every rank, semaphore handoff.
//   barrier: lmdx_barrier_all (tree) and a named barrier (central manager) over every rank.
#include <lmdx/lmdx.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sync/names.h"

namespace {

using Clock = std::chrono::steady_clock;

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

void Report(const char* name, double micros) {
  if (lmdx_rank() == 0) std::printf("sync,%s,%d,%.3f\n", name, lmdx_size(), micros);
}

// A name whose manager is rank `manager`.
std::string NameManagedBy(const char* prefix, int manager) {
  for (int i = 0;; ++i) {
    std::string name = prefix + std::to_string(i);
    if (lmdx::sync::ManagerOf(name, lmdx_size()) == manager) return name;
  }
}

// Half the round trip of an 8-byte message between ranks 0 and 1.
void Latency(int iterations) {
  int rank = lmdx_rank();
  char byte[8] = {};
  lmdx_barrier_all();
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    if (rank == 0) {
      lmdx_send(1, byte, sizeof byte);
      lmdx_recv(1, byte, sizeof byte, nullptr);
    } else if (rank == 1) {
      lmdx_recv(0, byte, sizeof byte, nullptr);
      lmdx_send(0, byte, sizeof byte);
    }
  }
  Report("latency", Micros(Clock::now() - start) / iterations / 2);
  lmdx_barrier_all();
}

void Locks(int iterations) {
  int rank = lmdx_rank(), size = lmdx_size();
  // Local reacquire: the token rests at rank 0, which takes it again and again.
  std::string local = NameManagedBy("local", 0);
  if (rank == 0) {
    lmdx_lock(local.c_str());
    lmdx_unlock(local.c_str());
    auto start = Clock::now();
    for (int i = 0; i < iterations * 10; ++i) {
      lmdx_lock(local.c_str());
      lmdx_unlock(local.c_str());
    }
    Report("lock_local_reacquire", Micros(Clock::now() - start) / (iterations * 10));
  }
  lmdx_barrier_all();

  // Uncontended acquire from another node: ranks 0 and 1 take turns on a lock managed by rank 2;
  // the lock rests at the last holder, so each timed acquire costs request, forward and grant.
  std::string shared = NameManagedBy("handoff", 2);
  lmdx_lock_t lock = lmdx_lock_find(shared.c_str());
  double waited = 0;
  int turns = 0;
  for (int i = 0; i < iterations; ++i) {
    int owner = i % 2;
    if (rank == owner) {
      if (i > 0) lmdx_recv(1 - owner, nullptr, 0, nullptr);  // the other one is done
      auto start = Clock::now();
      lmdx_lock_h(lock);
      if (i > 1) {
        waited += Micros(Clock::now() - start);
        ++turns;
      }
      lmdx_unlock_h(lock);
      if (i + 1 < iterations) lmdx_send(1 - owner, nullptr, 0);
    }
  }
  if (rank == 1) lmdx_send(0, &waited, sizeof waited);
  if (rank == 0) {
    double other = 0;
    lmdx_recv(1, &other, sizeof other, nullptr);
    Report("lock_uncontended_remote", (waited + other) / (iterations - 2));
  }
  lmdx_barrier_all();

  // Contended: every rank locks and unlocks as fast as it can.
  std::string contended = NameManagedBy("contended", 0);
  lmdx_lock_t hot = lmdx_lock_find(contended.c_str());
  lmdx_barrier_all();
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    lmdx_lock_h(hot);
    lmdx_unlock_h(hot);
  }
  lmdx_barrier_all();
  Report("lock_contended", Micros(Clock::now() - start) / (iterations * size));

  // Semaphore handoff: rank 0 V's "a" and P's "b", rank 1 the other way round; both semaphores
  // managed by rank 2. Half a cycle is one handoff from V to the waiting P.
  std::string a = NameManagedBy("sema_a", 2), b = NameManagedBy("sema_b", 2);
  lmdx_sema_init(a.c_str(), 0);
  lmdx_sema_init(b.c_str(), 0);
  lmdx_barrier_all();
  start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    if (rank == 0) {
      lmdx_sema_v(a.c_str());
      lmdx_sema_p(b.c_str());
    } else if (rank == 1) {
      lmdx_sema_p(a.c_str());
      lmdx_sema_v(b.c_str());
    }
  }
  Report("sema_handoff", Micros(Clock::now() - start) / iterations / 2);
  lmdx_barrier_all();
}

void Barriers(int iterations) {
  for (int i = 0; i < 50; ++i) lmdx_barrier_all();
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) lmdx_barrier_all();
  Report("barrier_all_tree", Micros(Clock::now() - start) / iterations);

  lmdx_barrier_t named = lmdx_barrier_find("bench");
  lmdx_barrier_init_h(named, lmdx_size());
  lmdx_barrier_all();
  for (int i = 0; i < 50; ++i) lmdx_barrier_h(named);
  start = Clock::now();
  for (int i = 0; i < iterations; ++i) lmdx_barrier_h(named);
  Report("barrier_named_central", Micros(Clock::now() - start) / iterations);
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  std::string mode = argc > 1 ? argv[1] : "barrier";
  int iterations = argc > 2 ? std::atoi(argv[2]) : 2000;
  if (lmdx_size() < 2 || (mode == "lock" && lmdx_size() < 3)) {
    if (lmdx_rank() == 0) std::fprintf(stderr, "sync_timing: too few nodes for %s\n", mode.c_str());
    lmdx_finalize();
    return 2;
  }
  Latency(iterations);
  if (mode == "lock") {
    Locks(iterations);
  } else {
    Barriers(iterations);
  }
  Latency(iterations);
  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}

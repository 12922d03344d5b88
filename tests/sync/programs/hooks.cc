// Consistency payloads travel from releaser to acquirer. A test protocol is installed:
//   - lock "L": the payload is a counter that lives only in the payloads (each node keeps its own
//     copy); every holder increments its copy. If a grant ever lost or reordered its payload, the
//     final count would fall short. Prints "rank 0: lock counter C of T".
//   - barrier "B" and lmdx_barrier_all: each arrival releases "rank:round"; each departure must
//     bring exactly one payload per participant, all of this round. Prints "... barrier payloads
//     ok".
//   - semaphore "S": rank 1 releases "v0", "v1", ...; rank 2 acquires them in that order.
#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sync/consistency_hooks.h"
#include "tests/sync/programs/common.h"

namespace {

using lmdx::sync::ObjectKind;
using lmdx::sync::SyncObject;

long lock_counter = 0;  // this node's copy; touched only by the lock's holder
thread_local std::string next_release;
thread_local std::vector<std::string> last_acquired;

class StampHooks : public lmdx::sync::ConsistencyHooks {
 public:
  std::string OnRelease(const SyncObject& object) override {
    if (object.kind == ObjectKind::kLock) return std::to_string(lock_counter);
    return next_release;
  }
  void OnAcquire(const SyncObject& object, std::span<const std::string> payloads) override {
    if (object.kind == ObjectKind::kLock) {
      sync_checks::Check(payloads.size() == 1,
                       "a lock grant brought " + std::to_string(payloads.size()) + " payloads");
      if (!payloads[0].empty()) lock_counter = std::stol(payloads[0]);
      return;
    }
    last_acquired.assign(payloads.begin(), payloads.end());
  }
};

void CheckRound(const char* what, int round, int participants) {
  std::vector<std::string> expected;
  for (int r = 0; r < lmdx_size(); ++r) {
    for (int k = 0; k < participants / lmdx_size(); ++k) {
      expected.push_back(std::to_string(r) + ":" + std::to_string(round));
    }
  }
  std::vector<std::string> got = last_acquired;
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  if (got != expected) {
    std::string list;
    for (const auto& g : got) list += " " + g;
    sync_checks::Die(std::string(what) + " round " + std::to_string(round) + " brought" + list);
  }
}

}  // namespace

int main(int argc, char** argv) {
  lmdx::sync::SetConsistencyHooks(std::make_shared<StampHooks>());
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank(), size = lmdx_size();
  constexpr int kThreads = 2, kIncrements = 50, kRounds = 20, kItems = 100;

  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < kIncrements; ++i) {
        sync_checks::Ok(lmdx_lock("L"), "lmdx_lock");
        ++lock_counter;
        sync_checks::Ok(lmdx_unlock("L"), "lmdx_unlock");
      }
    });
  }
  for (auto& t : threads) t.join();
  lmdx_barrier_all();
  if (rank == 0) {
    sync_checks::Ok(lmdx_lock("L"), "lmdx_lock");
    std::printf("rank 0: lock counter %ld of %d\n", lock_counter, size * kThreads * kIncrements);
    sync_checks::Ok(lmdx_unlock("L"), "lmdx_unlock");
  }

  sync_checks::Ok(lmdx_barrier_init("B", size * kThreads), "lmdx_barrier_init");
  lmdx_barrier_all();
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([rank, size] {
      for (int round = 0; round < kRounds; ++round) {
        next_release = std::to_string(rank) + ":" + std::to_string(round);
        sync_checks::Ok(lmdx_barrier("B"), "lmdx_barrier");
        CheckRound("barrier B", round, size * kThreads);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int round = 0; round < kRounds; ++round) {
    next_release = std::to_string(rank) + ":" + std::to_string(round);
    sync_checks::Ok(lmdx_barrier_all(), "lmdx_barrier_all");
    CheckRound("lmdx_barrier_all", round, size);
  }
  std::printf("rank %d: barrier payloads ok\n", rank);

  sync_checks::Ok(lmdx_sema_init("S", 0), "lmdx_sema_init");
  next_release.clear();
  lmdx_barrier_all();
  if (rank == 1) {
    for (int i = 0; i < kItems; ++i) {
      next_release = "v" + std::to_string(i);
      sync_checks::Ok(lmdx_sema_v("S"), "lmdx_sema_v");
    }
  } else if (rank == 2 % size) {
    for (int i = 0; i < kItems; ++i) {
      sync_checks::Ok(lmdx_sema_p("S"), "lmdx_sema_p");
      std::string want = "v" + std::to_string(i);
      sync_checks::Check(last_acquired.size() == 1 && last_acquired[0] == want,
                       "sema_p " + std::to_string(i) + " did not bring " + want);
    }
    std::printf("rank %d: semaphore payloads ok\n", rank);
  }
  next_release.clear();
  lmdx_barrier_all();
  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}

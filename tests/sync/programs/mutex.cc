// Mutual exclusion: every rank runs THREADS threads that together do TOTAL increments of a
// counter kept on rank 0, each increment a read and a write by message inside lmdx_lock. Rank 0
// also keeps a holder flag, set when a critical section starts and cleared when it ends: finding
// it already set means two holders overlapped. One iteration in four uses lmdx_trylock.
// Prints "rank 0: counter C of T, overlaps O".
#include <sched.h>

#include <mutex>
#include <thread>
#include <vector>

#include "tests/sync/programs/common.h"

using sync_checks::Op;

namespace {

enum { kEnterRead = 1, kWriteLeave = 2, kDone = 3 };

std::mutex state_mutex;
std::int64_t counter = 0;
bool inside = false;
std::int64_t overlaps = 0;

Op Serve(Op op) {
  std::lock_guard lock(state_mutex);
  if (op.op == kEnterRead) {
    if (inside) ++overlaps;
    inside = true;
    return {op.op, counter};
  }
  if (!inside) ++overlaps;
  inside = false;
  counter = op.value;
  return {op.op, 0};
}

Op Call(Op op) { return lmdx_rank() == 0 ? Serve(op) : sync_checks::Ask(op); }

void Worker(int index, int increments) {
  lmdx_lock_t lock = lmdx_lock_find("counter_lock");
  for (int i = 0; i < increments; ++i) {
    if ((i + index) % 4 == 0) {
      int busy;
      while ((busy = lmdx_trylock("counter_lock")) == 1) sched_yield();
      sync_checks::Ok(busy, "lmdx_trylock");
    } else {
      sync_checks::Ok(lmdx_lock_h(lock), "lmdx_lock_h");
    }
    std::int64_t value = Call({kEnterRead, 0}).value;
    Call({kWriteLeave, value + 1});
    sync_checks::Ok(i % 2 == 0 ? lmdx_unlock("counter_lock") : lmdx_unlock_h(lock), "lmdx_unlock");
  }
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  int total = argc > 2 ? std::atoi(argv[2]) : 10000;
  int rank = lmdx_rank(), size = lmdx_size();
  int per_thread = total / (size * threads);
  sync_checks::Check(per_thread * size * threads == total, "TOTAL must divide evenly");

  std::thread server;
  if (rank == 0) {
    server = std::thread([size] {
      int done = 0;
      while (done < size - 1) {
        Op op{};
        lmdx_status status{};
        sync_checks::Ok(lmdx_recv(LMDX_ANY_SOURCE, &op, sizeof op, &status), "lmdx_recv");
        if (op.op == kDone) {
          ++done;
          continue;
        }
        sync_checks::Answer(status.source, Serve(op));
      }
    });
  }
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) workers.emplace_back(Worker, rank * threads + t, per_thread);
  for (auto& w : workers) w.join();
  if (rank != 0) {
    Op done{kDone, 0};
    sync_checks::Ok(lmdx_send(0, &done, sizeof done), "lmdx_send");
  } else {
    server.join();
    std::printf("rank 0: counter %lld of %d, overlaps %lld\n", static_cast<long long>(counter),
                total, static_cast<long long>(overlaps));
  }
  lmdx_barrier_all();
  lmdx_finalize();
  return 0;
}

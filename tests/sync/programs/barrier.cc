// Barriers: ROUNDS rounds of lmdx_barrier_all ("all"), or of a named barrier with THREADS threads
// on every rank ("named"). Before each round every participant registers its arrival with rank 0
// and waits for the answer; after leaving, it asks rank 0 how many arrived in that round, which
// must be every participant: a thread that left early would see fewer.
// Prints "rank R: passed N rounds" per participating thread.
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/sync/programs/common.h"

using sync_checks::Op;

namespace {

enum { kArrive = 1, kCount = 2, kDone = 3 };

std::mutex state_mutex;
std::map<std::int64_t, std::int64_t> arrived;  // by round
std::mutex wire_mutex;                         // one exchange with rank 0 at a time per node

Op Serve(Op op) {
  std::lock_guard lock(state_mutex);
  if (op.op == kArrive) return {op.op, ++arrived[op.value]};
  return {op.op, arrived[op.value]};
}

Op Call(Op op) {
  if (lmdx_rank() == 0) return Serve(op);
  std::lock_guard lock(wire_mutex);
  return sync_checks::Ask(op);
}

void Participant(bool named, int rounds, int participants) {
  lmdx_barrier_t barrier = named ? lmdx_barrier_find("rounds") : nullptr;
  for (int r = 0; r < rounds; ++r) {
    Call({kArrive, r});
    sync_checks::Ok(named ? lmdx_barrier_h(barrier) : lmdx_barrier_all(), "barrier");
    std::int64_t count = Call({kCount, r}).value;
    if (count != participants) {
      sync_checks::Die("left round " + std::to_string(r) + " when " + std::to_string(count) + " of " +
                     std::to_string(participants) + " had arrived");
    }
  }
  std::printf("rank %d: passed %d rounds\n", lmdx_rank(), rounds);
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  bool named = argc > 1 && std::string(argv[1]) == "named";
  int rounds = argc > 2 ? std::atoi(argv[2]) : 1000;
  int threads = named && argc > 3 ? std::atoi(argv[3]) : 1;
  int rank = lmdx_rank(), size = lmdx_size();
  int participants = size * threads;
  if (named) sync_checks::Ok(lmdx_barrier_init("rounds", participants), "lmdx_barrier_init");
  lmdx_barrier_all();  // every init is in before anyone arrives

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
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back(Participant, named, rounds, participants);
  }
  for (auto& w : workers) w.join();
  if (rank != 0) {
    Op done{kDone, 0};
    sync_checks::Ok(lmdx_send(0, &done, sizeof done), "lmdx_send");
  } else {
    server.join();
  }
  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}

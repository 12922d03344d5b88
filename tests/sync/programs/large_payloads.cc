// Consistency payloads larger than a frame's protobuf body may be (16 MiB) travel whole: a test
// protocol releases 20 MiB payloads, each filled from (rank, sequence), and every acquire checks
// each payload it brings byte for byte. Through a lock handed round the ranks, lmdx_barrier_all,
// a named barrier, a semaphore, and the start and join of a thread on another node (rank 0 starts
// it on rank 1). Prints "rank R: large payloads ok (N checked)".
#include <atomic>
#include <string>

#include "sync/consistency_hooks.h"
#include "tests/sync/programs/common.h"

namespace {

using lmdx::sync::ObjectKind;
using lmdx::sync::SyncObject;

constexpr std::size_t kBytes = std::size_t{20} << 20;
std::atomic<long> checked{0};

char Filler(std::size_t i, int rank, long sequence) {
  return static_cast<char>(
      (i * 31 + static_cast<std::size_t>(rank) * 7 + static_cast<std::size_t>(sequence)) & 0xff);
}

// "rank:sequence:" and filler up to kBytes.
std::string Payload(int rank, long sequence) {
  std::string text = std::to_string(rank) + ":" + std::to_string(sequence) + ":";
  std::size_t header = text.size();
  text.resize(kBytes);
  for (std::size_t i = header; i < kBytes; ++i) text[i] = Filler(i, rank, sequence);
  return text;
}

void Verify(const std::string& payload, const char* where) {
  if (payload.size() != kBytes) {
    sync_checks::Die(std::string(where) + " brought a payload of " + std::to_string(payload.size()) +
                   " bytes instead of " + std::to_string(kBytes));
  }
  std::size_t first = payload.find(':');
  std::size_t second = payload.find(':', first + 1);
  int rank = std::stoi(payload.substr(0, first));
  long sequence = std::stol(payload.substr(first + 1, second - first - 1));
  for (std::size_t i = second + 1; i < kBytes; ++i) {
    if (payload[i] != Filler(i, rank, sequence)) {
      sync_checks::Die(std::string(where) + ": byte " + std::to_string(i) + " of rank " +
                     std::to_string(rank) + "'s payload " + std::to_string(sequence) + " differs");
    }
  }
  ++checked;
}

class LargeHooks : public lmdx::sync::ConsistencyHooks {
 public:
  std::string OnRelease(const SyncObject&) override {
    return Payload(lmdx_rank(), sequence_.fetch_add(1));
  }
  void OnAcquire(const SyncObject& object, std::span<const std::string> payloads) override {
    for (const std::string& payload : payloads) {
      if (payload.empty()) continue;  // a lock's first grant carries no release
      Verify(payload, lmdx::sync::KindName(object.kind));
    }
  }

 private:
  std::atomic<long> sequence_{0};
};

void* Nothing(void* argument) { return argument; }

}  // namespace

int main(int argc, char** argv) {
  lmdx::sync::SetConsistencyHooks(std::make_shared<LargeHooks>());
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank(), size = lmdx_size();
  sync_checks::Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  for (int turn = 0; turn < size; ++turn) {
    if (turn == rank) {
      sync_checks::Ok(lmdx_lock("big"), "lmdx_lock");
      sync_checks::Ok(lmdx_unlock("big"), "lmdx_unlock");
    }
    sync_checks::Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  }
  sync_checks::Ok(lmdx_barrier_init("big_barrier", size), "lmdx_barrier_init");
  sync_checks::Ok(lmdx_barrier("big_barrier"), "lmdx_barrier");
  sync_checks::Ok(lmdx_sema_init("big_sema", 0), "lmdx_sema_init");
  sync_checks::Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  if (rank == 1) sync_checks::Ok(lmdx_sema_v("big_sema"), "lmdx_sema_v");
  if (rank == 2 % size) sync_checks::Ok(lmdx_sema_p("big_sema"), "lmdx_sema_p");
  sync_checks::Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  if (rank == 0 && size > 1) {
    lmdx_thread_t thread = lmdx_start_thread_on(1, Nothing, nullptr);
    sync_checks::Check(thread != LMDX_THREAD_INVALID, "lmdx_start_thread_on");
    lmdx_join_thread(thread);
  }
  sync_checks::Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  std::printf("rank %d: large payloads ok (%ld checked)\n", rank, checked.load());
  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}

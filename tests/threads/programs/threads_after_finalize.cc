// SPMD: every rank but 0 calls lmdx_finalize at once; rank 0 then starts a thread on each of them,
// which initialises and passes a barrier, takes a lock and writes a shared variable. A rank
// waiting in the collective finalize must run the threads placed on it until the job's finalize
// completes. Rank 0 joins them, checks what each wrote and prints "verified".
#include <lmdx/lmdx.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

constexpr int kMaxNodes = 64;

void* Work(void* arg) {
  const int node = static_cast<int>(reinterpret_cast<std::intptr_t>(arg));
  const std::string barrier = "after-finalize-" + std::to_string(node);
  lmdx_barrier_init(barrier.c_str(), 1);
  lmdx_barrier(barrier.c_str());
  auto* written = static_cast<int*>(lmdx_shared_var("written", kMaxNodes * sizeof(int)));
  lmdx_lock("written");
  written[node] = 100 + lmdx_rank();
  lmdx_unlock("written");
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(lmdx_rank()));
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  if (lmdx_rank() != 0) {
    lmdx_finalize();
    return 0;
  }
  const int size = lmdx_size() < kMaxNodes ? lmdx_size() : kMaxNodes;
  int failures = 0;
  for (int node = 1; node < size; ++node) {
    lmdx_thread_t thread =
        lmdx_start_thread_on(node, Work, reinterpret_cast<void*>(static_cast<std::intptr_t>(node)));
    auto ran_on = reinterpret_cast<std::intptr_t>(lmdx_join_thread(thread));
    if (ran_on != node) {
      std::printf("the thread for rank %d ran on rank %ld\n", node, static_cast<long>(ran_on));
      ++failures;
    }
  }
  auto* written = static_cast<int*>(lmdx_shared_var("written", kMaxNodes * sizeof(int)));
  lmdx_lock("written");
  for (int node = 1; node < size; ++node) {
    if (written[node] != 100 + node) {
      std::printf("rank %d's thread wrote %d, expected %d\n", node, written[node], 100 + node);
      ++failures;
    }
  }
  lmdx_unlock("written");
  if (failures == 0) std::printf("verified: threads after finalize on %d nodes\n", size);
  lmdx_finalize();
  return failures == 0 ? 0 : 1;
}

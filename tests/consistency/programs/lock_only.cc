// A program that synchronises with one lock only, never a barrier, for many intervals: under lrc
// no garbage collection ever runs, so the diffs a fetch needs must stay few by other means.
//   lock_only [INTERVALS] [READ_PAUSE_MS]       3 nodes
// Rank 0 homes the four pages and never touches them; rank 1 writes a word of each of them in
// every interval (a critical section of "lo_lock"); rank 2 reads them under the lock every
// READ_PAUSE_MS and checks each word against what the writer's count says it holds. With
// READ_PAUSE_MS 0 the reader reads once, when the writer is done (a semaphore says so): that one
// fetch needs every diff of the run. Rank 0 prints "verified: N intervals" at the end.
#include <lmdx/lmdx.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

constexpr std::size_t kPageWords = 4096 / sizeof(std::uint64_t);
constexpr std::size_t kPages = 4;     // homed at rank 0: the first third of 12 block-homed pages
constexpr std::uint64_t kSlots = 64;  // words per page the writer cycles through

[[noreturn]] void Fail(const std::string& what) {
  std::string text = "lock_only: rank " + std::to_string(lmdx_rank()) + ": " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Ok(int code, const char* call) {
  if (code != LMDX_OK) Fail(std::string(call) + " returned " + std::to_string(code));
}

// What slot `slot` of a page holds once the writer has counted to `count`: the last interval k
// <= count with k % kSlots == slot, times the page's factor.
std::uint64_t Expected(std::uint64_t count, std::uint64_t slot, std::uint64_t page) {
  if (count < slot || (slot == 0 && count < kSlots)) return 0;
  const std::uint64_t k = count - (count - slot) % kSlots;
  return k * (page + 1);
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  if (lmdx_size() != 3) Fail("needs 3 nodes");
  const std::uint64_t intervals = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const int pause_ms = argc > 2 ? std::atoi(argv[2]) : 20;
  auto* data = static_cast<std::uint64_t*>(lmdx_shared_var("lo_data", 3 * kPages * 4096));
  if (data == nullptr) Fail("lmdx_shared_var");
  std::uint64_t* count = data + kSlots;  // the writer's count, on page 0
  Ok(lmdx_sema_init("lo_done", 0), "lmdx_sema_init");
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");  // the only barriers: before and after
  if (lmdx_rank() == 1) {
    for (std::uint64_t k = 1; k <= intervals; ++k) {
      Ok(lmdx_lock("lo_lock"), "lmdx_lock");
      for (std::uint64_t page = 0; page < kPages; ++page) {
        data[page * kPageWords + k % kSlots] = k * (page + 1);
      }
      *count = k;
      Ok(lmdx_unlock("lo_lock"), "lmdx_unlock");
    }
    Ok(lmdx_sema_v("lo_done"), "lmdx_sema_v");
  } else if (lmdx_rank() == 2) {
    std::uint64_t reads = 0;
    if (pause_ms == 0) Ok(lmdx_sema_p("lo_done"), "lmdx_sema_p");
    for (std::uint64_t seen = 0; seen < intervals;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      Ok(lmdx_lock("lo_lock"), "lmdx_lock");
      seen = *count;
      for (std::uint64_t page = 0; page < kPages; ++page) {
        for (std::uint64_t slot = 0; slot < kSlots; ++slot) {
          const std::uint64_t got = data[page * kPageWords + slot];
          if (got != Expected(seen, slot, page)) {
            Fail("after count " + std::to_string(seen) + ", page " + std::to_string(page) +
                 " slot " + std::to_string(slot) + " holds " + std::to_string(got) + ", not " +
                 std::to_string(Expected(seen, slot, page)));
          }
        }
      }
      Ok(lmdx_unlock("lo_lock"), "lmdx_unlock");
      ++reads;
    }
    if (pause_ms != 0) Ok(lmdx_sema_p("lo_done"), "lmdx_sema_p");
    std::printf("lock_only: the reader checked %llu times\n",
                static_cast<unsigned long long>(reads));
  }
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  if (lmdx_rank() == 0) {
    std::printf("verified: %llu intervals\n", static_cast<unsigned long long>(intervals));
  }
  lmdx_finalize();
  return 0;
}

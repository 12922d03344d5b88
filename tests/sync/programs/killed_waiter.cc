// A lock's grant that reaches a node whose only waiter was killed (lmdx_kill_thread) after its
// request went out, on 3 nodes, under a lazy protocol (LMDX_PROTOCOL=hlrc or lrc). The grant left
// its releaser trimmed by that node's knowledge, so the node must not pass it on as it came: the
// next holder's acquire follows the release all the same, and must see what was written before it.
//
// Rank 0 (W) writes x under lock L, then passes its write notice to rank 1 (B) under lock M, so B
// knows it. A thread of B asks for L while W holds it again and is killed in its wait. Rank 2 (C)
// read x before W wrote it (a copy of x's page, homed at B), and takes L after W releases it:
//   rest     the token rests at B (no waiter, nobody next), then C locks L;
//   forward  C's request is queued behind B's when W releases, so B passes the token straight on;
//   trylock  the token rests at B, then C takes it with lmdx_trylock.
// C must read the value W wrote. The steps are ordered by raw messages, which carry no write
// notices, so C can hear of W's write only through L. Prints "rank 2: VARIANT: x seen as written".
#include <time.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "tests/sync/programs/common.h"

namespace {

constexpr int kW = 0;
constexpr int kB = 1;
constexpr int kC = 2;
constexpr std::size_t kPageWords = 4096 / sizeof(std::uint64_t);
constexpr std::uint64_t kWritten = 42;

std::string variant;

void Sleep(int milliseconds) {
  struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000 * 1000L};
  nanosleep(&pause, nullptr);
}

void Send(int dest, std::int64_t step) {
  sync_checks::Ok(lmdx_send(dest, &step, sizeof step), "lmdx_send");
}

void Await(int source, std::int64_t step) {
  std::int64_t got = 0;
  lmdx_status status{};
  sync_checks::Ok(lmdx_recv(source, &got, sizeof got, &status), "lmdx_recv");
  sync_checks::Check(got == step, "step " + std::to_string(step) + " expected from rank " +
                                    std::to_string(source) + ", got " + std::to_string(got));
}

void Lock(const char* name) { sync_checks::Ok(lmdx_lock(name), "lmdx_lock"); }
void Unlock(const char* name) { sync_checks::Ok(lmdx_unlock(name), "lmdx_unlock"); }

// B's thread: parks in lmdx_lock("L") until it is killed there.
void* WaitForL(void*) {
  lmdx_lock("L");
  lmdx_unlock("L");
  return nullptr;
}

enum Step : std::int64_t {
  kCopyTaken = 1,  // C -> W: C holds a copy of x's page, read before W's write
  kHolding,        // W -> B: W wrote x, released L and M, and holds L again
  kKilled,         // B -> W (rest, trylock) or B -> C (forward): B's waiter was killed
  kReleased,       // W -> C (rest, trylock): W released L, the token went to B
  kRequesting,     // C -> W (forward): C is about to lock L
};

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  variant = argc > 1 ? argv[1] : "rest";
  sync_checks::Check(variant == "rest" || variant == "forward" || variant == "trylock",
                   "unknown variant " + variant);
  sync_checks::Check(lmdx_size() == 3, "runs on 3 nodes");
  const int rank = lmdx_rank();
  // Three pages in blocks, one per rank: x lies on B's page, so C's copy is not the home's.
  auto* pages = static_cast<std::uint64_t*>(lmdx_shared_var("killed_waiter_x", 3 * 4096));
  sync_checks::Check(pages != nullptr, "lmdx_shared_var");
  const char* protocol = lmdx_protocol_of(pages);
  sync_checks::Check(protocol != nullptr &&
                       (std::strcmp(protocol, "hlrc") == 0 || std::strcmp(protocol, "lrc") == 0),
                   "runs under hlrc or lrc (LMDX_PROTOCOL)");
  volatile std::uint64_t* x = pages + kB * kPageWords;
  sync_checks::Ok(lmdx_barrier_all(), "lmdx_barrier_all");

  if (rank == kW) {
    Await(kC, kCopyTaken);
    Lock("L");
    *x = kWritten;
    Unlock("L");
    Lock("M");  // M's next holder is B: it learns of W's write here
    Unlock("M");
    Lock("L");  // the token rests here: no message
    Send(kB, kHolding);
    if (variant == "forward") {
      Await(kC, kRequesting);
      Sleep(300);  // C's request reaches B, which makes C its next
    } else {
      Await(kB, kKilled);
    }
    Unlock("L");  // the token goes to B, trimmed by what B knows
    if (variant != "forward") Send(kC, kReleased);
  } else if (rank == kB) {
    Await(kW, kHolding);
    Lock("M");
    sync_checks::Check(*x == kWritten, "B did not see W's write after lock M");
    Unlock("M");
    lmdx_thread_t waiter = lmdx_start_thread_on(kB, WaitForL, nullptr);
    sync_checks::Check(waiter != LMDX_THREAD_INVALID, "lmdx_start_thread_on");
    Sleep(300);  // the waiter's request has gone out and reached W
    sync_checks::Ok(lmdx_kill_thread(waiter), "lmdx_kill_thread");
    sync_checks::Check(lmdx_join_thread(waiter) == LMDX_KILLED,
                     "B's waiter did not end killed in its wait");
    Send(variant == "forward" ? kC : kW, kKilled);
  } else {
    sync_checks::Check(*x == 0, "x was not zero at first");
    Send(kW, kCopyTaken);
    if (variant == "forward") {
      Await(kB, kKilled);
      Send(kW, kRequesting);
      Lock("L");
    } else {
      Await(kW, kReleased);
      Sleep(300);  // the grant reaches B and the token rests there
      if (variant == "rest") {
        Lock("L");
      } else {
        int busy;
        while ((busy = lmdx_trylock("L")) == 1) Sleep(10);
        sync_checks::Ok(busy, "lmdx_trylock");
      }
    }
    std::uint64_t seen = *x;
    Unlock("L");
    sync_checks::Check(seen == kWritten, variant + ": x read " + std::to_string(seen) +
                                           " under lock L, written " + std::to_string(kWritten) +
                                           " before L's release");
    std::printf("rank %d: %s: x seen as written\n", rank, variant.c_str());
  }
  sync_checks::Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  lmdx_finalize();
  return 0;
}

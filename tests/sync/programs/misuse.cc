// Every misuse of a sync object is reported with its code and a text naming the object and the
// rank. "return" (2 ranks): LMDX_ERRORS_RETURN, each case checked; prints "rank R: N misuse
// cases reported". "fatal": rank 1 unlocks a lock it does not hold in the default mode, which
// must end the job with that message.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/sync/programs/common.h"

namespace {

int checked = 0;

// The error texts are per thread: a check of another thread's call passes its text.
void Expect(int code, int expected, const std::vector<std::string>& parts, const char* what,
            const std::string* other_thread_text = nullptr) {
  std::string text = other_thread_text ? *other_thread_text : lmdx_last_error_message();
  if (code != expected) {
    sync_checks::Die(std::string(what) + ": code " + std::to_string(code) + ", expected " +
                   std::to_string(expected) + " (" + text + ")");
  }
  for (const auto& part : parts) {
    if (text.find(part) == std::string::npos) {
      std::string problem = what;
      problem += ": \"" + text + "\" does not say \"";
      problem += part;
      problem += '"';
      sync_checks::Die(problem);
    }
  }
  std::printf("rank %d: %s: %s\n", lmdx_rank(), what, text.c_str());
  ++checked;
}

void ReturnMode() {
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  int rank = lmdx_rank();
  std::string me = "rank " + std::to_string(rank);

  // Use before init.
  Expect(lmdx_barrier("never_b"), LMDX_ERR_MISUSE,
         {"lmdx_barrier: barrier \"never_b\" is used before lmdx_barrier_init", me},
         "barrier before init");
  Expect(lmdx_sema_p("never_s"), LMDX_ERR_MISUSE,
         {"lmdx_sema_p: semaphore \"never_s\" is used before lmdx_sema_init", me},
         "sema_p before init");
  Expect(lmdx_sema_v("never_s"), LMDX_ERR_MISUSE, {"lmdx_sema_v", "\"never_s\"", me},
         "sema_v before init");
  Expect(lmdx_barrier_init("bad_count", 0), LMDX_ERR_INVALID_ARGUMENT, {"\"bad_count\""},
         "barrier count 0");
  Expect(lmdx_sema_init("bad_value", -1), LMDX_ERR_INVALID_ARGUMENT, {"\"bad_value\""},
         "sema value -1");

  // Init again with another count or value (same count is fine).
  sync_checks::Ok(lmdx_barrier_init("b2", 2), "lmdx_barrier_init");
  sync_checks::Ok(lmdx_sema_init("s1", 1), "lmdx_sema_init");
  lmdx_barrier_all();
  if (rank == 1) {
    Expect(lmdx_barrier_init("b2", 3), LMDX_ERR_MISUSE,
           {"lmdx_barrier_init: barrier \"b2\" was initialized with count 2", "rank 1",
            "with count 3"},
           "barrier init again");
    Expect(
        lmdx_sema_init("s1", 2), LMDX_ERR_MISUSE,
        {"lmdx_sema_init: semaphore \"s1\" was initialized with value 1", "rank 1", "with value 2"},
        "sema init again");
  }

  // Unlock by a non-holder: never locked, and held by another thread.
  Expect(lmdx_unlock("free_lock"), LMDX_ERR_MISUSE,
         {"lmdx_unlock: lock \"free_lock\" is not held by " + me}, "unlock not held");
  sync_checks::Ok(LMDX_lock(held_lock), "LMDX_lock");
  int other = 0;
  std::string other_text;
  std::thread([&] {
    other = lmdx_unlock("held_lock");
    other_text = lmdx_last_error_message();
  }).join();
  Expect(other, LMDX_ERR_MISUSE,
         {"lock \"held_lock\" is held by another thread of " + me + ", not by the caller"},
         "unlock by another thread", &other_text);
  Expect(lmdx_lock("held_lock"), LMDX_ERR_MISUSE, {"already held by this thread"}, "lock twice");
  sync_checks::Ok(LMDX_unlock(held_lock), "LMDX_unlock");

  // A name used as two kinds: on one node, and across nodes (rank 0 makes "shared" a semaphore).
  sync_checks::Ok(lmdx_lock("x_lock"), "lmdx_lock");
  sync_checks::Ok(lmdx_unlock("x_lock"), "lmdx_unlock");
  Expect(lmdx_barrier_init("x_lock", 1), LMDX_ERR_MISUSE,
         {"\"x_lock\" is a lock", "cannot be used as a barrier", me}, "lock as barrier");
  if (rank == 0) sync_checks::Ok(lmdx_sema_init("shared", 1), "lmdx_sema_init");
  if (rank == 0) sync_checks::Ok(lmdx_sema_init("shared2", 1), "lmdx_sema_init");
  lmdx_barrier_all();
  if (rank == 1) {
    Expect(lmdx_lock("shared"), LMDX_ERR_MISUSE,
           {"\"shared\" is a semaphore", "rank 1 cannot use it as a lock"}, "semaphore as lock");
    Expect(lmdx_trylock("shared"), LMDX_ERR_MISUSE,
           {"\"shared\" is a semaphore", "rank 1 cannot use it as a lock"}, "semaphore as trylock");
    Expect(lmdx_barrier("shared2"), LMDX_ERR_MISUSE,
           {"\"shared2\" is a semaphore", "rank 1 cannot use it as a barrier"},
           "semaphore as barrier");
  }
  lmdx_barrier_all();

  // More arrivals than the count: three threads of rank 0 on a barrier of count 2. The count can
  // never be reached; someone is told, and nobody waits for ever.
  if (rank == 0) {
    sync_checks::Ok(lmdx_barrier_init("too_many", 2), "lmdx_barrier_init");
    std::atomic<int> reported{0};
    std::vector<std::thread> threads;
    threads.reserve(3);
    std::string text;
    std::mutex text_mutex;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&] {
        for (int round = 0; round < 3; ++round) {
          if (lmdx_barrier("too_many") != LMDX_OK) {
            std::lock_guard lock(text_mutex);
            if (++reported == 1) text = lmdx_last_error_message();
            return;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    sync_checks::Check(reported > 0, "three threads on a barrier of count 2 were not reported");
    for (const char* part : {"barrier \"too_many\" has more arrivals than its count 2", "rank 0"}) {
      sync_checks::Check(text.find(part) != std::string::npos, "\"" + text + "\" lacks " + part);
    }
    std::printf("rank 0: over-arrival: %s\n", text.c_str());
    ++checked;
  }
  lmdx_barrier_all();
  std::printf("rank %d: %d misuse cases reported\n", rank, checked);
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  std::string mode = argc > 1 ? argv[1] : "return";
  if (mode == "fatal") {
    lmdx_barrier_all();
    if (lmdx_rank() == 1) lmdx_unlock("never_locked");
    lmdx_barrier_all();
    std::printf("rank %d: the misuse went unnoticed\n", lmdx_rank());
  } else {
    ReturnMode();
  }
  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}

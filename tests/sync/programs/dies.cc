// A node dies (SIGKILL) while it holds a lock ("lock") or while it waits at a barrier
// ("barrier"); every other rank waits for that lock or at that barrier. The job must end with a
// message naming the rank, not hang. With a second argument "return", the waiters run in
// LMDX_ERRORS_RETURN mode and hold SIGTERM back long enough to print what their call returned.
#include <signal.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "tests/sync/programs/common.h"

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "lock";
  int victim = 1;
  bool return_errors = argc > 2 && std::string(argv[2]) == "return";
  const char* rank_text = std::getenv("LMDX_RANK");
  if (return_errors && rank_text != nullptr && std::atoi(rank_text) != victim) {
    // Before lmdx_init, so that the runtime's threads inherit the mask too.
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, nullptr);
  }
  lmdx_init_spmd(&argc, &argv);
  sync_checks::Ok(lmdx_barrier_init("never_full", lmdx_size() + 1), "lmdx_barrier_init");
  if (lmdx_rank() == victim && mode == "lock") sync_checks::Ok(lmdx_lock("held"), "lmdx_lock");
  lmdx_barrier_all();
  std::printf("rank %d ready\n", lmdx_rank());
  std::fflush(stdout);
  if (lmdx_rank() == victim) {
    std::thread([] {
      ::usleep(300 * 1000);
      ::raise(SIGKILL);
    }).detach();
  }
  if (return_errors) lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  int code = LMDX_OK;
  if (mode == "lock") {
    if (lmdx_rank() != victim)
      code = lmdx_lock("held");
    else
      ::pause();
  } else {
    code = lmdx_barrier("never_full");
  }
  if (code == LMDX_ERR_PEER_LOST) {
    std::printf("rank %d: the wait failed with LMDX_ERR_PEER_LOST (%s)\n", lmdx_rank(),
                lmdx_last_error_message());
    std::fflush(stdout);
    return 3;
  }
  std::printf("rank %d: went on after rank %d died\n", lmdx_rank(), victim);
  return 1;
}

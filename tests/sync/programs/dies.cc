// A node dies (SIGKILL) while it holds a lock ("lock") or while it waits at a barrier
// ("barrier"); every other rank waits for that lock or at that barrier. The job must end with a
// message naming the rank, not hang.
#include <signal.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "tests/sync/programs/common.h"

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  std::string mode = argc > 1 ? argv[1] : "lock";
  int victim = 1;
  lmdx_test::Ok(lmdx_barrier_init("never_full", lmdx_size() + 1), "lmdx_barrier_init");
  if (lmdx_rank() == victim && mode == "lock") lmdx_test::Ok(lmdx_lock("held"), "lmdx_lock");
  lmdx_barrier_all();
  std::printf("rank %d ready\n", lmdx_rank());
  std::fflush(stdout);
  if (lmdx_rank() == victim) {
    std::thread([] {
      ::usleep(300 * 1000);
      ::raise(SIGKILL);
    }).detach();
  }
  if (mode == "lock") {
    if (lmdx_rank() != victim)
      lmdx_lock("held");
    else
      ::pause();
  } else {
    lmdx_barrier("never_full");
  }
  std::printf("rank %d: went on after rank %d died\n", lmdx_rank(), victim);
  return 1;
}

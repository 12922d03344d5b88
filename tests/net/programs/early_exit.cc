// The rank named by argv[2] ends with status 0 at the wrong moment while the others wait:
// argv[1] = "before-init" (before it joins the job) or "mid-job" (after joining, without
// lmdx_finalize). The job must end, naming that rank, instead of waiting for ever.
#include <lmdx/lmdx.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  bool before_init = std::strcmp(argv[1], "before-init") == 0;
  int quitter = std::atoi(argv[2]);
  const char* rank_text = std::getenv("LMDX_RANK");
  if (before_init && rank_text != nullptr && std::atoi(rank_text) == quitter) return 0;
  lmdx_init_spmd(&argc, &argv);
  if (lmdx_rank() == quitter) return 0;
  char byte;
  lmdx_recv(LMDX_ANY_SOURCE, &byte, 1, nullptr);
  std::printf("rank %d: a message arrived that nobody sent\n", lmdx_rank());
  return 1;
}

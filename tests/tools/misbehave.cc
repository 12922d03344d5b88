// Test node: records its pid in PID_DIR/RANK.pid, then waits. The node whose LMDX_RANK equals
// TARGET_RANK does ACTION after DELAY_MS: "segv" raises SIGSEGV, "exit:N" exits with N, "none"
// keeps waiting. With --stubborn every node ignores SIGTERM, so only SIGKILL ends it.
//
// Usage: misbehave PID_DIR TARGET_RANK ACTION DELAY_MS [--stubborn]

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  if (argc < 5) return 99;
  std::string dir = argv[1];
  int target = std::atoi(argv[2]);
  std::string action = argv[3];
  int delay_ms = std::atoi(argv[4]);
  bool stubborn = argc > 5 && std::strcmp(argv[5], "--stubborn") == 0;
  const char* rank_env = std::getenv("LMDX_RANK");
  if (rank_env == nullptr) return 98;
  int rank = std::atoi(rank_env);
  if (stubborn) ::signal(SIGTERM, SIG_IGN);

  // Written under a temporary name and renamed, so a reader never sees half a pid.
  std::string path = dir + "/" + std::to_string(rank) + ".pid";
  std::string temp = path + ".tmp";
  if (FILE* f = std::fopen(temp.c_str(), "w")) {
    std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
    std::fclose(f);
    std::rename(temp.c_str(), path.c_str());
  }
  std::printf("ready %d\n", rank);
  std::fflush(stdout);

  if (rank == target) {
    ::usleep(static_cast<useconds_t>(delay_ms) * 1000);
    if (action == "segv") {
      ::signal(SIGSEGV, SIG_DFL);
      ::raise(SIGSEGV);
    } else if (action.rfind("exit:", 0) == 0) {
      return std::atoi(action.c_str() + 5);
    }
  }
  for (;;) ::pause();
}

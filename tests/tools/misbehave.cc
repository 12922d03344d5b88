// Test node: records its pid in PID_DIR/RANK.pid, then waits. The node whose LMDX_RANK equals
// TARGET_RANK does ACTION after DELAY_MS: "segv" raises SIGSEGV, "kill" raises SIGKILL, "exit:N"
// exits with N, "none" keeps waiting. "--also RANK ACTION DELAY_MS" gives a second node its own
// action. With --stubborn every node ignores SIGTERM, so only SIGKILL ends it.
//
// Usage: misbehave PID_DIR TARGET_RANK ACTION DELAY_MS [--also RANK ACTION DELAY_MS] [--stubborn]

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Misdeed {
  int rank = -1;
  std::string action = "none";
  int delay_ms = 0;
};

int Commit(const Misdeed& misdeed) {
  ::usleep(static_cast<useconds_t>(misdeed.delay_ms) * 1000);
  if (misdeed.action == "segv" || misdeed.action == "kill") {
    int sig = misdeed.action == "segv" ? SIGSEGV : SIGKILL;
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  } else if (misdeed.action.rfind("exit:", 0) == 0) {
    return std::atoi(misdeed.action.c_str() + 5);
  }
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) return 99;
  std::string dir = argv[1];
  std::vector<Misdeed> misdeeds = {{std::atoi(argv[2]), argv[3], std::atoi(argv[4])}};
  bool stubborn = false;
  for (int i = 5; i < argc; ++i) {
    if (std::strcmp(argv[i], "--stubborn") == 0) {
      stubborn = true;
    } else if (std::strcmp(argv[i], "--also") == 0 && i + 3 < argc) {
      misdeeds.push_back({std::atoi(argv[i + 1]), argv[i + 2], std::atoi(argv[i + 3])});
      i += 3;
    } else {
      return 97;
    }
  }
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

  for (const Misdeed& misdeed : misdeeds) {
    if (misdeed.rank == rank) return Commit(misdeed);
  }
  for (;;) ::pause();
}

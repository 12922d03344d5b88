// Test node: prints the bootstrap variables the launcher gives it, one "NAME=value" per line,
// and its pid as "PID=...".

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>

int main() {
  for (const char* name :
       {"LMDX_RANK", "LMDX_SIZE", "LMDX_JOB_SECRET", "LMDX_RENDEZVOUS", "LMDX_JOB_ID"}) {
    const char* value = std::getenv(name);
    std::printf("%s=%s\n", name, value ? value : "(unset)");
  }
  std::printf("PID=%d\n", static_cast<int>(::getpid()));
  return 0;
}

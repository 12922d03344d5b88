#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace lmdx {
namespace {
std::atomic<int> log_rank{-1};
}  // namespace

void SetLogRank(int rank) { log_rank.store(rank, std::memory_order_relaxed); }

void LogLine(const std::string& text) {
  int rank = log_rank.load(std::memory_order_relaxed);
  std::string line = rank >= 0 ? "lmdx[rank " + std::to_string(rank) + "]: " : "lmdx: ";
  line += text;
  line += '\n';
  // A short write to stderr is not worth retrying: the line is diagnostic only.
  [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
}

bool DebugEnabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("LMDX_DEBUG");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return enabled;
}

void DebugLine(const std::string& text) {
  if (DebugEnabled()) LogLine(text);
}

}  // namespace lmdx

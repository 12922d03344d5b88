#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/clock.h"

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

LogLimiter::LogLimiter(std::string kind, int per_second)
    : kind_(std::move(kind)), per_second_(per_second) {}

LogLimiter::~LogLimiter() {
  std::lock_guard lock(mutex_);
  SayLeftOutLocked();
}

void LogLimiter::SayLeftOutLocked() {
  if (left_out_ == 0) return;
  LogLine(std::to_string(left_out_) + " more " + kind_ + " were not logged");
  left_out_ = 0;
}

void LogLimiter::Line(const std::string& text) {
  std::lock_guard lock(mutex_);
  std::int64_t now = MonotonicNs();
  if (now - window_start_ns_ >= 1000000000) {
    SayLeftOutLocked();
    window_start_ns_ = now;
    written_in_window_ = 0;
  }
  if (written_in_window_ < per_second_) {
    ++written_in_window_;
    LogLine(text);
  } else {
    ++left_out_;
  }
}

}  // namespace lmdx

#ifndef LMDX_BASE_LOG_H_
#define LMDX_BASE_LOG_H_

#include <cstdint>
#include <mutex>
#include <string>

namespace lmdx {

// Every line a node writes about itself starts with "lmdx[rank R]: " so that the launcher's merged
// output says who spoke. Set once the rank is known; before that lines start with "lmdx: ".
void SetLogRank(int rank);

// Writes "prefix + text + newline" with one write(2), so lines of concurrent threads never mix.
void LogLine(const std::string& text);

// Lines of one kind that a stranger can make as many of as it likes (refused connections): the
// first `per_second` of each second are written as they come; the rest are counted, and one line
// says how many were left out, with the next line written or at destruction. A flood thus costs
// a few lines a second, and nothing is hidden without a word.
class LogLimiter {
 public:
  LogLimiter(std::string kind, int per_second = 10);
  ~LogLimiter();
  LogLimiter(const LogLimiter&) = delete;
  LogLimiter& operator=(const LogLimiter&) = delete;
  void Line(const std::string& text);

 private:
  void SayLeftOutLocked();
  std::mutex mutex_;
  std::string kind_;
  int per_second_;
  std::int64_t window_start_ns_ = 0;
  int written_in_window_ = 0;
  std::uint64_t left_out_ = 0;
};

// Like LogLine, only when LMDX_DEBUG=1 is set in the environment.
void DebugLine(const std::string& text);
bool DebugEnabled();

}  // namespace lmdx

#endif  // LMDX_BASE_LOG_H_

#ifndef LMDX_BASE_LOG_H_
#define LMDX_BASE_LOG_H_

#include <string>

namespace lmdx {

// Every line a node writes about itself starts with "lmdx[rank R]: " so that the launcher's merged
// output says who spoke. Set once the rank is known; before that lines start with "lmdx: ".
void SetLogRank(int rank);

// Writes "prefix + text + newline" with one write(2), so lines of concurrent threads never mix.
void LogLine(const std::string& text);

// Like LogLine, only when LMDX_DEBUG=1 is set in the environment.
void DebugLine(const std::string& text);
bool DebugEnabled();

}  // namespace lmdx

#endif  // LMDX_BASE_LOG_H_

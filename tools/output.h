#ifndef LMDX_TOOLS_OUTPUT_H_
#define LMDX_TOOLS_OUTPUT_H_

#include <string_view>

namespace lmdx::tools {

// Writes all of data to fd, retrying on EINTR and waiting (poll) when fd is non-blocking and full.
// Returns false when the reader is gone (EPIPE) or fd fails otherwise; the launcher then drops
// that stream's output rather than stopping the job.
bool WriteAll(int fd, std::string_view data);

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_OUTPUT_H_

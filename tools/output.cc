#include "tools/output.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace lmdx::tools {

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      // The terminal or pipe we inherited may be non-blocking; wait instead of spinning.
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace lmdx::tools

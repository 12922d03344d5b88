// lmdx_read and lmdx_write: file I/O on buffers that may lie in shared memory. The kernel copies
// into and out of a buffer without the DSM's faults: a read into shared pages this node cannot
// write fails with EFAULT, or returns a short count after the first such page, and a write from
// pages this node cannot read does the same. These go through private staging and lmdx_put /
// lmdx_get, which reach the pages through the protocol.
#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "api/internal/runtime_state.h"
#include "dsm/service.h"

namespace lmdx::api {
namespace {

// Large enough that a big transfer costs few system calls, small enough to stay out of the way.
constexpr std::size_t kStagingBytes = std::size_t{1} << 20;

// The DSM when buffer lies in shared memory, else nullptr (then the call is plain read/write).
// Checks the whole range first, so that no byte is taken from the file for a buffer that cannot
// hold it.
dsm::Service* SharedBufferDsm(const char* call, const void* buffer, std::size_t bytes,
                              int* status) {
  dsm::Service* dsm = dsm::Current();
  *status = LMDX_OK;
  if (dsm == nullptr || bytes == 0 || !dsm->Contains(buffer)) return nullptr;
  *status = Guard(call, [&] {
    dsm->CheckRange(buffer, bytes, call);
    return LMDX_OK;
  });
  return dsm;
}

}  // namespace
}  // namespace lmdx::api

extern "C" {

ssize_t lmdx_read(int fd, void* buffer, size_t bytes) {
  int status = LMDX_OK;
  lmdx::dsm::Service* dsm = lmdx::api::SharedBufferDsm("lmdx_read", buffer, bytes, &status);
  if (status != LMDX_OK) {
    errno = EFAULT;
    return -1;
  }
  if (dsm == nullptr) return ::read(fd, buffer, bytes);
  std::vector<std::byte> staging(std::min(bytes, lmdx::api::kStagingBytes));
  auto* to = static_cast<std::byte*>(buffer);
  std::size_t done = 0;
  while (done < bytes) {
    std::size_t want = std::min(staging.size(), bytes - done);
    ssize_t got = ::read(fd, staging.data(), want);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return done > 0 ? static_cast<ssize_t>(done) : -1;
    if (got == 0) break;
    if (lmdx_put(to + done, staging.data(), static_cast<std::size_t>(got)) != LMDX_OK) {
      errno = EFAULT;
      return -1;
    }
    done += static_cast<std::size_t>(got);
    // What read(2) would have returned: the end of a pipe's or socket's data for now.
    if (static_cast<std::size_t>(got) < want) break;
  }
  return static_cast<ssize_t>(done);
}

ssize_t lmdx_write(int fd, const void* buffer, size_t bytes) {
  int status = LMDX_OK;
  lmdx::dsm::Service* dsm = lmdx::api::SharedBufferDsm("lmdx_write", buffer, bytes, &status);
  if (status != LMDX_OK) {
    errno = EFAULT;
    return -1;
  }
  if (dsm == nullptr) return ::write(fd, buffer, bytes);
  std::vector<std::byte> staging(std::min(bytes, lmdx::api::kStagingBytes));
  const auto* from = static_cast<const std::byte*>(buffer);
  std::size_t done = 0;
  while (done < bytes) {
    std::size_t length = std::min(staging.size(), bytes - done);
    if (lmdx_get(staging.data(), from + done, length) != LMDX_OK) {
      errno = EFAULT;
      return done > 0 ? static_cast<ssize_t>(done) : -1;
    }
    std::size_t written = 0;
    while (written < length) {
      ssize_t out = ::write(fd, staging.data() + written, length - written);
      if (out < 0 && errno == EINTR) continue;
      if (out < 0) {
        done += written;
        return done > 0 ? static_cast<ssize_t>(done) : -1;
      }
      written += static_cast<std::size_t>(out);
    }
    done += length;
  }
  return static_cast<ssize_t>(done);
}

}  // extern "C"

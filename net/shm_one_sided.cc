// The shared-memory transport's one-sided reads (net/shm_transport.h).
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "base/error.h"
#include "base/log.h"
#include "net/internal/shm_connection.h"
#include "net/shm_transport.h"

namespace lmdx::net {

namespace {

constexpr std::string_view kKeyPrefix = "pid:";

// The process a key names, or 0 when it is not a key of this transport's.
pid_t KeyPid(const std::string& key) {
  if (key.rfind(kKeyPrefix, 0) != 0) return 0;
  pid_t pid = 0;
  const char* end = key.data() + key.size();
  auto [at, error] = std::from_chars(key.data() + kKeyPrefix.size(), end, pid);
  return error == std::errc() && at == end && pid > 0 ? pid : 0;
}

}  // namespace

std::optional<std::string> ShmTransport::ExposeForReading(void* /*base*/, std::size_t /*size*/) {
  return std::string(kKeyPrefix) + std::to_string(::getpid());
}

bool ShmTransport::Read(int dest, std::uint64_t remote_address, const std::string& key, void* local,
                        std::size_t size, std::function<void(bool ok)> on_done) {
  const pid_t named = KeyPid(key);
  pid_t peer = 0;
  {
    std::lock_guard lock(mutex_);
    for (const ConnectionPtr& connection : connections_) {
      if (connection->peer_rank() == dest && connection->peer_pid() != 0) {
        peer = connection->peer_pid();
        break;
      }
    }
  }
  if (named == 0 || peer != named) return false;
  auto* into = static_cast<char*>(local);
  std::size_t done = 0;
  while (done < size) {
    iovec mine{into + done, size - done};
    iovec theirs{reinterpret_cast<void*>(remote_address + done), size - done};
    const ssize_t got = ::process_vm_readv(peer, &mine, 1, &theirs, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      DebugLine(SystemErrorText("shm: process_vm_readv from rank " + std::to_string(dest),
                                got < 0 ? errno : EIO));
      on_done(false);
      return true;
    }
    done += static_cast<std::size_t>(got);
  }
  on_done(true);
  return true;
}

}  // namespace lmdx::net

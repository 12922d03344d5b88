// The shared-memory transport's one-sided access (net/shm/shm_transport.h).
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <vector>

#include "base/error.h"
#include "base/fd.h"
#include "base/log.h"
#include "net/shm/internal/shm_connection.h"
#include "net/shm/shm_transport.h"

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

std::optional<std::string> ShmTransport::Expose(void* /*base*/, std::size_t /*size*/) {
  return std::string(kKeyPrefix) + std::to_string(::getpid());
}

pid_t ShmTransport::PeerProcess(int dest, const std::string& key) {
  const pid_t named = KeyPid(key);
  if (named == 0) return 0;
  std::lock_guard lock(mutex_);
  for (const ConnectionPtr& connection : connections_) {
    if (connection->peer_rank() == dest && connection->peer_pid() == named) return named;
  }
  return 0;
}

bool ShmTransport::Read(int dest, std::uint64_t remote_address, const std::string& key, void* local,
                        std::size_t size, std::function<void(bool ok)> on_done) {
  const pid_t peer = PeerProcess(dest, key);
  if (peer == 0) return false;
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

std::optional<bool> ShmTransport::Write(int dest, const std::string& key,
                                        std::span<const WritePiece> pieces) {
  const pid_t peer = PeerProcess(dest, key);
  if (peer == 0) return std::nullopt;
  std::vector<iovec> mine;
  std::vector<iovec> theirs;
  for (std::size_t at = 0; at < pieces.size(); at += IOV_MAX) {
    const std::size_t count = std::min<std::size_t>(IOV_MAX, pieces.size() - at);
    mine.clear();
    theirs.clear();
    std::size_t bytes = 0;
    for (const WritePiece& piece : pieces.subspan(at, count)) {
      mine.push_back({const_cast<void*>(piece.from), piece.size});
      theirs.push_back({reinterpret_cast<void*>(piece.address), piece.size});
      bytes += piece.size;
    }
    ssize_t wrote;
    do {
      wrote = ::process_vm_writev(peer, mine.data(), mine.size(), theirs.data(), theirs.size(), 0);
    } while (wrote < 0 && errno == EINTR);
    // A short write means a piece reached memory the peer does not have: nothing more is tried.
    if (wrote < 0 || static_cast<std::size_t>(wrote) != bytes) {
      DebugLine(SystemErrorText("shm: process_vm_writev to rank " + std::to_string(dest),
                                wrote < 0 ? errno : EFAULT));
      return false;
    }
  }
  return true;
}

Mapping ShmTransport::Map(int dest, const std::string& key, int file, std::size_t size) {
  const pid_t peer = PeerProcess(dest, key);
  if (peer == 0 || file < 0 || size == 0) return {};
  const std::string path = "/proc/" + std::to_string(peer) + "/fd/" + std::to_string(file);
  // Only the peer's memory files: a descriptor number is no proof of what it names.
  char target[64] = {};
  const ssize_t length = ::readlink(path.c_str(), target, sizeof target - 1);
  if (length <= 0 ||
      std::string_view(target, static_cast<std::size_t>(length)).rfind("/memfd:", 0) != 0) {
    DebugLine("shm: rank " + std::to_string(dest) + "'s descriptor " + std::to_string(file) +
              " is not a memory file; its memory is reached by system calls");
    return {};
  }
  Fd memory(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  struct stat status {};
  if (!memory || ::fstat(memory.get(), &status) != 0 ||
      static_cast<std::uint64_t>(status.st_size) < size) {
    DebugLine(SystemErrorText("shm: opening rank " + std::to_string(dest) + "'s memory", errno));
    return {};
  }
  void* at =
      ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, memory.get(), 0);
  if (at == MAP_FAILED) {
    DebugLine(SystemErrorText("shm: mapping rank " + std::to_string(dest) + "'s memory", errno));
    return {};
  }
  return Mapping(at, size);
}

}  // namespace lmdx::net

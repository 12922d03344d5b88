#include "net/internal/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/error.h"

namespace lmdx::net::internal {

sockaddr_in ParseHostPort(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                "'" + text + "' is not an address of the form host:port");
  }
  std::string host = text.substr(0, colon);
  std::string port_text = text.substr(colon + 1);
  char* end = nullptr;
  long port = std::strtol(port_text.c_str(), &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "'" + text + "' has no valid port");
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) == 1) return address;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int status = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (status != 0 || found == nullptr) {
    throw Error(LMDX_ERR_NETWORK, "cannot resolve host '" + host + "': " + gai_strerror(status));
  }
  address.sin_addr = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
  ::freeaddrinfo(found);
  return address;
}

std::string FormatAddress(const sockaddr_in& address) {
  char host[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address.sin_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(address.sin_port));
}

Fd ListenTcp(const std::string& host) {
  sockaddr_in address = ParseHostPort(host + ":1");
  address.sin_port = 0;
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) ThrowSystemError("socket", errno);
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ThrowSystemError("bind to " + host, errno);
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) ThrowSystemError("listen on " + host, errno);
  return fd;
}

sockaddr_in LocalAddress(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ThrowSystemError("getsockname", errno);
  }
  return address;
}

Fd ConnectTcpNonBlocking(const sockaddr_in& address) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) ThrowSystemError("socket", errno);
  SetNoDelay(fd.get());
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 &&
      errno != EINPROGRESS) {
    ThrowSystemError("connect to " + FormatAddress(address), errno);
  }
  // connect has chosen the local address by now, even while the handshake is in flight.
  KeepLocalTrafficInCache(fd.get(), address);
  return fd;
}

Fd ConnectTcpBlocking(const sockaddr_in& address, int timeout_ms) {
  Fd fd = ConnectTcpNonBlocking(address);
  pollfd waiting{fd.get(), POLLOUT, 0};
  int ready;
  do {
    ready = ::poll(&waiting, 1, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) {
    throw Error(LMDX_ERR_NETWORK, "connect to " + FormatAddress(address) + ": timed out after " +
                                      std::to_string(timeout_ms) + " ms");
  }
  int error = 0;
  socklen_t length = sizeof error;
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
  if (error != 0) ThrowSystemError("connect to " + FormatAddress(address), error);
  SetNonBlocking(fd.get(), false);
  return fd;
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool IsLoopback(const sockaddr_in& address) {
  return (ntohl(address.sin_addr.s_addr) >> 24) == 127;
}

bool IsLoopbackHost(const std::string& host) {
  try {
    return IsLoopback(ParseHostPort(host + ":1"));
  } catch (const Error&) {
    return false;
  }
}

bool SameKernel(const sockaddr_in& local, const sockaddr_in& peer) {
  return IsLoopback(peer) || peer.sin_addr.s_addr == local.sin_addr.s_addr;
}

bool PeerOnThisKernel(int fd) {
  sockaddr_in local{};
  sockaddr_in peer{};
  socklen_t local_length = sizeof local;
  socklen_t peer_length = sizeof peer;
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) == 0 &&
         ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) == 0 &&
         SameKernel(local, peer);
}

void SetSendBuffer(int fd, int bytes) {
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
}

void KeepLocalTrafficInCache(int fd, const sockaddr_in& peer) {
  sockaddr_in local{};
  socklen_t length = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) return;
  if (!SameKernel(local, peer)) return;
  // Between two processes of one kernel the sender copies a frame into socket buffers and the
  // receiver copies it out. With the buffer the kernel grows by itself (4 MiB here), the bytes
  // between the two copies outgrow a core's cache, and the receiver reads them back from memory:
  // 64 MiB messages crossed at 5.0 GB/s. With 256 KiB (the kernel doubles it to 512 KiB) they
  // are still in cache when read: 7.2-7.4 GB/s (docs/decisions.md). A real network's round trip
  // needs the kernel's own sizing, so the limit is for local pairs only.
  SetSendBuffer(fd, kLocalSendBufferBytes);
}

void SetNonBlocking(int fd, bool non_blocking) {
  int flags = ::fcntl(fd, F_GETFL);
  flags = non_blocking ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  ::fcntl(fd, F_SETFL, flags);
}

void WriteAll(int fd, const void* data, std::size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t written = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (written < 0) {
      if (errno == EINTR) continue;
      ThrowSystemError("send", errno);
    }
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
}

bool ReadExactly(int fd, void* data, std::size_t size, int timeout_ms) {
  char* bytes = static_cast<char*>(data);
  while (size > 0) {
    pollfd waiting{fd, POLLIN, 0};
    int ready = ::poll(&waiting, 1, timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      ThrowSystemError("poll", errno);
    }
    if (ready == 0) {
      throw Error(LMDX_ERR_NETWORK,
                  "no data within " + std::to_string(timeout_ms) + " ms from the other side");
    }
    ssize_t got = ::recv(fd, bytes, size, 0);
    if (got == 0) return false;
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      ThrowSystemError("recv", errno);
    }
    bytes += got;
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

}  // namespace lmdx::net::internal

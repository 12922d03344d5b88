#ifndef LMDX_NET_INTERNAL_SOCKET_H_
#define LMDX_NET_INTERNAL_SOCKET_H_

#include <netinet/in.h>

#include <cstdint>
#include <string>

#include "base/fd.h"

namespace lmdx::net::internal {

// "host:port" to an IPv4 address; throws lmdx::Error naming the text when it does not parse or
// the host does not resolve.
sockaddr_in ParseHostPort(const std::string& text);
std::string FormatAddress(const sockaddr_in& address);

// A non-blocking listening socket on host, port 0 (the kernel picks one).
Fd ListenTcp(const std::string& host);
sockaddr_in LocalAddress(int fd);

// Starts a non-blocking connect; the socket becomes writable when it completes.
Fd ConnectTcpNonBlocking(const sockaddr_in& address);
// A blocking connect with a deadline; throws lmdx::Error on failure.
Fd ConnectTcpBlocking(const sockaddr_in& address, int timeout_ms);

void SetNoDelay(int fd);

// The send buffer asked for a socket whose peer runs under the same kernel: LMDX's tcp sockets,
// and UCX's in a job on one host (UcxWorker).
inline constexpr int kLocalSendBufferBytes = 256 * 1024;
// 127.0.0.0/8.
bool IsLoopback(const sockaddr_in& address);
// host (a name or dotted address, as LMDX_BIND_HOST) resolves to a loopback address; false when
// it does not resolve. A node bound there can be reached from this host only.
bool IsLoopbackHost(const std::string& host);
// True when peer is this machine seen from local: a loopback address, or local's own address.
bool SameKernel(const sockaddr_in& local, const sockaddr_in& peer);
// Limits the send buffer of a connected (or connecting) socket whose peer is on this machine, so
// that what is in flight between the two copies stays in cache; leaves other sockets alone.
void KeepLocalTrafficInCache(int fd, const sockaddr_in& peer);
// The send buffer a local pair's frame of a few hundred KiB to kWholeFrameUpTo bytes is written
// with (TcpConnection): the kernel doubles it, which leaves room for such a frame whole beside
// the kernel's own overhead per packet.
inline constexpr int kWholeFrameSendBufferBytes = 1024 * 1024;
inline constexpr std::uint64_t kWholeFrameUpTo = 3 * std::uint64_t{kWholeFrameSendBufferBytes} / 2;
// A connected socket's peer is on this machine (SameKernel of its two ends).
bool PeerOnThisKernel(int fd);
void SetSendBuffer(int fd, int bytes);

void SetNonBlocking(int fd, bool non_blocking);

// Writes all of data to a blocking socket; throws on failure.
void WriteAll(int fd, const void* data, std::size_t size);
// Reads exactly size bytes; false on end of stream; throws on failure or after timeout_ms
// (-1: no timeout) without progress.
bool ReadExactly(int fd, void* data, std::size_t size, int timeout_ms);

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_INTERNAL_SOCKET_H_

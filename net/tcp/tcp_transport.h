#ifndef LMDX_NET_TCP_TCP_TRANSPORT_H_
#define LMDX_NET_TCP_TCP_TRANSPORT_H_

#include <netinet/in.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/log.h"
#include "net/job_secret.h"
#include "net/progress_engine.h"
#include "net/transport.h"

namespace lmdx::net {
namespace internal {
class TcpConnection;
}

// The TCP transport: one connection per pair of nodes, opened by the first send between them,
// authenticated (net/handshake.h), TCP_NODELAY, vectored writes straight from the sender's
// buffers. If two nodes open connections to each other at the same moment, each keeps sending on
// the one it opened, so the order of each direction holds; both stay open.
class TcpTransport : public Transport {
 public:
  TcpTransport(ProgressEngine& engine, TransportHost& host, const JobSecret& secret, int rank,
               int size, const std::string& bind_host);
  ~TcpTransport() override;

  const char* name() const override { return "tcp"; }
  wire::Endpoint LocalEndpoint() const override;
  void SetJobTable(const wire::JobTable& table) override;
  void Send(int dest, OutgoingMessage message, bool may_block) override;
  void Close() override;
  void DropPeer(int rank, const std::string& why) override;

 private:
  using ConnectionPtr = std::shared_ptr<internal::TcpConnection>;
  void OnAcceptable();
  ConnectionPtr MakeConnection(Fd fd, bool outgoing, int expected_peer, std::string label);
  void OnEstablished(const ConnectionPtr& connection, bool outgoing);
  void OnClosed(const ConnectionPtr& connection, bool was_established, const std::string& why);

  ProgressEngine& engine_;
  TransportHost& host_;
  JobSecret secret_;
  int rank_;
  int size_;
  Fd listener_;
  std::string listen_address_;

  std::mutex mutex_;                     // guards everything below
  std::vector<sockaddr_in> addresses_;   // by rank
  std::vector<ConnectionPtr> send_to_;   // by rank: the connection frames to that rank take
  std::set<ConnectionPtr> connections_;  // every open connection, authenticated or not
  bool closing_ = false;
  // Accepted connections still in their handshake: a flood of strangers is refused beyond a
  // bound instead of taking every file descriptor (each would wait out its handshake deadline).
  // The bound leaves room for every other rank of the job connecting at once, twice over.
  int MaxPendingHandshakes() const { return 2 * size_ + 64; }
  int pending_handshakes_ = 0;
  LogLimiter refusals_{"refused TCP connections"};
};

}  // namespace lmdx::net

#endif  // LMDX_NET_TCP_TCP_TRANSPORT_H_

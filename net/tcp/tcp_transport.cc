#include "net/tcp/tcp_transport.h"

#include <sys/socket.h>

#include <cerrno>

#include "base/error.h"
#include "base/log.h"
#include "net/internal/close_connections.h"
#include "net/internal/socket.h"
#include "net/tcp/internal/tcp_connection.h"

namespace lmdx::net {

using internal::TcpConnection;

TcpTransport::TcpTransport(ProgressEngine& engine, TransportHost& host, const JobSecret& secret,
                           int rank, int size, const std::string& bind_host)
    : engine_(engine),
      host_(host),
      secret_(secret),
      rank_(rank),
      size_(size),
      listener_(internal::ListenTcp(bind_host)),
      send_to_(static_cast<std::size_t>(size)) {
  sockaddr_in local = internal::LocalAddress(listener_.get());
  listen_address_ = internal::FormatAddress(local);
  engine_.Add(listener_.get(), EPOLLIN, [this](std::uint32_t) { OnAcceptable(); });
}

TcpTransport::~TcpTransport() { Close(); }

wire::Endpoint TcpTransport::LocalEndpoint() const {
  wire::Endpoint endpoint;
  endpoint.set_transport("tcp");
  endpoint.set_address(listen_address_);
  return endpoint;
}

void TcpTransport::SetJobTable(const wire::JobTable& table) {
  std::vector<sockaddr_in> addresses(static_cast<std::size_t>(size_));
  for (const wire::NodeInfo& node : table.nodes()) {
    for (const wire::Endpoint& endpoint : node.endpoints()) {
      if (endpoint.transport() == "tcp" && node.rank() >= 0 && node.rank() < size_) {
        addresses[static_cast<std::size_t>(node.rank())] =
            internal::ParseHostPort(endpoint.address());
      }
    }
  }
  std::lock_guard lock(mutex_);
  addresses_ = std::move(addresses);
}

TcpTransport::ConnectionPtr TcpTransport::MakeConnection(Fd fd, bool outgoing, int expected_peer,
                                                         std::string label) {
  Handshake handshake = outgoing ? Handshake::AsClient(secret_, rank_, expected_peer)
                                 : Handshake::AsServer(secret_, rank_);
  TcpConnection::Callbacks callbacks;
  callbacks.on_established = [this, outgoing](const ConnectionPtr& connection) {
    OnEstablished(connection, outgoing);
  };
  callbacks.on_closed = [this](const ConnectionPtr& connection, bool was_established,
                               const std::string& why) {
    OnClosed(connection, was_established, why);
  };
  return std::make_shared<TcpConnection>(std::move(fd), outgoing, expected_peer,
                                         std::move(handshake), std::move(label), rank_, engine_,
                                         host_, std::move(callbacks));
}

void TcpTransport::OnAcceptable() {
  for (;;) {
    sockaddr_in remote{};
    socklen_t length = sizeof remote;
    Fd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&remote), &length,
                    SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        LogLine(SystemErrorText("tcp: accept", errno));
      }
      return;
    }
    internal::SetNoDelay(fd.get());
    internal::KeepLocalTrafficInCache(fd.get(), remote);
    std::string label = "connection from " + internal::FormatAddress(remote);
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
      if (pending_handshakes_ >= MaxPendingHandshakes()) {
        refusals_.Line("tcp: refused a " + label + ": " + std::to_string(MaxPendingHandshakes()) +
                       " connections are already in their handshake");
        continue;
      }
      ++pending_handshakes_;
    }
    ConnectionPtr connection = MakeConnection(std::move(fd), /*outgoing=*/false, 0, label);
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
      connections_.insert(connection);
    }
    connection->Start();
  }
}

void TcpTransport::Send(int dest, OutgoingMessage message, bool may_block) {
  ConnectionPtr connection;
  bool fresh = false;
  {
    std::lock_guard lock(mutex_);
    connection = send_to_[static_cast<std::size_t>(dest)];
    if (!connection && !closing_) {
      if (addresses_.empty()) {
        throw Error(LMDX_ERR_INTERNAL, "tcp: send before the job table is known");
      }
      const sockaddr_in& address = addresses_[static_cast<std::size_t>(dest)];
      std::string label =
          "rank " + std::to_string(dest) + " at " + internal::FormatAddress(address);
      connection =
          MakeConnection(internal::ConnectTcpNonBlocking(address), /*outgoing=*/true, dest, label);
      send_to_[static_cast<std::size_t>(dest)] = connection;
      connections_.insert(connection);
      fresh = true;
    }
  }
  if (!connection) {
    if (message.on_sent) message.on_sent(false);
    return;
  }
  // Queue first, then start: the handshake's completion flushes what is queued.
  connection->Send(std::move(message), may_block);
  if (fresh) connection->Start();
}

void TcpTransport::OnEstablished(const ConnectionPtr& connection, bool outgoing) {
  if (!outgoing) {
    std::lock_guard lock(mutex_);
    --pending_handshakes_;
  }
  int peer = connection->peer_rank();
  if (!outgoing && (peer < 0 || peer >= size_ || peer == rank_)) {
    LogLine("tcp: refused " + connection->remote_label() + ": it claims rank " +
            std::to_string(peer) + ", which is not another rank of this job");
    connection->Close("claimed an impossible rank", /*quiet=*/true);
    std::lock_guard lock(mutex_);
    connections_.erase(connection);
    return;
  }
  DebugLine("tcp: connected with rank " + std::to_string(peer) + " (" + connection->remote_label() +
            ")");
  std::lock_guard lock(mutex_);
  if (!send_to_[static_cast<std::size_t>(peer)])
    send_to_[static_cast<std::size_t>(peer)] = connection;
}

void TcpTransport::OnClosed(const ConnectionPtr& connection, bool was_established,
                            const std::string& why) {
  bool report;
  {
    std::lock_guard lock(mutex_);
    connections_.erase(connection);
    if (!connection->outgoing() && !was_established) --pending_handshakes_;
    report = !closing_;
  }
  if (!report) return;
  if (connection->outgoing() || was_established) {
    host_.OnPeerLost(connection->peer_rank(), connection->remote_label() + ": " + why);
  } else {
    refusals_.Line("tcp: refused a " + connection->remote_label() + ": " + why);
  }
}

// Closing its connections stops their reads at once (TcpConnection::Close); each reports the
// loss again on the progress thread, which the node already knows of.
void TcpTransport::DropPeer(int rank, const std::string& why) {
  internal::CloseConnectionsTo(mutex_, connections_, rank, why);
}

void TcpTransport::Close() {
  std::set<ConnectionPtr> connections;
  {
    std::lock_guard lock(mutex_);
    if (closing_) return;
    closing_ = true;
    connections.swap(connections_);
    for (auto& connection : send_to_) connection.reset();
  }
  engine_.Remove(listener_.get());
  for (const ConnectionPtr& connection : connections) connection->Close("job ending", true);
}

}  // namespace lmdx::net

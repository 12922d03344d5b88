#include "net/shm/shm_transport.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "net/crowding.h"
#include "net/handshake.h"
#include "net/internal/close_connections.h"
#include "net/internal/frame_io.h"
#include "net/shm/internal/shm_connection.h"
#include "net/internal/socket.h"

namespace lmdx::net {

using internal::ShmConnection;
using internal::ShmSetup;

namespace {

constexpr int kSetupTimeoutMs = 5000;
constexpr std::uint64_t kDefaultRingBytes = 1u << 20;
constexpr int kSetupFds = 5;  // segment, then data and space eventfds of ring 0 and ring 1

// What the creator of a segment sends with its descriptors.
struct SetupMessage {
  char magic[8];  // "LMDXSEG1"
  std::uint64_t capacity;
};

std::uint64_t RingBytes() {
  const char* text = std::getenv("LMDX_SHM_RING_KIB");
  if (text == nullptr) return kDefaultRingBytes;
  char* end = nullptr;
  unsigned long long kib = std::strtoull(text, &end, 10);
  std::uint64_t bytes = kib << 10;
  if (end == text || *end != '\0' || kib < 4 || kib > (1u << 20) || (bytes & (bytes - 1)) != 0) {
    throw Error(
        LMDX_ERR_INVALID_ARGUMENT,
        std::string("LMDX_SHM_RING_KIB must be a power of two from 4 to 1048576, not ") + text);
  }
  return bytes;
}

std::string Sanitized(const std::string& text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return out.empty() ? "local" : out;
}

sockaddr_un AbstractAddress(const std::string& name, socklen_t* length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof address.sun_path) {
    throw Error(LMDX_ERR_INTERNAL, "shm: socket name too long: " + name);
  }
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return address;
}

void SetTimeouts(int fd, int timeout_ms) {
  timeval timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
}

Fd MakeEventFd() {
  Fd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!fd) ThrowSystemError("shm: eventfd", errno, LMDX_ERR_NETWORK);
  return fd;
}

void RunServerHandshake(int fd, Handshake& handshake, const std::string& peer) {
  handshake.Feed(nullptr, 0);
  std::vector<std::uint8_t> input;
  for (;;) {
    std::string output = handshake.TakeOutput();
    if (!output.empty()) internal::WriteAll(fd, output.data(), output.size());
    if (handshake.state() != Handshake::State::kRunning) break;
    input.resize(handshake.BytesWanted());
    if (!internal::ReadExactly(fd, input.data(), input.size(), crowding::Scaled(kSetupTimeoutMs))) {
      throw Error(LMDX_ERR_NETWORK, peer + " closed the connection during the handshake");
    }
    handshake.Feed(input.data(), input.size());
  }
  if (handshake.state() == Handshake::State::kFailed) {
    throw Error(LMDX_ERR_NETWORK, peer + ": " + handshake.error());
  }
}

}  // namespace

std::string ShmTransport::LocalScope() {
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  char netns[64] = {};
  [[maybe_unused]] ssize_t n = ::readlink("/proc/self/ns/net", netns, sizeof netns - 1);
  return boot_id + "/" + netns;
}

ShmTransport::ShmTransport(ProgressEngine& engine, TransportHost& host, const JobSecret& secret,
                           int rank, int size, const std::string& job_id)
    : engine_(engine),
      host_(host),
      secret_(secret),
      rank_(rank),
      size_(size),
      job_id_(Sanitized(job_id)),
      capacity_(RingBytes()),
      stop_fd_(MakeEventFd()),
      send_to_(static_cast<std::size_t>(size)),
      send_now_to_(static_cast<std::size_t>(size)),
      polled_(std::make_shared<const std::vector<ConnectionPtr>>()) {
  address_ = "lmdx-" + job_id_ + "-" + std::to_string(rank) + "-" + std::to_string(::getpid());
  listener_ = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener_) ThrowSystemError("shm: socket", errno, LMDX_ERR_NETWORK);
  socklen_t length;
  sockaddr_un address = AbstractAddress(address_, &length);
  if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener_.get(), SOMAXCONN) != 0) {
    ThrowSystemError("shm: listen on @" + address_, errno, LMDX_ERR_NETWORK);
  }
  engine_.AddPoller(this);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

ShmTransport::~ShmTransport() { Close(); }

wire::Endpoint ShmTransport::LocalEndpoint() const {
  wire::Endpoint endpoint;
  endpoint.set_transport("shm");
  endpoint.set_address("@" + address_);
  endpoint.set_scope(LocalScope());
  return endpoint;
}

void ShmTransport::SetJobTable(const wire::JobTable& table) {
  std::vector<std::string> addresses(static_cast<std::size_t>(size_));
  for (const wire::NodeInfo& node : table.nodes()) {
    for (const wire::Endpoint& endpoint : node.endpoints()) {
      if (endpoint.transport() == "shm" && node.rank() >= 0 && node.rank() < size_ &&
          endpoint.address().size() > 1) {
        addresses[static_cast<std::size_t>(node.rank())] = endpoint.address().substr(1);
      }
    }
  }
  std::lock_guard lock(mutex_);
  addresses_ = std::move(addresses);
}

ShmTransport::ConnectionPtr ShmTransport::MakeConnection(int peer, const std::string& label) {
  return std::make_shared<ShmConnection>(
      rank_, peer, label, engine_, host_,
      [this](const ConnectionPtr& connection, const std::string& why) {
        OnClosed(connection, why);
      });
}

// Caller holds mutex_.
void ShmTransport::Track(const ConnectionPtr& connection) {
  connections_.insert(connection);
  polled_ =
      std::make_shared<const std::vector<ConnectionPtr>>(connections_.begin(), connections_.end());
  polled_version_.fetch_add(1, std::memory_order_release);
}

void ShmTransport::Send(int dest, OutgoingMessage message, bool may_block) {
  ConnectionPtr connection;
  std::string address;
  bool fresh = false;
  {
    std::lock_guard lock(mutex_);
    connection = send_to_[static_cast<std::size_t>(dest)];
    if (!connection && !closing_) {
      if (addresses_.empty() || addresses_[static_cast<std::size_t>(dest)].empty()) {
        throw Error(LMDX_ERR_INTERNAL,
                    "shm: rank " + std::to_string(dest) + " has no shared-memory endpoint");
      }
      address = addresses_[static_cast<std::size_t>(dest)];
      connection = MakeConnection(dest, "rank " + std::to_string(dest) + " at @" + address);
      SendThrough(dest, connection);
      Track(connection);
      fresh = true;
    }
  }
  if (!connection) {
    if (message.on_sent) message.on_sent(false);
    return;
  }
  // Queue first: the segment is set up below, and other threads queue meanwhile.
  connection->Send(std::move(message), may_block);
  if (fresh) Connect(connection, address);
}

void ShmTransport::SendThrough(int dest, const ConnectionPtr& connection) {
  send_to_[static_cast<std::size_t>(dest)] = connection;
  send_now_to_[static_cast<std::size_t>(dest)].store(connection.get(), std::memory_order_release);
}

bool ShmTransport::SendNow(int dest, OutgoingMessage& message) {
  internal::ShmConnection* connection =
      send_now_to_[static_cast<std::size_t>(dest)].load(std::memory_order_acquire);
  return connection != nullptr && connection->SendNow(message);
}

bool ShmTransport::SendRawNow(const SmallRaw& raw) {
  internal::ShmConnection* connection =
      send_now_to_[static_cast<std::size_t>(raw.destination)].load(std::memory_order_acquire);
  return connection != nullptr && connection->SendRawNow(raw);
}

// Runs on the first sender's thread. The peer's acceptor answers from a thread of its own, so
// two nodes connecting to each other at once (even from their progress threads) never wait on
// each other.
void ShmTransport::Connect(const ConnectionPtr& connection, const std::string& address) {
  int peer = connection->peer_rank();
  try {
    socklen_t length;
    sockaddr_un remote = AbstractAddress(address, &length);
    // A peer that hundreds of nodes reach at once (rank 0 at start-up) may have a full accept
    // queue: the connect then fails with EAGAIN, and is tried again, backing off, for as long as
    // setting up a connection may take.
    Fd socket;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(crowding::Scaled(kSetupTimeoutMs));
    for (std::chrono::milliseconds pause(1);; pause = std::min(pause * 2, decltype(pause)(100))) {
      socket = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (!socket) ThrowSystemError("shm: socket", errno, LMDX_ERR_NETWORK);
      SetTimeouts(socket.get(), crowding::Scaled(kSetupTimeoutMs));
      if (::connect(socket.get(), reinterpret_cast<sockaddr*>(&remote), length) == 0) break;
      if (errno != EAGAIN || std::chrono::steady_clock::now() + pause > deadline) {
        ThrowSystemError("cannot connect", errno, LMDX_ERR_NETWORK);
      }
      std::this_thread::sleep_for(pause);
    }
    Handshake handshake = Handshake::AsClient(secret_, rank_, peer);
    internal::RunClientHandshake(socket.get(), handshake, connection->label(),
                                 crowding::Scaled(kSetupTimeoutMs));

    std::string name = "lmdx-" + job_id_ + "-" + std::to_string(rank_) + "-" + std::to_string(peer);
    Fd segment(::memfd_create(name.c_str(), MFD_CLOEXEC));
    if (!segment) ThrowSystemError("memfd_create", errno, LMDX_ERR_NETWORK);
    std::size_t size = internal::SegmentSize(capacity_);
    if (::fchmod(segment.get(), 0600) != 0 ||
        ::ftruncate(segment.get(), static_cast<off_t>(size)) != 0) {
      ThrowSystemError("shm: sizing the segment", errno, LMDX_ERR_NETWORK);
    }
    ShmSetup setup;
    setup.creator = true;
    setup.mapping = internal::MapSegment(segment.get(), capacity_, true, &setup.mapping_size);
    setup.data_out = MakeEventFd();
    setup.space_in = MakeEventFd();
    setup.data_in = MakeEventFd();
    setup.space_out = MakeEventFd();

    SetupMessage message{};
    std::memcpy(message.magic, "LMDXSEG1", 8);
    message.capacity = capacity_;
    iovec iov{&message, sizeof message};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kSetupFds)] = {};
    msghdr header{};
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    cmsghdr* cmsg = CMSG_FIRSTHDR(&header);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * kSetupFds);
    int fds[kSetupFds] = {segment.get(), setup.data_out.get(), setup.space_in.get(),
                          setup.data_in.get(), setup.space_out.get()};
    std::memcpy(CMSG_DATA(cmsg), fds, sizeof fds);
    if (::sendmsg(socket.get(), &header, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof message)) {
      ::munmap(setup.mapping, setup.mapping_size);
      ThrowSystemError("shm: passing the segment", errno, LMDX_ERR_NETWORK);
    }
    DebugLine("shm: segment " + name + " (" + std::to_string(capacity_ >> 10) +
              " KiB per direction) shared with rank " + std::to_string(peer));
    setup.socket = std::move(socket);
    connection->Establish(std::move(setup));
  } catch (const Error& error) {
    connection->Close(error.what());
  }
}

void ShmTransport::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LogLine(SystemErrorText("shm: poll", errno));
      return;
    }
    if (fds[1].revents != 0) return;
    Fd socket(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!socket) continue;
    Dispatch(std::move(socket));
  }
}

void ShmTransport::Dispatch(Fd socket) {
  ucred credentials{};
  socklen_t credentials_size = sizeof credentials;
  ::getsockopt(socket.get(), SOL_SOCKET, SO_PEERCRED, &credentials, &credentials_size);
  std::string who = "connection from pid " + std::to_string(credentials.pid);
  // The nodes of a job are one user's processes; anyone else is refused before a byte is read.
  if (credentials.uid != ::geteuid()) {
    refusals_.Line("shm: refused a " + who + " of user " + std::to_string(credentials.uid) +
                   ": not this job's user");
    return;
  }
  // Close shuts setups down through a duplicate of their socket, held until the setup is done:
  // the number it shuts down is never one the setup closed and something else reused.
  auto alias = std::make_shared<Fd>(::dup(socket.get()));
  if (!*alias) {
    refusals_.Line("shm: refused a " + who + ": " + SystemErrorText("dup", errno));
    return;
  }
  int fd = alias->get();
  {
    std::unique_lock lock(setups_mutex_);
    setups_changed_.wait(lock,
                         [this] { return setups_running_ < kMaxSetupsAtOnce || stopping_setups_; });
    if (stopping_setups_) return;
    ++setups_running_;
    setup_sockets_.insert(fd);
  }
  auto done = [this, alias] {
    std::lock_guard lock(setups_mutex_);
    setup_sockets_.erase(alias->get());
    --setups_running_;
    setups_changed_.notify_all();
  };
  try {
    std::thread([this, socket = std::move(socket), pid = credentials.pid, done]() mutable {
      Accept(socket, pid);
      // Close waits for done, and the process may end right after: nothing of this thread's may
      // be left that only its end would free.
      ReleaseThreadCryptoState();
      done();
    }).detach();
  } catch (const std::system_error& error) {
    refusals_.Line("shm: refused a " + who + ": " + error.what());
    done();
  }
}

void ShmTransport::Accept(Fd& socket, pid_t pid) {
  std::string label = "connection from pid " + std::to_string(pid);
  try {
    SetTimeouts(socket.get(), crowding::Scaled(kSetupTimeoutMs));
    Handshake handshake = Handshake::AsServer(secret_, rank_);
    RunServerHandshake(socket.get(), handshake, label);
    int peer = handshake.peer_id();
    if (peer < 0 || peer >= size_ || peer == rank_) {
      throw Error(LMDX_ERR_NETWORK,
                  "it claims rank " + std::to_string(peer) + ", not another rank of this job");
    }
    SetupMessage message{};
    iovec iov{&message, sizeof message};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kSetupFds)] = {};
    msghdr header{};
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    ssize_t got = ::recvmsg(socket.get(), &header, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    Fd fds[kSetupFds];
    cmsghdr* cmsg = CMSG_FIRSTHDR(&header);
    if (cmsg != nullptr && cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
      int count = static_cast<int>((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      int raw[kSetupFds];
      std::memcpy(raw, CMSG_DATA(cmsg), sizeof(int) * std::min(count, kSetupFds));
      for (int i = 0; i < std::min(count, kSetupFds); ++i) fds[i] = Fd(raw[i]);
      if (count != kSetupFds) throw Error(LMDX_ERR_NETWORK, "the segment setup is incomplete");
    } else {
      throw Error(LMDX_ERR_NETWORK, "no segment came with the setup");
    }
    if (got != static_cast<ssize_t>(sizeof message) ||
        std::memcmp(message.magic, "LMDXSEG1", 8) != 0 || message.capacity != capacity_) {
      throw Error(LMDX_ERR_NETWORK, "the segment setup is malformed");
    }
    struct stat info {};
    if (::fstat(fds[0].get(), &info) != 0 ||
        static_cast<std::size_t>(info.st_size) != internal::SegmentSize(capacity_)) {
      throw Error(LMDX_ERR_NETWORK, "the segment has the wrong size");
    }
    ShmSetup setup;
    setup.creator = false;
    setup.mapping = internal::MapSegment(fds[0].get(), capacity_, false, &setup.mapping_size);
    setup.data_in = std::move(fds[1]);
    setup.space_out = std::move(fds[2]);
    setup.data_out = std::move(fds[3]);
    setup.space_in = std::move(fds[4]);
    setup.socket = std::move(socket);
    ConnectionPtr connection =
        MakeConnection(peer, "rank " + std::to_string(peer) + " (pid " + std::to_string(pid) + ")");
    {
      std::lock_guard lock(mutex_);
      if (closing_) {
        ::munmap(setup.mapping, setup.mapping_size);
        return;
      }
      Track(connection);
      if (!send_to_[static_cast<std::size_t>(peer)]) SendThrough(peer, connection);
    }
    DebugLine("shm: rank " + std::to_string(peer) + " shares a segment with this node");
    connection->Establish(std::move(setup));
  } catch (const Error& error) {
    refusals_.Line("shm: refused a " + label + ": " + error.what());
  }
}

// A closed connection's poll reads nothing more (ShmConnection::Close); each reports the loss
// again on the progress thread, which the node already knows of.
void ShmTransport::DropPeer(int rank, const std::string& why) {
  internal::CloseConnectionsTo(mutex_, connections_, rank, why);
}

void ShmTransport::OnClosed(const ConnectionPtr& connection, const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    if (connections_.erase(connection) > 0) {
      polled_ = std::make_shared<const std::vector<ConnectionPtr>>(connections_.begin(),
                                                                   connections_.end());
      polled_version_.fetch_add(1, std::memory_order_release);
    }
    if (closing_) return;
  }
  host_.OnPeerLost(connection->peer_rank(), connection->label() + ": " + why);
}

// Polls never overlap one another, nor do armings (ProgressEngine::Poller), so the copy each
// kind walks is its own: it is taken again only when the set of connections changed, and an idle
// poll costs no lock and no reference count.
const std::vector<ShmTransport::ConnectionPtr>& ShmTransport::Walked(Walk& walk) {
  std::uint64_t version = polled_version_.load(std::memory_order_acquire);
  if (version != walk.version || walk.connections == nullptr) {
    std::lock_guard lock(mutex_);
    walk.connections = polled_;
    walk.version = polled_version_.load(std::memory_order_relaxed);
  }
  return *walk.connections;
}

bool ShmTransport::Poll() {
  bool found = false;
  for (const ConnectionPtr& connection : Walked(polls_walk_)) found |= connection->Poll();
  return found;
}

bool ShmTransport::Arm() {
  bool waiting = false;
  for (const ConnectionPtr& connection : Walked(arming_walk_)) waiting |= connection->Arm();
  return waiting;
}

void ShmTransport::Disarm() {
  for (const ConnectionPtr& connection : Walked(arming_walk_)) connection->Disarm();
}

void ShmTransport::Close() {
  std::set<ConnectionPtr> connections;
  {
    std::lock_guard lock(mutex_);
    if (closing_) return;
    closing_ = true;
    connections.swap(connections_);
    polled_ = std::make_shared<const std::vector<ConnectionPtr>>();
    polled_version_.fetch_add(1, std::memory_order_release);
    // send_to_ keeps its connections, closed, until the transport is destroyed: SendNow reaches
    // them through send_now_to_ without the lock.
  }
  engine_.RemovePoller(this);
  // No poll nor arming starts any more; a close from a callback may be inside this transport's
  // own poll, whose walk then keeps its list until the transport goes.
  if (!engine_.InDispatch()) {
    polls_walk_.connections.reset();
    arming_walk_.connections.reset();
  }
  {
    // Setups still under way end at once: their sockets are shut down under them, and an
    // acceptor waiting for a free slot gives up.
    std::lock_guard lock(setups_mutex_);
    stopping_setups_ = true;
    setups_changed_.notify_all();
    for (int fd : setup_sockets_) ::shutdown(fd, SHUT_RDWR);
  }
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(stop_fd_.get(), &one, sizeof one);
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::unique_lock lock(setups_mutex_);
    setups_changed_.wait(lock, [this] { return setups_running_ == 0; });
  }
  for (const ConnectionPtr& connection : connections) connection->Close("job ending", true);
}

}  // namespace lmdx::net

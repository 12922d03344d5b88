#include "net/rendezvous_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/log.h"
#include "net/crowding.h"
#include "net/handshake.h"
#include "net/heartbeat.h"
#include "net/internal/frame_io.h"
#include "net/internal/socket.h"
#include "net/wire.h"
#include "net/wire.pb.h"

namespace lmdx::net {
namespace {

constexpr int kHandshakeDeadlineMs = 5000;

// One node's connection to the rendezvous, served without blocking so that a stranger who
// connects and says nothing cannot stall the job.
struct Client {
  Fd fd;
  std::string label;
  Handshake handshake;
  std::int64_t deadline_ms;
  std::string input;  // bytes of the join frame received so far
  bool joined = false;
  bool told_failure = false;
  bool left = false;  // said it ends in order: it may close its end at any moment
  int rank = -1;
};

class PollingRendezvousServer : public RendezvousServer {
 public:
  PollingRendezvousServer(const JobSecret& secret, int job_size, const std::string& bind_host)
      : secret_(secret),
        size_(job_size),
        listener_(internal::ListenTcp(bind_host)),
        stop_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
        nodes_(static_cast<std::size_t>(job_size)),
        heartbeat_(HeartbeatSettings::FromEnvironment()),
        silence_(job_size, heartbeat_, MonotonicMs()),
        ranks_(static_cast<std::size_t>(job_size)) {
    if (!stop_fd_) ThrowSystemError("eventfd", errno, LMDX_ERR_INTERNAL);
    // Until the table says where the nodes run, the worst case: all of them on this host.
    crowding::AssumeAllHere(job_size);
    address_ = internal::FormatAddress(internal::LocalAddress(listener_.get()));
    thread_ = std::thread([this] { Run(); });
  }

  ~PollingRendezvousServer() override {
    stopping_.store(true);
    Wake();
    thread_.join();
  }

  std::string address() const override { return address_; }

  NodeState StateAfterExit(int rank, std::chrono::milliseconds settle) override {
    std::unique_lock lock(state_mutex_);
    const RankState& state = ranks_.at(static_cast<std::size_t>(rank));
    // This thread reads a thousand connections on a crowded host: it may need longer to get to
    // this one.
    state_changed_.wait_for(lock, settle * crowding::Scale(),
                            [&] { return !state.joined || state.disconnected; });
    if (state.left) return NodeState::kLeft;
    return state.joined ? NodeState::kJoined : NodeState::kNotJoined;
  }

  void NodeGone(int rank) override {
    {
      std::lock_guard lock(state_mutex_);
      if (ranks_.at(static_cast<std::size_t>(rank)).joined || table_sent_ || !failure_.empty()) {
        return;
      }
      failure_ = "rank " + std::to_string(rank) + " ended before it joined the job";
    }
    Wake();
  }

  bool HasJoined(int rank) override {
    std::lock_guard lock(state_mutex_);
    return ranks_.at(static_cast<std::size_t>(rank)).joined;
  }

 private:
  void Wake() {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_fd_.get(), &one, sizeof one);
  }

  void Run() {
    for (;;) {
      std::vector<pollfd> fds{{stop_fd_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
      for (const Client& client : clients_) fds.push_back({client.fd.get(), POLLIN, 0});
      int ready = ::poll(fds.data(), fds.size(), NextTimeoutMs());
      if (ready < 0 && errno != EINTR) {
        LogLine(SystemErrorText("rendezvous: poll", errno));
        return;
      }
      if (fds[0].revents != 0) {
        std::uint64_t value;
        [[maybe_unused]] ssize_t n = ::read(stop_fd_.get(), &value, sizeof value);
        if (stopping_.load()) return;
        SendFailureIfAny();
      }
      if (fds[1].revents != 0) Accept();
      // Serve in reverse so that dropping a client does not shift the ones still to serve.
      for (std::size_t i = clients_.size(); i-- > 0;) {
        bool readable = fds.size() > i + 2 && fds[i + 2].revents != 0;
        if (!Serve(clients_[i], readable)) clients_.erase(clients_.begin() + static_cast<long>(i));
      }
      if (HeartbeatRunning() && MonotonicMs() >= next_tick_ms_) Tick();
    }
  }

  // Once the job has started: the heartbeat's frames go out, and its silences are checked.
  bool HeartbeatRunning() const { return heartbeat_.on() && table_sent_; }

  void Tick() {
    const std::int64_t now = MonotonicMs();
    next_tick_ms_ = now + heartbeat_.period_ms;
    for (Client& client : clients_) {
      // A node that is leaving needs no heartbeat, and may already have closed its end.
      if (client.joined && !client.told_failure && !client.left) {
        SendFrame(client, MessageType::kHeartbeat, {});
      }
    }
    for (int rank : silence_.Tick(now)) {
      if (hang_reported_) break;
      hang_reported_ = true;
      const wire::NodeInfo& node = *nodes_[static_cast<std::size_t>(rank)];
      const std::string silent =
          SecondsText(std::chrono::milliseconds(silence_.SilentForMs(rank, now)));
      std::string why = "rank " + std::to_string(rank) + " (host " + node.host() + ", pid " +
                        std::to_string(node.pid()) + ") has sent nothing, not even a heartbeat, " +
                        "for " + silent +
                        ": it hangs (stopped, or stuck in the kernel) or its host cannot be "
                        "reached; the job ends";
      LogLine(why);
      wire::ErrorReply error;
      error.set_code(LMDX_ERR_PEER_LOST);
      error.set_message(why);
      for (Client& client : clients_) {
        if (client.joined && client.rank != rank && !client.told_failure) {
          SendFrame(client, MessageType::kError, error.SerializeAsString());
          client.told_failure = true;
        }
      }
    }
  }

  int NextTimeoutMs() const {
    std::int64_t soonest = -1;
    for (const Client& client : clients_) {
      if (client.handshake.state() == Handshake::State::kDone && client.joined) continue;
      if (soonest < 0 || client.deadline_ms < soonest) soonest = client.deadline_ms;
    }
    if (HeartbeatRunning() && (soonest < 0 || next_tick_ms_ < soonest)) soonest = next_tick_ms_;
    if (soonest < 0) return -1;
    return static_cast<int>(std::max<std::int64_t>(0, soonest - MonotonicMs()));
  }

  void Accept() {
    for (;;) {
      sockaddr_in remote{};
      socklen_t length = sizeof remote;
      Fd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&remote), &length,
                      SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!fd) return;
      Client client{std::move(fd),
                    "connection from " + internal::FormatAddress(remote),
                    Handshake::AsServer(secret_, Handshake::kRendezvousId),
                    MonotonicMs() + crowding::Scaled(kHandshakeDeadlineMs),
                    {}};
      if (!SendAll(client, client.handshake.TakeOutput())) continue;
      clients_.push_back(std::move(client));
    }
  }

  static bool SendAll(Client& client, const std::string& bytes) {
    if (bytes.empty()) return true;
    internal::SetNonBlocking(client.fd.get(), false);
    try {
      internal::WriteAll(client.fd.get(), bytes.data(), bytes.size());
    } catch (const Error&) {
      return false;
    }
    internal::SetNonBlocking(client.fd.get(), true);
    return true;
  }

  void Refuse(const Client& client, const std::string& why) {
    refusals_.Line("rendezvous: refused a " + client.label + ": " + why);
  }

  // Returns false when the client's connection is done with.
  bool Serve(Client& client, bool readable) {
    bool pending = !(client.handshake.state() == Handshake::State::kDone && client.joined);
    if (!readable) {
      if (pending && MonotonicMs() >= client.deadline_ms) {
        Refuse(client, "it did not join within " + SecondsText(std::chrono::milliseconds(
                                                       crowding::Scaled(kHandshakeDeadlineMs))));
        return false;
      }
      return true;
    }
    std::uint8_t buffer[4096];
    ssize_t got = ::recv(client.fd.get(), buffer, sizeof buffer, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (got <= 0) {
      if (pending) {
        Refuse(client, "it closed the connection before joining");
      } else {
        silence_.Watch(client.rank, false, MonotonicMs());
        client.left = true;
        std::lock_guard lock(state_mutex_);
        ranks_[static_cast<std::size_t>(client.rank)].disconnected = true;
        state_changed_.notify_all();
      }
      return false;
    }
    if (client.joined) silence_.Heard(client.rank, MonotonicMs());
    std::size_t used = 0;
    if (client.handshake.state() == Handshake::State::kRunning) {
      used = client.handshake.Feed(buffer, static_cast<std::size_t>(got));
      if (!SendAll(client, client.handshake.TakeOutput())) return false;
      if (client.handshake.state() == Handshake::State::kFailed) {
        Refuse(client, client.handshake.error());
        return false;
      }
    }
    client.input.append(reinterpret_cast<const char*>(buffer) + used,
                        static_cast<std::size_t>(got) - used);
    if (client.handshake.state() != Handshake::State::kDone) return true;
    return ConsumeFrames(client);
  }

  // Handles every whole frame in client.input: first a join, later a leave.
  bool ConsumeFrames(Client& client) {
    while (client.input.size() >= kFrameHeaderSize) {
      std::string error;
      auto header =
          DecodeFrameHeader(reinterpret_cast<const std::uint8_t*>(client.input.data()), &error);
      if (!header || header->payload_length != 0) {
        Refuse(client, header ? "it sent a payload on the rendezvous connection" : error);
        return false;
      }
      std::size_t size = kFrameHeaderSize + header->body_length;
      if (client.input.size() < size) return true;
      std::string body = client.input.substr(kFrameHeaderSize, header->body_length);
      client.input.erase(0, size);
      if (!client.joined) {
        if (header->type != MessageType::kJoin) {
          Refuse(client, "it sent no join request");
          return false;
        }
        if (!Join(client, body)) return false;
      } else if (header->type == MessageType::kLeave) {
        // A node that ends in order may fall silent before its connection closes.
        silence_.Watch(client.rank, false, MonotonicMs());
        std::lock_guard lock(state_mutex_);
        ranks_[static_cast<std::size_t>(client.rank)].left = true;
      }
    }
    return true;
  }

  bool Join(Client& client, const std::string& body) {
    wire::Join join;
    if (!join.ParseFromString(body)) {
      Refuse(client, "its join request does not parse");
      return false;
    }
    int rank = client.handshake.peer_id();
    if (rank < 0 || rank >= size_ || join.node().rank() != rank) {
      Refuse(client,
             "it claims rank " + std::to_string(rank) + " in a job of " + std::to_string(size_));
      return false;
    }
    if (nodes_[static_cast<std::size_t>(rank)]) {
      Refuse(client, "rank " + std::to_string(rank) + " has already joined");
      return false;
    }
    client.joined = true;
    client.rank = rank;
    nodes_[static_cast<std::size_t>(rank)] = join.node();
    {
      std::lock_guard lock(state_mutex_);
      ranks_[static_cast<std::size_t>(rank)].joined = true;
      state_changed_.notify_all();
    }
    if (SendFailureIfAny()) return true;
    if (++joined_ == size_) SendJobTable();
    return true;
  }

  // Once a rank ended without joining, the job cannot start: every node that joined, or joins
  // later, hears why. Returns whether that happened.
  bool SendFailureIfAny() {
    std::string failure;
    {
      std::lock_guard lock(state_mutex_);
      failure = failure_;
    }
    if (failure.empty()) return false;
    wire::ErrorReply error;
    error.set_code(LMDX_ERR_BOOTSTRAP);
    error.set_message(failure);
    for (Client& client : clients_) {
      if (client.joined && !client.told_failure) {
        SendFrame(client, MessageType::kError, error.SerializeAsString());
        client.told_failure = true;
      }
    }
    return true;
  }

  void SendFrame(Client& client, MessageType type, const std::string& body) {
    FrameHeader header;
    header.type = type;
    header.source = Handshake::kRendezvousId;
    header.destination = client.rank;
    try {
      internal::SetNonBlocking(client.fd.get(), false);
      internal::WriteControlFrame(client.fd.get(), header, body);
      internal::SetNonBlocking(client.fd.get(), true);
    } catch (const Error& error) {
      // The node closed its end: it ended, or is ending in order and its goodbye is still
      // unread. The next round reads the close and judges it, with the process's exit status;
      // a line per node here would bury a job of a thousand nodes' own output.
      DebugLine("rendezvous: cannot send to rank " + std::to_string(client.rank) + ": " +
                error.what());
    }
  }

  void SendJobTable() {
    {
      std::lock_guard lock(state_mutex_);
      table_sent_ = true;
    }
    wire::JobTable table;
    for (const auto& node : nodes_) *table.add_nodes() = *node;
    crowding::Learn(table);
    std::string body = table.SerializeAsString();
    for (Client& client : clients_) {
      if (client.joined) SendFrame(client, MessageType::kJobTable, body);
    }
    const std::int64_t now = MonotonicMs();
    for (int rank = 0; rank < size_; ++rank) silence_.Watch(rank, true, now);
    next_tick_ms_ = now + heartbeat_.period_ms;
  }

  JobSecret secret_;
  int size_;
  Fd listener_;
  Fd stop_fd_;
  std::string address_;
  std::vector<Client> clients_;
  std::vector<std::optional<wire::NodeInfo>> nodes_;
  int joined_ = 0;
  std::atomic<bool> stopping_{false};
  HeartbeatSettings heartbeat_;
  SilenceWatch silence_;  // by rank
  std::int64_t next_tick_ms_ = 0;
  bool hang_reported_ = false;

  // Shared with the launcher's thread.
  struct RankState {
    bool joined = false;
    bool left = false;
    bool disconnected = false;
  };
  std::mutex state_mutex_;
  std::condition_variable state_changed_;
  std::vector<RankState> ranks_;
  bool table_sent_ = false;
  std::string failure_;  // why the job cannot start, once a rank ended before joining
  LogLimiter refusals_{"refused rendezvous connections"};

  std::thread thread_;
};

}  // namespace

std::unique_ptr<RendezvousServer> RendezvousServer::Start(const JobSecret& secret, int job_size,
                                                          const std::string& bind_host) {
  if (job_size < 1) throw Error(LMDX_ERR_INVALID_ARGUMENT, "a job needs at least one node");
  return std::make_unique<PollingRendezvousServer>(secret, job_size, bind_host);
}

}  // namespace lmdx::net

#include "net/node.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "net/crowding.h"
#include "net/fabric/fabric_transport.h"
#include "net/handshake.h"
#include "net/internal/frame_io.h"
#include "net/internal/node_helpers.h"
#include "net/internal/payload_buffer.h"
#include "net/internal/socket.h"
#include "net/shm/shm_transport.h"
#include "net/tcp/tcp_transport.h"
#include "net/udp/udp_transport.h"
#include "net/wire.pb.h"

namespace lmdx::net {
namespace {

using internal::AddAsDispatcher;
using internal::NetworkIndex;
using internal::Rank;

constexpr int kRendezvousTimeoutMs = 10000;

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// Passes every call on to the node, counting the frames each source delivered over one network.
class CountingHost : public TransportHost {
 public:
  CountingHost(TransportHost& node, int size) : node_(node), received_(size) {}
  std::uint8_t* PlacePayload(const FrameHeader& header, const std::string& body) override {
    return node_.PlacePayload(header, body);
  }
  bool MayPlaceLater(const FrameHeader& header) override { return node_.MayPlaceLater(header); }
  void WakeOnNextReceive() override { node_.WakeOnNextReceive(); }
  void OnMessage(InboundMessage&& message) override {
    CountFrom(message.header.source);
    node_.OnMessage(std::move(message));
  }
  void OnRawMessage(const SmallRaw& raw) override {
    CountFrom(raw.source);
    node_.OnRawMessage(raw);
  }
  bool TakeRawForThisThread(const SmallRaw& raw) override {
    if (!node_.TakeRawForThisThread(raw)) return false;
    CountFrom(raw.source);
    return true;
  }
  void OnPeerLost(int rank, const std::string& why) override { node_.OnPeerLost(rank, why); }
  std::vector<std::uint64_t> Received() const {
    std::vector<std::uint64_t> counts;
    for (const auto& count : received_) counts.push_back(count.load(std::memory_order_relaxed));
    return counts;
  }

 private:
  void CountFrom(int source) {
    if (source >= 0 && source < static_cast<int>(received_.size())) {
      AddAsDispatcher(received_[static_cast<std::size_t>(source)], 1);
    }
  }

  TransportHost& node_;
  std::vector<std::atomic<std::uint64_t>> received_;
};

}  // namespace

Node::Node(const BootstrapInfo& info, const Setup& before_join)
    : info_(info),
      raw_sequence_(std::make_unique<std::atomic<std::uint64_t>[]>(
          static_cast<std::size_t>(std::max(info.size, 1)))),
      lost_(static_cast<std::size_t>(info.size)) {
  SetLogRank(info_.rank);
  // Read first: a value it does not understand stops this node before any peer waits for it.
  HangWatch::Options watch_options = HangWatch::Options::FromEnvironment();
  engine_.Start();
  Completion::SetDriver(&engine_);
  // Until the job table says where the nodes run, the worst case: all of them on this host.
  crowding::AssumeAllHere(info_.size);
  StartTransports();
  RegisterBuiltinHandlers();
  // The progress thread polls every transport once it has run the (empty) task.
  mailbox_.SetPostedHook([this] { engine_.LookAgainForThisWait(); });
  if (before_join) before_join(*this);
  JoinThroughRendezvous();
  if (info_.rank == 0) {
    hang_watch_ = std::make_unique<HangWatch>(*this, watch_options);
  } else {
    IgnoreSigquitUnlessHandled();
  }
}

Node::~Node() {
  Stop();
  hang_watch_.reset();
  Completion::SetDriver(nullptr);
}

std::vector<std::uint64_t> Node::Network::Received() const {
  return static_cast<const CountingHost&>(*counter).Received();
}

// Every network this node can offer, best first. A network no pair may use is not started.
void Node::StartTransports() {
  policy_ = TransportPolicy::FromEnvironment();
  bool shm_wanted = info_.size > 1 && policy_.job != "tcp";
  for (const auto& [pair, network] : policy_.pairs) shm_wanted |= network == "shm";
  auto add = [this](auto make) {
    Network network;
    network.counter = std::make_unique<CountingHost>(*this, info_.size);
    network.transport = make(*network.counter);
    networks_.push_back(std::move(network));
  };
  // A network this host cannot offer is left out (its pairs take another); a bad setting for it
  // is the user's to fix, and ends the start.
  auto add_if_possible = [&add](const char* what, auto make) {
    try {
      add(make);
    } catch (const Error& error) {
      if (error.code() == LMDX_ERR_INVALID_ARGUMENT) throw;
      DebugLine(std::string("no ") + what + " transport: " + error.what());
    }
  };
  if (shm_wanted) {
    add_if_possible("shared-memory", [this](TransportHost& host) {
      return std::make_unique<ShmTransport>(engine_, host, info_.secret, info_.rank, info_.size,
                                            info_.job_id);
    });
  }
  // UCX costs start-up time and threads of its own, so fabric starts only where it was asked for
  // (docs/decisions.md); a node that cannot start it goes on without (its pairs fall back).
  bool fabric_wanted = info_.size > 1 && policy_.job == "fabric";
  for (const auto& [pair, network] : policy_.pairs) fabric_wanted |= network == "fabric";
  if (fabric_wanted) {
    try {
      add([this](TransportHost& host) {
        // A node bound to loopback (how both bootstraps start a job on one host) meets its peers
        // here; elsewhere UCX's own socket sizing stays.
        return std::make_unique<FabricTransport>(engine_, host, info_.secret, info_.rank,
                                                 info_.size,
                                                 internal::IsLoopbackHost(info_.bind_host));
      });
    } catch (const Error& error) {
      LogLine(std::string("going without the fabric transport: ") + error.what());
    }
  }
  add([this](TransportHost& host) {
    return std::make_unique<TcpTransport>(engine_, host, info_.secret, info_.rank, info_.size,
                                          info_.bind_host);
  });
  // udp is last in the preference, so a pair takes it only when the user asks (for the job, the
  // pair or one frame's network hint); it costs a socket and no thread, so it is always offered.
  if (info_.size > 1) {
    add_if_possible("udp", [this](TransportHost& host) {
      return std::make_unique<UdpTransport>(engine_, host, info_.secret, info_.rank, info_.size,
                                            info_.bind_host);
    });
  }
}

// Each peer gets the best network both nodes have (net/transport_choice.h), or the one the user
// forced when the pair shares it. Both nodes of a pair reach the same answer from the same table.
void Node::ChooseNetworks() {
  route_.assign(static_cast<std::size_t>(info_.size), nullptr);
  shared_routes_.assign(static_cast<std::size_t>(info_.size), {});
  bool all_polled = info_.size > 1;
  bool any_udp = false;
  for (int peer = 0; peer < info_.size; ++peer) {
    if (peer == info_.rank) continue;
    PairChoice choice = ChooseNetwork(job_table_, info_.rank, peer, policy_);
    if (!choice.fell_back.empty()) {
      LogLine(choice.fell_back + " was asked for ranks " + std::to_string(info_.rank) + " and " +
              std::to_string(peer) + ", which do not share it; they use " +
              (choice.network.empty() ? "nothing" : choice.network));
    }
    for (const Network& network : networks_) {
      if (choice.network == network.transport->name()) {
        route_[static_cast<std::size_t>(peer)] = network.transport.get();
      }
    }
    if (route_[static_cast<std::size_t>(peer)] == nullptr) {
      throw Error(LMDX_ERR_NETWORK, "this node shares no network with " + Rank(peer));
    }
    all_polled &= choice.network == "shm" || choice.network == "fabric";
    any_udp |= choice.network == "udp";
    // A frame may take another network the pair shares when its sender asks (a network hint):
    // the node keeps that network's connection to the peer beside the pair's own.
    for (const std::string& name :
         SharedNetworks(job_table_.nodes(info_.rank), job_table_.nodes(peer))) {
      for (const Network& network : networks_) {
        if (name != network.transport->name()) continue;
        shared_routes_[static_cast<std::size_t>(peer)]
                      [static_cast<std::size_t>(NetworkIndex(name))] = network.transport.get();
      }
    }
  }
  // With every peer on rings, a waiting thread polls the rings alone, with no system call.
  engine_.SetDrivePollersOnly(all_polled);
  engine_.SetLargeTransfersStayLazy(any_udp);
  std::vector<EarlyFrame> early;
  {
    std::lock_guard lock(early_mutex_);
    routes_ready_.store(true, std::memory_order_release);
    early.swap(early_frames_);
  }
  for (EarlyFrame& frame : early) {
    Transport* transport = frame.network == kPairNetwork
                               ? route_[static_cast<std::size_t>(frame.dest)]
                               : HintedRoute(frame.dest, frame.network);
    transport->Send(frame.dest, std::move(frame.message), /*may_block=*/!engine_.InDispatch());
  }
  const char* show = std::getenv("LMDX_SHOW_TRANSPORTS");
  if (info_.rank == 0 && show != nullptr && std::string(show) == "1") {
    std::string matrix = TransportMatrix(job_table_, policy_);
    [[maybe_unused]] ssize_t n = ::write(STDOUT_FILENO, matrix.data(), matrix.size());
  }
}

std::string Node::NetworkTo(int rank) const {
  if (rank == info_.rank) return "self";
  if (rank < 0 || rank >= info_.size || route_.empty()) return "";
  Transport* transport = route_[static_cast<std::size_t>(rank)];
  return transport != nullptr ? transport->name() : "";
}

std::string Node::TrafficSummary() const {
  std::string text = "frames received:";
  for (const Network& network : networks_) {
    std::vector<std::uint64_t> counts = network.Received();
    for (std::size_t rank = 0; rank < counts.size(); ++rank) {
      if (counts[rank] == 0) continue;
      text += " from " + std::to_string(rank) + " over " + network.transport->name() + " " +
              std::to_string(counts[rank]) + ";";
    }
  }
  std::uint64_t fell_back = hint_fallbacks();
  if (fell_back > 0) text += " network hints that fell back: " + std::to_string(fell_back) + ";";
  return text;
}

void Node::JoinThroughRendezvous() {
  std::string where = "the rendezvous at " + info_.rendezvous + " (" + info_.launcher + ")";
  try {
    rendezvous_fd_ = internal::ConnectTcpBlocking(internal::ParseHostPort(info_.rendezvous),
                                                  kRendezvousTimeoutMs);
    Handshake handshake = Handshake::AsClient(info_.secret, info_.rank, Handshake::kRendezvousId);
    internal::RunClientHandshake(rendezvous_fd_.get(), handshake, where, kRendezvousTimeoutMs);

    wire::Join join;
    wire::NodeInfo* self = join.mutable_node();
    self->set_rank(info_.rank);
    self->set_pid(static_cast<int>(::getpid()));
    self->set_host(HostName());
    for (const Network& network : networks_) {
      *self->add_endpoints() = network.transport->LocalEndpoint();
    }
    FrameHeader header;
    header.type = MessageType::kJoin;
    header.source = info_.rank;
    header.destination = Handshake::kRendezvousId;
    internal::WriteControlFrame(rendezvous_fd_.get(), header, join.SerializeAsString());

    // The table comes once every node has joined, however long the others take to start.
    auto frame = internal::ReadControlFrame(rendezvous_fd_.get(), -1);
    if (!frame) throw Error(LMDX_ERR_BOOTSTRAP, where + " closed before every node had joined");
    if (frame->first.type == MessageType::kError) {
      wire::ErrorReply error;
      error.ParseFromString(frame->second);
      throw Error(LMDX_ERR_BOOTSTRAP, "the job cannot start: " + error.message());
    }
    wire::JobTable table;
    if (frame->first.type != MessageType::kJobTable || !table.ParseFromString(frame->second) ||
        table.nodes_size() != info_.size) {
      throw Error(LMDX_ERR_BOOTSTRAP, where + " sent no valid job table");
    }
    // Before the transports see the table: their deadlines for peers follow the crowd.
    crowding::Learn(table);
    for (const Network& network : networks_) network.transport->SetJobTable(table);
    job_table_ = std::move(table);
    ChooseNetworks();
    ChooseDriveBudget();
  } catch (const Error& error) {
    Stop();
    throw Error(LMDX_ERR_BOOTSTRAP, std::string("cannot join the job: ") + error.what());
  }
  rendezvous_link_ = std::make_unique<RendezvousLink>(
      engine_, std::move(rendezvous_fd_), info_,
      [this] { return ending() || stopped_.load(std::memory_order_acquire); });
  rendezvous_link_->Start();
}

// Waiting threads poll the network briefly (net/completion.h) only while this host has a core
// for each of its nodes: with more nodes than cores, the poll would hold the core that the node
// it waits for needs, and the wait would only get longer.
void Node::ChooseDriveBudget() {
  const std::string& host = job_table_.nodes(info_.rank).host();
  long nodes_here = 0;
  for (const wire::NodeInfo& node : job_table_.nodes()) nodes_here += node.host() == host ? 1 : 0;
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  bool oversubscribed = cores > 0 && nodes_here > cores;
  engine_.SetDriveBudget(oversubscribed ? 0 : ProgressEngine::kDefaultDriveMicros);
  DebugLine(std::to_string(nodes_here) + " nodes on " + std::to_string(cores) +
            " cores: waiting threads " + (oversubscribed ? "sleep at once" : "poll briefly"));
}

void Node::AnnounceLeaving(std::optional<int> status) {
  if (rendezvous_link_) rendezvous_link_->AnnounceLeaving(status);
}

void Node::RegisterBuiltinHandlers() {
  HangWatch::RegisterHandler(*this);
  Handle(MessageType::kShutdown, [this](InboundMessage& message, const ReplyTo* reply_to) {
    wire::Shutdown shutdown;
    shutdown.ParseFromString(message.body);
    ending_.store(true, std::memory_order_release);
    shutdown_status_.store(shutdown.status());
    if (reply_to == nullptr) {
      shutdown_received_.Signal();
      return;
    }
    // Exit only once rank 0 has its answer in its socket.
    Reply(*reply_to, {}, {}, [this](bool) { shutdown_received_.Signal(); });
  });
  Handle(MessageType::kFinalize, [this](InboundMessage&, const ReplyTo* reply_to) {
    if (reply_to == nullptr) return;
    std::vector<ReplyTo> release;
    {
      std::lock_guard lock(finalize_mutex_);
      finalize_arrivals_.push_back(*reply_to);
      if (static_cast<int>(finalize_arrivals_.size()) < info_.size) return;
      release.swap(finalize_arrivals_);
    }
    ending_.store(true, std::memory_order_release);
    for (const ReplyTo& to : release) Reply(to, {});
  });
  Handle(MessageType::kPing, [this](InboundMessage& message, const ReplyTo* reply_to) {
    if (reply_to == nullptr) return;
    Payload echo;
    if (message.header.payload_length > 0) {
      auto copy = std::make_shared<std::string>(reinterpret_cast<const char*>(message.payload),
                                                message.header.payload_length);
      echo = Payload{copy->data(), copy->size(), copy};
    }
    Reply(*reply_to, message.body, echo);
  });
}

void Node::Handle(MessageType type, Handler handler) {
  std::lock_guard lock(handlers_mutex_);
  handlers_[static_cast<std::size_t>(type)] = std::move(handler);
}

void Node::Place(MessageType type, Placer placer) {
  std::lock_guard lock(handlers_mutex_);
  placers_[static_cast<std::size_t>(type)] = std::move(placer);
}

void Node::SetPeerLostHook(PeerLostHook hook) {
  std::lock_guard lock(hook_mutex_);
  peer_lost_hook_ = std::move(hook);
}

void Node::AddPeerLostObserver(PeerLostHook observer) {
  std::lock_guard lock(hook_mutex_);
  peer_lost_observers_.push_back(std::move(observer));
}

void Node::FailRequests(MessageType first, MessageType last, lmdx_error code,
                        const std::string& why) {
  std::vector<PendingRequest*> failed;
  {
    std::lock_guard lock(requests_mutex_);
    for (auto it = requests_.begin(); it != requests_.end();) {
      MessageType type = it->second->type;
      if (type < first || type > last) {
        ++it;
        continue;
      }
      failed.push_back(it->second);
      it = requests_.erase(it);
    }
  }
  for (PendingRequest* pending : failed) {
    pending->error = code;
    pending->error_text = why;
    pending->done.Signal();
  }
}

void Node::OnPeerLost(int rank, const std::string& why) {
  std::string text = Rank(rank) + " was lost (" + why + ")";
  // A pair may hold connections on several networks (a hint, or two connections opened at once):
  // the peer is lost once, whichever of them closes first.
  bool known = false;
  if (rank >= 0 && rank < info_.size) {
    std::lock_guard lock(lost_mutex_);
    known = lost_[static_cast<std::size_t>(rank)];
    lost_[static_cast<std::size_t>(rank)] = true;
  }
  // Before any receive fails: another network of the pair may be reading a payload into one.
  if (!known) {
    for (const Network& network : networks_) network.transport->DropPeer(rank, why);
  }
  std::vector<PendingRequest*> failed;
  {
    std::lock_guard lock(requests_mutex_);
    for (auto it = requests_.begin(); it != requests_.end();) {
      if (it->second->dest != rank) {
        ++it;
        continue;
      }
      failed.push_back(it->second);
      it = requests_.erase(it);
    }
  }
  for (PendingRequest* pending : failed) {
    pending->error = LMDX_ERR_PEER_LOST;
    pending->error_text = text;
    pending->done.Signal();
  }
  mailbox_.FailSource(rank, text);
  {
    std::lock_guard lock(lost_mutex_);
    lost_changed_.notify_all();  // woken once what waited on rank has failed
  }
  if (known || ending() || stopped_.load()) return;
  PeerLostHook hook;
  std::vector<PeerLostHook> observers;
  {
    std::lock_guard lock(hook_mutex_);
    hook = peer_lost_hook_;
    observers = peer_lost_observers_;
  }
  for (const PeerLostHook& observer : observers) observer(rank, text);
  if (hook) {
    hook(rank, text);
    return;
  }
  LogLine(text + "; the job cannot go on");
  ::_exit(1);
}

int Node::ServeUntilShutdown() {
  shutdown_received_.Wait();
  return shutdown_status_.load();
}

bool Node::WaitUntilPeerGone(int rank, std::chrono::milliseconds timeout) {
  std::unique_lock lock(lost_mutex_);
  return lost_changed_.wait_for(
      lock, timeout, [&] { return static_cast<bool>(lost_[static_cast<std::size_t>(rank)]); });
}

void Node::EndJob(int status) {
  ending_.store(true, std::memory_order_release);
  wire::Shutdown shutdown;
  shutdown.set_status(status);
  std::string body = shutdown.SerializeAsString();
  for (int rank = 0; rank < info_.size; ++rank) {
    if (rank == info_.rank) continue;
    try {
      Request(rank, MessageType::kShutdown, body);
    } catch (const Error& error) {
      DebugLine(std::string("shutdown: ") + error.what());
    }
  }
  AnnounceLeaving(status);
  Stop();
}

void Node::AwaitFinalize() {
  // From here on a peer that closes its connections has finished too; a rank that dies instead
  // still fails this request, since rank 0 answers only when all have arrived.
  ending_.store(true, std::memory_order_release);
  Request(0, MessageType::kFinalize, {});
}

void Node::Finalize() {
  if (info_.rank == 0) {
    // Rank 0 answered every rank's finalize request, and an answer may still wait in a send
    // queue that stopping would drop (the rank would then see rank 0 lost). Every other rank
    // leaves once its answer arrives, so rank 0 waits for their connections to close, briefly.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (int rank = 1; rank < info_.size; ++rank) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      WaitUntilPeerGone(rank, left);
    }
  }
  AnnounceLeaving(std::nullopt);
  Stop();
}

void Node::Stop() {
  if (stopped_.exchange(true)) return;
  if (hang_watch_) hang_watch_->Stop();
  Completion::SetDriver(nullptr);
  ending_.store(true, std::memory_order_release);
  const char* stats = std::getenv("LMDX_TRANSPORT_STATS");
  if (stats != nullptr && std::string(stats) == "1") LogLine(TrafficSummary());
  for (const Network& network : networks_) network.transport->Close();
  engine_.Stop();
}

}  // namespace lmdx::net

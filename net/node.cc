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
#include "net/fabric_transport.h"
#include "net/handshake.h"
#include "net/internal/frame_io.h"
#include "net/internal/payload_buffer.h"
#include "net/internal/socket.h"
#include "net/shm_transport.h"
#include "net/tcp_transport.h"
#include "net/udp_transport.h"
#include "net/wire.pb.h"

namespace lmdx::net {
namespace {

constexpr int kRendezvousTimeoutMs = 10000;

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string Rank(int rank) { return "rank " + std::to_string(rank); }

// The index of network in kNetworkPreference, or -1.
int NetworkIndex(std::string_view network) {
  for (std::size_t i = 0; i < kNetworkPreference.size(); ++i) {
    if (kNetworkPreference[i] == network) return static_cast<int>(i);
  }
  return -1;
}

// Adds to a counter only the dispatching thread writes: frames are delivered by one thread at a
// time (the progress engine's dispatch lock), so a plain load and store do; an atomic addition,
// a locked instruction, was three of them on every received message's path. Readers still see
// whole values.
void AddAsDispatcher(std::atomic<std::uint64_t>& counter, std::uint64_t amount) {
  counter.store(counter.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
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

void Node::Send(int dest, MessageType type, std::string body, Payload payload) {
  OutgoingMessage message;
  message.header.type = type;
  message.body = std::move(body);
  message.payload = std::move(payload);
  SendBlocking(dest, std::move(message), kPairNetwork);
}

int Node::RawNetworkIndex(int dest, std::string_view network) const {
  if (dest < 0 || dest >= info_.size) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "there is no rank " + std::to_string(dest) +
                                               " in a job of " + std::to_string(info_.size));
  }
  if (network.empty() || dest == info_.rank) return kPairNetwork;
  int index = NetworkIndex(network);
  if (index < 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                "there is no network called \"" + std::string(network) + "\"");
  }
  return index;
}

void Node::SendRaw(int dest, std::int32_t tag, Payload payload, std::string_view network) {
  int index = RawNetworkIndex(dest, network);
  RawBody raw;
  raw.tag = tag;
  raw.sequence =
      raw_sequence_[static_cast<std::size_t>(dest)].fetch_add(1, std::memory_order_relaxed);
  if (payload.size <= SmallRaw::kMaxPayload) {
    Transport* transport = ReadyRoute(dest, index);
    SmallRaw small{
        info_.rank,  dest, tag, raw.sequence, static_cast<const std::uint8_t*>(payload.data),
        payload.size};
    if (transport != nullptr && transport->SendRawNow(small)) {
      CountSent(MessageType::kRaw, RawBody::kSize + payload.size);
      return;
    }
  }
  OutgoingMessage message;
  message.header.type = MessageType::kRaw;
  message.body = raw.Encode();
  message.payload = std::move(payload);
  SendBlocking(dest, std::move(message), index);
}

void Node::SendRawAsync(int dest, std::int32_t tag, Payload payload, std::string_view network,
                        std::function<void(bool)> on_sent) {
  int index = RawNetworkIndex(dest, network);
  RawBody raw;
  raw.tag = tag;
  raw.sequence =
      raw_sequence_[static_cast<std::size_t>(dest)].fetch_add(1, std::memory_order_relaxed);
  if (payload.size <= SmallRaw::kMaxPayload) {
    Transport* transport = ReadyRoute(dest, index);
    SmallRaw small{
        info_.rank,  dest, tag, raw.sequence, static_cast<const std::uint8_t*>(payload.data),
        payload.size};
    if (transport != nullptr && transport->SendRawNow(small)) {
      CountSent(MessageType::kRaw, RawBody::kSize + payload.size);
      on_sent(true);
      return;
    }
  }
  OutgoingMessage message;
  message.header.type = MessageType::kRaw;
  message.body = raw.Encode();
  message.payload = std::move(payload);
  message.on_sent = std::move(on_sent);
  SendFrame(dest, std::move(message), index, /*may_block=*/false);
}

void Node::SendAsync(int dest, MessageType type, std::string body, Payload payload,
                     std::function<void(bool)> on_sent) {
  OutgoingMessage message;
  message.header.type = type;
  message.body = std::move(body);
  message.payload = std::move(payload);
  message.on_sent = std::move(on_sent);
  SendFrame(dest, std::move(message), kPairNetwork, /*may_block=*/false);
}

// A hint for a network the pair does not share falls back to the pair's own, counted.
Transport* Node::HintedRoute(int dest, int network) {
  auto peer = static_cast<std::size_t>(dest);
  Transport* hinted = shared_routes_[peer][static_cast<std::size_t>(network)];
  if (hinted != nullptr) return hinted;
  hint_fallbacks_.fetch_add(1, std::memory_order_relaxed);
  if (DebugEnabled()) {
    DebugLine(std::string(kNetworkPreference[static_cast<std::size_t>(network)]) +
              " was hinted for a message to " + Rank(dest) + ", which does not share it; it took " +
              route_[peer]->name());
  }
  return route_[peer];
}

// Sends message; a borrowed payload is the caller's memory: returns once the kernel has it.
void Node::SendBlocking(int dest, OutgoingMessage&& message, int network) {
  bool borrowed = message.payload.size > 0 && !message.payload.owner;
  if (!borrowed || dest == info_.rank) {
    SendFrame(dest, std::move(message), network);
    return;
  }
  if (engine_.InDispatch()) {
    throw Error(LMDX_ERR_INTERNAL, "the progress thread may only send payloads it owns");
  }
  if (SendNow(dest, message, network)) return;
  // The payload is the caller's memory: wait until the kernel has it.
  message.sender_polls = engine_.ThisThreadWillPoll();
  Completion sent;
  // A raw message's sender is in a conversation: it is likely to wait again within
  // microseconds (for the answer), as a receiver is (Completion::SetWaitsInBursts).
  if (message.header.type == MessageType::kRaw) sent.SetWaitsInBursts();
  sent.SetBytesMoved(message.payload.size);
  bool ok = false;
  message.on_sent = [&sent, &ok](bool result) {
    ok = result;
    sent.Signal();
  };
  SendFrame(dest, std::move(message), network);
  sent.Wait();
  if (!ok) throw Error(LMDX_ERR_PEER_LOST, Rank(dest) + " is gone; the message was not sent");
}

Transport* Node::ReadyRoute(int dest, int network) {
  if (dest < 0 || dest >= info_.size || dest == info_.rank ||
      stopped_.load(std::memory_order_acquire) || !routes_ready_.load(std::memory_order_acquire)) {
    return nullptr;
  }
  auto peer = static_cast<std::size_t>(dest);
  return network == kPairNetwork ? route_[peer]
                                 : shared_routes_[peer][static_cast<std::size_t>(network)];
}

// The frame goes out within this call when the pair's network can take all of it at once
// (Transport::SendNow); anything unusual (a bad rank, routes not known yet, a hint for a network
// the pair lacks) is left to SendFrame, which counts the hint's fallback.
bool Node::SendNow(int dest, OutgoingMessage& message, int network) {
  Transport* transport = ReadyRoute(dest, network);
  if (transport == nullptr) return false;
  message.header.destination = dest;
  message.header.source = info_.rank;
  if (!transport->SendNow(dest, message)) return false;
  CountSent(message);
  return true;
}

void Node::CountSent(const OutgoingMessage& message) {
  CountSent(message.header.type, message.body.size() + message.payload.size);
}

void Node::CountSent(MessageType type, std::uint64_t bytes) {
  TypeCounters& counters = type_counters_[static_cast<std::size_t>(type)];
  counters.sent_frames.fetch_add(1, std::memory_order_relaxed);
  counters.sent_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void Node::SendFrame(int dest, OutgoingMessage message, int network, bool may_block) {
  if (dest < 0 || dest >= info_.size) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "there is no rank " + std::to_string(dest) +
                                               " in a job of " + std::to_string(info_.size));
  }
  if (stopped_.load(std::memory_order_acquire)) {
    throw Error(LMDX_ERR_SHUTDOWN, "the node has stopped; nothing more can be sent");
  }
  message.header.destination = dest;
  message.header.source = info_.rank;
  CountSent(message);
  if (dest == info_.rank) {
    DeliverToSelf(std::move(message));
    return;
  }
  if (!routes_ready_.load(std::memory_order_acquire)) {
    // A peer that already has the job table may ask this node something (a sync request) before
    // this node's table has come: the answer waits until this node knows the pair's network.
    std::lock_guard lock(early_mutex_);
    if (!routes_ready_.load(std::memory_order_relaxed)) {
      early_frames_.push_back(EarlyFrame{dest, network, std::move(message)});
      return;
    }
  }
  Transport* transport = route_[static_cast<std::size_t>(dest)];
  if (network != kPairNetwork) [[unlikely]] {
    transport = HintedRoute(dest, network);
  }
  transport->Send(dest, std::move(message), may_block && !engine_.InDispatch());
}

// A frame to this node skips the network but still reaches its handler on the progress thread,
// so handlers see one order of events whoever sent the frame.
void Node::DeliverToSelf(OutgoingMessage message) {
  auto inbound = std::make_shared<InboundMessage>();
  inbound->header = message.header;
  inbound->header.body_length = static_cast<std::uint32_t>(message.body.size());
  inbound->header.payload_length = message.payload.size;
  inbound->body = std::move(message.body);
  if (message.payload.size > 0) {
    inbound->owned_payload = internal::AllocatePayload(message.payload.size);
    std::memcpy(inbound->owned_payload.get(), message.payload.data, message.payload.size);
    inbound->payload = inbound->owned_payload.get();
  }
  engine_.Post([this, inbound] { OnMessage(std::move(*inbound)); });
  if (message.on_sent) message.on_sent(true);
}

InboundMessage Node::Request(int dest, MessageType type, std::string body, Payload payload,
                             std::uint8_t* reply_buffer, std::size_t reply_capacity) {
  auto pending =
      StartRequest(dest, type, std::move(body), std::move(payload), reply_buffer, reply_capacity);
  return Await(*pending);
}

std::unique_ptr<Node::PendingRequest> Node::StartRequest(int dest, MessageType type,
                                                         std::string body, Payload payload,
                                                         std::uint8_t* reply_buffer,
                                                         std::size_t reply_capacity) {
  auto pending = std::make_unique<PendingRequest>();
  std::uint64_t id = next_request_id_.fetch_add(1, std::memory_order_relaxed);
  pending->id = id;
  pending->dest = dest;
  pending->type = type;
  pending->reply_buffer = reply_buffer;
  pending->reply_capacity = reply_capacity;
  {
    std::lock_guard lock(requests_mutex_);
    requests_[id] = pending.get();
  }
  auto fail = [this, id](lmdx_error code, const std::string& text) {
    PendingRequest* found = nullptr;
    {
      std::lock_guard lock(requests_mutex_);
      auto it = requests_.find(id);
      if (it == requests_.end()) return;
      found = it->second;
      requests_.erase(it);
    }
    found->error = code;
    found->error_text = text;
    found->done.Signal();
  };
  OutgoingMessage message;
  message.header.type = type;
  message.header.request_id = id;
  message.body = std::move(body);
  message.payload = std::move(payload);
  // Only the id is captured: the reply may come, and this frame be gone, before on_sent runs.
  message.on_sent = [fail, dest](bool sent) {
    if (!sent) fail(LMDX_ERR_PEER_LOST, Rank(dest) + " is gone; the request was not sent");
  };
  try {
    SendFrame(dest, std::move(message));
  } catch (const Error& error) {
    fail(error.code(), error.what());
  }
  return pending;
}

std::optional<InboundMessage> Node::RequestUnlessInterrupted(int dest, MessageType type,
                                                             std::string body,
                                                             LateReply on_late_reply,
                                                             const WaitReason* reason) {
  auto pending = StartRequest(dest, type, std::move(body));
  WaitReason reply{"a reply to", MessageTypeName(type), dest};
  if (!pending->done.WaitUnlessInterrupted(reason != nullptr ? reason : &reply)) {
    {
      std::lock_guard lock(requests_mutex_);
      if (requests_.erase(pending->id) != 0) {
        late_replies_[pending->id] = std::move(on_late_reply);
        return std::nullopt;
      }
    }
    // The reply is being delivered right now: it is the caller's after all.
  }
  return Await(*pending);
}

InboundMessage Node::Await(PendingRequest& pending) {
  WaitReason reason{"a reply to", MessageTypeName(pending.type), pending.dest};
  pending.done.Wait(&reason);
  if (pending.error != LMDX_OK) throw Error(pending.error, pending.error_text);
  if (pending.reply.header.flags & kFlagError) {
    wire::ErrorReply error;
    error.ParseFromString(pending.reply.body);
    throw Error(static_cast<lmdx_error>(error.code()), error.message());
  }
  return std::move(pending.reply);
}

void Node::Reply(const ReplyTo& to, std::string body, Payload payload,
                 std::function<void(bool)> on_sent) {
  OutgoingMessage message;
  message.header.type = to.type;
  message.header.flags = kFlagReply;
  message.header.request_id = to.request_id;
  message.body = std::move(body);
  message.payload = std::move(payload);
  message.on_sent = std::move(on_sent);
  SendFrame(to.dest, std::move(message));
}

void Node::ReplyError(const ReplyTo& to, lmdx_error code, const std::string& text) {
  wire::ErrorReply error;
  error.set_code(code);
  error.set_message(text);
  OutgoingMessage message;
  message.header.type = to.type;
  message.header.flags = kFlagReply | kFlagError;
  message.header.request_id = to.request_id;
  message.body = error.SerializeAsString();
  SendFrame(to.dest, std::move(message));
}

std::uint8_t* Node::PlacePayload(const FrameHeader& header, const std::string& body) {
  if (header.is_reply()) {
    std::lock_guard lock(requests_mutex_);
    auto it = requests_.find(header.request_id);
    if (it == requests_.end()) return nullptr;
    PendingRequest* pending = it->second;
    if (pending->reply_buffer != nullptr && header.payload_length <= pending->reply_capacity) {
      return pending->reply_buffer;
    }
    return nullptr;
  }
  if (header.type == MessageType::kRaw) return mailbox_.Place(header, body);
  Placer placer;
  {
    std::lock_guard lock(handlers_mutex_);
    placer = placers_[static_cast<std::size_t>(header.type)];
  }
  return placer ? placer(header, body) : nullptr;
}

void Node::CountReceived(MessageType type, std::uint64_t bytes) {
  if (type != MessageType::kWaitReport) wait_board::NoteTraffic();
  TypeCounters& counters = type_counters_[static_cast<std::size_t>(type)];
  AddAsDispatcher(counters.received_frames, 1);
  AddAsDispatcher(counters.received_bytes, bytes);
}

void Node::OnRawMessage(const SmallRaw& raw) {
  CountReceived(MessageType::kRaw, RawBody::kSize + raw.length);
  mailbox_.DeliverSmall(raw);
}

bool Node::TakeRawForThisThread(const SmallRaw& raw) {
  if (!mailbox_.DeliverSmallToThisThread(raw)) return false;
  CountReceived(MessageType::kRaw, RawBody::kSize + raw.length);
  return true;
}

void Node::OnMessage(InboundMessage&& message) {
  CountReceived(message.header.type, message.header.body_length + message.header.payload_length);
  if (message.header.is_reply()) {
    KeepPayload(message);  // its waiter reads it later (only a malformed raw frame lends one)
    CompleteRequest(std::move(message));
    return;
  }
  Dispatch(message);
}

void Node::CompleteRequest(InboundMessage message) {
  PendingRequest* pending = nullptr;
  LateReply late;
  {
    std::lock_guard lock(requests_mutex_);
    auto it = requests_.find(message.header.request_id);
    if (it == requests_.end()) {
      auto abandoned = late_replies_.find(message.header.request_id);
      if (abandoned != late_replies_.end()) {
        late = std::move(abandoned->second);
        late_replies_.erase(abandoned);
      }
    }
    if (it == requests_.end() && !late) {
      DebugLine("a reply from " + Rank(message.header.source) + " answers no pending request");
      return;
    }
    if (!late) {
      pending = it->second;
      requests_.erase(it);
    }
  }
  if (late) {
    // Its waiter was killed; an error reply needs nothing given back.
    if ((message.header.flags & kFlagError) == 0) late(message);
    return;
  }
  pending->reply = std::move(message);
  pending->done.Signal();
}

void Node::Dispatch(InboundMessage& message) {
  if (message.header.type == MessageType::kRaw) {
    mailbox_.Deliver(std::move(message));
    return;
  }
  Handler handler;
  {
    std::lock_guard lock(handlers_mutex_);
    handler = handlers_[static_cast<std::size_t>(message.header.type)];
  }
  ReplyTo reply_to{message.header.source, message.header.request_id, message.header.type};
  bool is_request = message.header.request_id != 0;
  if (!handler) {
    std::string text = Rank(info_.rank) + " has no handler for message type " +
                       std::to_string(static_cast<int>(message.header.type));
    if (is_request) {
      ReplyError(reply_to, LMDX_ERR_INTERNAL, text);
    } else {
      LogLine(text + " (from " + Rank(message.header.source) + "); dropped");
    }
    return;
  }
  if (is_request) engine_.WantLinger();
  try {
    handler(message, is_request ? &reply_to : nullptr);
  } catch (const Error& error) {
    // A handler whose answer cannot go out (the job ended under it, the asker vanished) must not
    // take the progress thread, and with it the process, down.
    std::string text = std::string("a handler of message type ") +
                       std::to_string(static_cast<int>(message.header.type)) +
                       " failed: " + error.what();
    if (ending() || stopped_.load(std::memory_order_acquire)) {
      DebugLine(text);
      return;
    }
    LogLine(text);
    if (!is_request) return;
    try {
      ReplyError(reply_to, static_cast<lmdx_error>(error.code()), error.what());
    } catch (const Error& reply_error) {
      DebugLine(std::string("its error reply failed too: ") + reply_error.what());
    }
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

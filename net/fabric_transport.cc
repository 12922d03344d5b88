#include "net/fabric_transport.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "net/handshake.h"
#include "net/internal/frame_assembly.h"
#include "net/internal/ucx_am_header.h"
#include "net/internal/ucx_library.h"
#include "net/internal/ucx_worker.h"

namespace lmdx::net {

using internal::AmHeader;
using internal::kAmHeaderSize;
using internal::kAmPrefixSize;
using internal::Ucx;
using internal::UcxStatusText;

namespace {

// A body rides in the active message's header up to this size (and UCX's own limit): the
// receiver then knows it before the payload arrives, and can name the payload's memory before a
// rendezvous fetch. Larger bodies are rare; they travel in front of the payload.
constexpr std::size_t kBodyInHeaderLimit = 4096;

// How long Close waits for goodbyes and endpoint flushes before it lets go.
constexpr auto kCloseWait = std::chrono::seconds(1);

std::string Rank(int rank) { return "rank " + std::to_string(rank); }

}  // namespace

// A frame on its way: kept whole until UCX no longer needs its memory.
struct FabricTransport::SendOp {
  FabricTransport* owner = nullptr;
  OutgoingMessage message;
  std::vector<std::uint8_t> header;     // the active message's header
  std::vector<std::uint8_t> body_data;  // body and payload, when the body is in the data
};

// A one-sided read under way.
struct FabricTransport::GetOp {
  FabricTransport* owner = nullptr;
  std::function<void(bool)> on_done;
};

// A frame that arrived, waiting until every frame before it from its peer has been handed over.
struct FabricTransport::Inbound {
  enum class State {
    kHeld,        // the data is in memory (UCX's, or copied): copy it out and hand it over
    kRendezvous,  // the data is still at the sender: fetch it
    kFetching,
    kFetched,  // ready to hand over
    kFailed,
  };
  FabricTransport* owner = nullptr;
  int source = -1;
  State state = State::kHeld;
  bool goodbye = false;
  bool body_in_data = false;
  InboundMessage message;  // header, and the body when it came in the header
  void* data = nullptr;    // kHeld: the bytes; kRendezvous: UCX's descriptor
  std::size_t length = 0;
  bool release_data = false;                 // kHeld: data is UCX's, released after the copy
  std::unique_ptr<std::uint8_t[]> own_data;  // a copy, or the fetch of body and payload
  std::string failure;
};

struct FabricTransport::Peer {
  FabricTransport* owner = nullptr;
  int rank = -1;
  std::string address;  // the peer worker's address, from the job table
  bool same_host = false;
  ucp_ep_h endpoint = nullptr;
  std::uint64_t send_token = 0;
  std::uint64_t receive_token = 0;
  std::uint64_t next_send = 0;
  std::uint64_t next_receive = 0;
  std::map<std::uint64_t, std::unique_ptr<Inbound>> arrived;  // by sequence number
  std::map<std::string, ucp_rkey_h> keys;  // the peer's packed keys, unpacked for endpoint
  bool lost = false;
  std::uint8_t goodbye[kAmPrefixSize] = {};
};

FabricTransport::FabricTransport(ProgressEngine& engine, TransportHost& host,
                                 const JobSecret& secret, int rank, int size)
    : engine_(engine),
      host_(host),
      secret_(secret),
      rank_(rank),
      size_(size),
      worker_(std::make_unique<internal::UcxWorker>(static_cast<std::size_t>(size))) {
  body_in_header_limit_ = std::min(worker_->max_am_header(), kBodyInHeaderLimit);
  if (body_in_header_limit_ < kAmHeaderSize) {
    throw Error(LMDX_ERR_NETWORK, "UCX allows active-message headers of only " +
                                      std::to_string(worker_->max_am_header()) + " bytes, " +
                                      std::to_string(kAmHeaderSize) + " are needed");
  }
  // The tokens of every pair this node is in, made once: a message's check is then a compare.
  for (int peer = 0; peer < size_; ++peer) {
    auto entry = std::make_unique<Peer>();
    entry->owner = this;
    entry->rank = peer;
    if (peer != rank_) {
      entry->send_token = PairToken(secret_, "fabric", rank_, peer);
      entry->receive_token = PairToken(secret_, "fabric", peer, rank_);
    }
    peers_.push_back(std::move(entry));
  }
  ucp_am_handler_param_t handler{};
  handler.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                       UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  handler.id = internal::kFabricAmId;
  // Persistent data: an eager message's bytes stay where UCX received them until they are copied
  // out on the dispatching thread, outside the UCX mutex.
  handler.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
  handler.cb = &FabricTransport::OnActiveMessage;
  handler.arg = this;
  ucs_status_t status = Ucx().worker_set_am_recv_handler(worker_->get(), &handler);
  if (status != UCS_OK) {
    throw Error(LMDX_ERR_NETWORK, UcxStatusText("ucp_worker_set_am_recv_handler", status));
  }
  engine_.Add(worker_->event_fd(), EPOLLIN, [this](std::uint32_t) { OnEventFd(); });
  engine_.AddPoller(this);
  registered_ = true;
}

FabricTransport::~FabricTransport() {
  Close();
  std::vector<std::pair<std::function<void(bool)>, bool>> finished;
  {
    std::lock_guard lock(ucx_mutex_);
    // Data UCX still holds for frames never handed over goes back before the worker does.
    for (auto& peer : peers_) {
      for (auto& [sequence, inbound] : peer->arrived) {
        bool held = inbound->state == Inbound::State::kHeld && inbound->release_data;
        if (held || inbound->state == Inbound::State::kRendezvous) {
          Ucx().am_data_release(worker_->get(), inbound->data);
        }
      }
    }
    // Destroying the worker completes what is still under way (callbacks with an error), so the
    // frames they name live until after it.
    worker_.reset();
    for (SendOp* op : sends_in_flight_) {
      finished.emplace_back(std::move(op->message.on_sent), false);
      delete op;
    }
    sends_in_flight_.clear();
    for (GetOp* op : gets_in_flight_) {
      finished.emplace_back(std::move(op->on_done), false);
      delete op;
    }
    gets_in_flight_.clear();
    finished.insert(finished.end(), std::make_move_iterator(finished_sends_.begin()),
                    std::make_move_iterator(finished_sends_.end()));
    finished_sends_.clear();
    peers_.clear();
  }
  for (auto& [on_sent, sent] : finished) {
    if (on_sent) on_sent(false);
  }
}

wire::Endpoint FabricTransport::LocalEndpoint() const {
  wire::Endpoint endpoint;
  endpoint.set_transport("fabric");
  endpoint.set_address(internal::AddressToHex(worker_->address()));
  return endpoint;  // no scope: anyone who can reach the address may use it
}

void FabricTransport::SetJobTable(const wire::JobTable& table) {
  std::lock_guard lock(ucx_mutex_);
  std::string my_host;
  for (const wire::NodeInfo& node : table.nodes()) {
    if (node.rank() == rank_) my_host = node.host();
  }
  for (const wire::NodeInfo& node : table.nodes()) {
    if (node.rank() < 0 || node.rank() >= size_ || node.rank() == rank_) continue;
    peers_[static_cast<std::size_t>(node.rank())]->same_host = node.host() == my_host;
    for (const wire::Endpoint& endpoint : node.endpoints()) {
      if (endpoint.transport() != "fabric") continue;
      std::string address = internal::AddressFromHex(endpoint.address());
      if (address.empty()) {
        LogLine("fabric: " + Rank(node.rank()) + " advertised an address that is not hex");
        continue;
      }
      peers_[static_cast<std::size_t>(node.rank())]->address = std::move(address);
    }
  }
}

ucp_ep_h FabricTransport::EndpointLocked(Peer& peer) {
  if (peer.endpoint != nullptr) return peer.endpoint;
  if (peer.address.empty()) {
    throw Error(LMDX_ERR_INTERNAL,
                "fabric: send to " + Rank(peer.rank) + " before its address is known");
  }
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peer.address.data());
  params.err_handler.cb = &FabricTransport::OnEndpointError;
  params.err_handler.arg = &peer;
  // Across hosts, peer mode: UCX watches the peer and reports its failure to OnEndpointError.
  // Within a host it would shut out UCX's shared-memory transports (they cannot report a peer's
  // failure), so there the pair relies on what also ends a job when a process dies: the
  // launcher and the rendezvous heartbeat, and a goodbye when a node ends in order.
  params.err_mode = peer.same_host ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
  ucs_status_t status = Ucx().ep_create(worker_->get(), &params, &peer.endpoint);
  if (status == UCS_ERR_UNREACHABLE && params.err_mode == UCP_ERR_HANDLING_MODE_PEER) {
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    status = Ucx().ep_create(worker_->get(), &params, &peer.endpoint);
  }
  if (status != UCS_OK) {
    peer.endpoint = nullptr;
    LoseLocked(peer, UcxStatusText("cannot reach it over fabric: ucp_ep_create", status));
  }
  return peer.endpoint;
}

void FabricTransport::Send(int dest, OutgoingMessage message, bool /*may_block*/) {
  auto op = std::make_unique<SendOp>();
  op->owner = this;
  op->message = std::move(message);
  FrameHeader& frame = op->message.header;
  const std::string& body = op->message.body;
  const Payload& payload = op->message.payload;
  frame.body_length = static_cast<std::uint32_t>(body.size());
  frame.payload_length = payload.size;

  AmHeader am;
  am.source = rank_;
  bool body_in_header = kAmHeaderSize + body.size() <= body_in_header_limit_;
  op->header.resize(kAmHeaderSize + (body_in_header ? body.size() : 0));
  EncodeFrameHeader(frame, op->header.data() + kAmPrefixSize);
  const void* data = payload.data;
  std::size_t length = payload.size;
  if (body_in_header) {
    std::memcpy(op->header.data() + kAmHeaderSize, body.data(), body.size());
  } else {
    am.flags |= AmHeader::kBodyInData;
    op->body_data.resize(body.size() + payload.size);
    std::memcpy(op->body_data.data(), body.data(), body.size());
    if (payload.size > 0)
      std::memcpy(op->body_data.data() + body.size(), payload.data, payload.size);
    data = op->body_data.data();
    length = op->body_data.size();
  }

  bool sent = false;
  bool failed = false;
  {
    std::lock_guard lock(ucx_mutex_);
    Peer& peer = *peers_.at(static_cast<std::size_t>(dest));
    ucp_ep_h endpoint = closing_ || peer.lost ? nullptr : EndpointLocked(peer);
    if (endpoint == nullptr) {
      failed = true;
    } else {
      am.token = peer.send_token;
      am.sequence = peer.next_send++;
      EncodeAmHeader(am, op->header.data());
      ucp_request_param_t param{};
      param.op_attr_mask =
          UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
      param.cb.send = &FabricTransport::OnSendDone;
      param.user_data = op.get();
      param.datatype = ucp_dt_make_contig(1);
      ucs_status_ptr_t request =
          Ucx().am_send_nbx(endpoint, internal::kFabricAmId, op->header.data(), op->header.size(),
                            data, length, &param);
      if (UCS_PTR_IS_ERR(request)) {
        LoseLocked(peer, UcxStatusText("ucp_am_send_nbx", UCS_PTR_STATUS(request)));
        failed = true;
      } else if (request == nullptr) {
        sent = true;  // out of the caller's memory already (copied, or on the wire)
      } else {
        sends_in_flight_.insert(op.release());
      }
    }
  }
  if (failed) {
    // The node hears of the lost peer from the dispatching thread (Deliver): wake it.
    engine_.Post([] {});
    if (op->message.on_sent) op->message.on_sent(false);
  } else if (sent && op->message.on_sent) {
    op->message.on_sent(true);
  }
}

void FabricTransport::OnSendDone(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<SendOp*>(user_data);
  FabricTransport* self = op->owner;
  self->sends_in_flight_.erase(op);
  self->finished_sends_.emplace_back(std::move(op->message.on_sent), status == UCS_OK);
  delete op;
  Ucx().request_free(request);
}

ucs_status_t FabricTransport::OnActiveMessage(void* arg, const void* header,
                                              std::size_t header_length, void* data,
                                              std::size_t length,
                                              const ucp_am_recv_param_t* param) {
  return static_cast<FabricTransport*>(arg)->Arrived(header, header_length, data, length, param);
}

void FabricTransport::Refuse(const std::string& why) {
  refusals_.Line("fabric: refused a message: " + why);
}

ucs_status_t FabricTransport::Arrived(const void* header_bytes, std::size_t header_length,
                                      void* data, std::size_t length,
                                      const ucp_am_recv_param_t* param) {
  const auto* bytes = static_cast<const std::uint8_t*>(header_bytes);
  if (header_length < kAmPrefixSize) {
    Refuse("its header has " + std::to_string(header_length) + " bytes");
    return UCS_OK;
  }
  std::optional<AmHeader> am = internal::DecodeAmHeader(bytes);
  if (!am) {
    Refuse("its header has unknown flags");
    return UCS_OK;
  }
  if (am->source < 0 || am->source >= size_ || am->source == rank_) {
    Refuse("it claims to come from rank " + std::to_string(am->source) +
           ", which is not another rank of this job");
    return UCS_OK;
  }
  Peer& peer = *peers_[static_cast<std::size_t>(am->source)];
  if (am->token != peer.receive_token) {
    Refuse("it claims to come from " + Rank(peer.rank) + " but its pair token is wrong");
    return UCS_OK;
  }
  if (closing_ || peer.lost) return UCS_OK;
  if (am->sequence < peer.next_receive || peer.arrived.contains(am->sequence)) {
    Refuse("it repeats message " + std::to_string(am->sequence) + " from " + Rank(peer.rank));
    return UCS_OK;
  }

  auto inbound = std::make_unique<Inbound>();
  inbound->owner = this;
  inbound->source = peer.rank;
  if ((am->flags & AmHeader::kGoodbye) != 0) {
    inbound->goodbye = true;
    peer.arrived.emplace(am->sequence, std::move(inbound));
    peers_with_arrivals_.insert(peer.rank);
    return UCS_OK;
  }
  std::string error;
  std::optional<FrameHeader> frame =
      header_length < kAmHeaderSize
          ? std::nullopt
          : internal::CheckIncomingHeader(bytes + kAmPrefixSize, peer.rank, rank_,
                                          "the fabric endpoint", &error);
  if (!frame) {
    LoseLocked(peer, header_length < kAmHeaderSize ? "a message without a frame header" : error);
    return UCS_OK;
  }
  inbound->body_in_data = (am->flags & AmHeader::kBodyInData) != 0;
  std::size_t header_body = header_length - kAmHeaderSize;
  std::uint64_t expected_data = frame->payload_length;
  if (inbound->body_in_data) expected_data += frame->body_length;
  if ((inbound->body_in_data ? header_body != 0 : header_body != frame->body_length) ||
      length != expected_data) {
    LoseLocked(peer, "a message whose lengths disagree with its frame header");
    return UCS_OK;
  }
  inbound->message.header = *frame;
  if (!inbound->body_in_data) {
    inbound->message.body.assign(reinterpret_cast<const char*>(bytes + kAmHeaderSize), header_body);
  }
  inbound->length = length;
  ucs_status_t result = UCS_OK;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) {
    inbound->state = Inbound::State::kRendezvous;
    inbound->data = data;
    result = UCS_INPROGRESS;
  } else if (length > 0 && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0) {
    inbound->data = data;
    inbound->release_data = true;
    result = UCS_INPROGRESS;
  } else if (length > 0) {
    inbound->own_data = std::make_unique_for_overwrite<std::uint8_t[]>(length);
    std::memcpy(inbound->own_data.get(), data, length);
    inbound->data = inbound->own_data.get();
  }
  peer.arrived.emplace(am->sequence, std::move(inbound));
  peers_with_arrivals_.insert(peer.rank);
  return result;
}

void FabricTransport::OnFetched(void* request, ucs_status_t status, std::size_t /*length*/,
                                void* user_data) {
  auto* inbound = static_cast<Inbound*>(user_data);
  if (status == UCS_OK) {
    inbound->state = Inbound::State::kFetched;
  } else {
    inbound->state = Inbound::State::kFailed;
    inbound->failure = UcxStatusText("fetching a message's data", status);
  }
  inbound->owner->peers_with_arrivals_.insert(inbound->source);
  Ucx().request_free(request);
}

void FabricTransport::OnEndpointError(void* arg, ucp_ep_h endpoint, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  FabricTransport* self = peer->owner;
  self->LoseLocked(*peer, UcxStatusText("its fabric endpoint failed", status));
  DestroyKeysLocked(*peer);
  self->failed_endpoints_.push_back(endpoint);
  if (peer->endpoint == endpoint) peer->endpoint = nullptr;
}

// UCX wants a failed endpoint closed by force; it frees it once nothing refers to it.
void FabricTransport::CloseFailedEndpointsLocked() {
  for (ucp_ep_h endpoint : failed_endpoints_) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t request = Ucx().ep_close_nbx(endpoint, &param);
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) Ucx().request_free(request);
  }
  failed_endpoints_.clear();
}

void FabricTransport::LoseLocked(Peer& peer, const std::string& why) {
  if (peer.lost) return;
  peer.lost = true;
  if (!closing_) lost_.emplace_back(peer.rank, why);
}

bool FabricTransport::ProgressLocked() {
  bool any = false;
  while (Ucx().worker_progress(worker_->get()) != 0) any = true;
  return any;
}

bool FabricTransport::AdvancePeer(Peer& peer) {
  bool moved = false;
  for (;;) {
    Inbound* inbound = nullptr;
    {
      std::lock_guard lock(ucx_mutex_);
      if (closing_ || peer.lost) return moved;
      auto it = peer.arrived.find(peer.next_receive);
      if (it == peer.arrived.end() || it->second->state == Inbound::State::kFetching) return moved;
      inbound = it->second.get();
      if (inbound->goodbye || inbound->state == Inbound::State::kFailed) {
        std::string why =
            inbound->goodbye ? Rank(peer.rank) + " closed its fabric endpoint" : inbound->failure;
        peer.arrived.erase(it);
        ++peer.next_receive;
        LoseLocked(peer, why);
        return true;
      }
    }
    moved = true;
    InboundMessage& message = inbound->message;
    std::uint32_t body_length = message.header.body_length;
    std::string error;
    if (inbound->state == Inbound::State::kRendezvous) {
      // The payload's memory is named now, with every earlier frame handed over; then UCX
      // fetches the data straight into it.
      void* target = nullptr;
      if (inbound->body_in_data) {
        inbound->own_data = std::make_unique_for_overwrite<std::uint8_t[]>(inbound->length);
        target = inbound->own_data.get();
      } else if (internal::PreparePayload(host_, message, &error)) {
        target = message.payload;
      }
      std::lock_guard lock(ucx_mutex_);
      if (target == nullptr) {
        Ucx().am_data_release(worker_->get(), inbound->data);
        inbound->state = Inbound::State::kFailed;
        inbound->failure = error;
        continue;
      }
      ucp_request_param_t param{};
      param.op_attr_mask =
          UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
      param.cb.recv_am = &FabricTransport::OnFetched;
      param.user_data = inbound;
      param.datatype = ucp_dt_make_contig(1);
      ucs_status_ptr_t request =
          Ucx().am_recv_data_nbx(worker_->get(), inbound->data, target, inbound->length, &param);
      inbound->data = nullptr;  // UCX owns the descriptor now
      if (UCS_PTR_IS_ERR(request)) {
        inbound->state = Inbound::State::kFailed;
        inbound->failure = UcxStatusText("ucp_am_recv_data_nbx", UCS_PTR_STATUS(request));
      } else {
        inbound->state = request == nullptr ? Inbound::State::kFetched : Inbound::State::kFetching;
      }
      continue;
    }
    // kHeld or kFetched: the bytes are here.
    const std::uint8_t* bytes = inbound->state == Inbound::State::kHeld
                                    ? static_cast<const std::uint8_t*>(inbound->data)
                                    : inbound->own_data.get();
    bool copy_out = inbound->state == Inbound::State::kHeld || inbound->body_in_data;
    bool ok = true;
    if (copy_out) {
      if (inbound->body_in_data) {
        message.body.assign(reinterpret_cast<const char*>(bytes), body_length);
        bytes += body_length;
      }
      if (message.header.payload_length > 0) {
        ok = internal::PreparePayload(host_, message, &error);
        if (ok) std::memcpy(message.payload, bytes, message.header.payload_length);
      }
    }
    std::unique_ptr<Inbound> done;
    {
      std::lock_guard lock(ucx_mutex_);
      if (inbound->release_data) Ucx().am_data_release(worker_->get(), inbound->data);
      inbound->release_data = false;
      if (!ok) {
        inbound->state = Inbound::State::kFailed;
        inbound->failure = error;
        continue;
      }
      auto it = peer.arrived.find(peer.next_receive);
      done = std::move(it->second);
      peer.arrived.erase(it);
      ++peer.next_receive;
    }
    host_.OnMessage(std::move(done->message));
  }
}

bool FabricTransport::Deliver() {
  std::vector<std::pair<std::function<void(bool)>, bool>> finished;
  std::set<int> ready;
  {
    std::lock_guard lock(ucx_mutex_);
    finished.swap(finished_sends_);
    ready.swap(peers_with_arrivals_);
  }
  bool found = !finished.empty() || !ready.empty();
  for (auto& [on_sent, sent] : finished) {
    if (on_sent) on_sent(sent);
  }
  for (int rank : ready) AdvancePeer(*peers_[static_cast<std::size_t>(rank)]);
  std::vector<std::pair<int, std::string>> lost;
  {
    std::lock_guard lock(ucx_mutex_);
    if (!closing_) lost.swap(lost_);
  }
  for (const auto& [rank, why] : lost) host_.OnPeerLost(rank, why);
  return found || !lost.empty();
}

bool FabricTransport::Poll() {
  bool progressed;
  {
    std::lock_guard lock(ucx_mutex_);
    if (closing_) return false;
    progressed = ProgressLocked();
    CloseFailedEndpointsLocked();
  }
  return Deliver() || progressed;
}

// Before the progress thread sleeps: progress until the worker has nothing, then arm it. A busy
// worker (UCS_ERR_BUSY: events came meanwhile), or anything the callbacks recorded, sends the
// progress thread round again instead of to sleep.
bool FabricTransport::Arm() {
  std::lock_guard lock(ucx_mutex_);
  if (closing_) return false;
  ProgressLocked();
  if (!finished_sends_.empty() || !peers_with_arrivals_.empty() || !lost_.empty()) return true;
  if (Ucx().worker_arm(worker_->get()) == UCS_ERR_BUSY) return true;
  // Armed (which also drained what made the descriptor readable): now the progress thread may
  // hear of it. An event between the arm and this call still shows, as epoll looks again.
  engine_.Modify(worker_->event_fd(), EPOLLIN);
  return false;
}

// A thread polls the worker now: the progress thread need not hear of its events meanwhile (on two
// cores its wake-up would take the polling thread's core). UCX cannot be disarmed, so the
// descriptor leaves the epoll set's interest until Arm.
void FabricTransport::Disarm() {
  std::lock_guard lock(ucx_mutex_);
  if (!closing_) engine_.Modify(worker_->event_fd(), 0);
}

// The worker's descriptor fired. After taking what came, arm again: an armed worker's
// descriptor stays readable until the next arm, and a waiting thread that polls the event set
// would otherwise find it ready on every round and never go to sleep.
void FabricTransport::OnEventFd() {
  Poll();
  std::lock_guard lock(ucx_mutex_);
  if (closing_) return;
  for (;;) {
    ProgressLocked();
    if (!finished_sends_.empty() || !peers_with_arrivals_.empty() || !lost_.empty()) {
      engine_.Post([] {});  // PollAll, after this callback, hands them over
      return;
    }
    if (Ucx().worker_arm(worker_->get()) != UCS_ERR_BUSY) return;
  }
}

void FabricTransport::Close() {
  if (registered_) {
    // No poll or event callback starts after these return (one already running finishes).
    engine_.RemovePoller(this);
    engine_.Remove(worker_->event_fd());
    registered_ = false;
  }
  std::vector<std::pair<std::function<void(bool)>, bool>> finished;
  {
    std::lock_guard lock(ucx_mutex_);
    if (closing_) return;
    closing_ = true;
    CloseFailedEndpointsLocked();
    // Each peer this node sent to hears a goodbye after the last frame (as a TCP peer sees the
    // connection close), then the endpoint is flushed and closed. A peer waiting for this node
    // to leave (rank 0 at the end of an SPMD job) need not wait for a timeout.
    // Reads under way use their peers' keys, which must outlive them.
    auto deadline = std::chrono::steady_clock::now() + kCloseWait;
    while (!gets_in_flight_.empty() && std::chrono::steady_clock::now() < deadline) {
      Ucx().worker_progress(worker_->get());
    }
    std::vector<ucs_status_ptr_t> requests;
    for (auto& peer : peers_) {
      DestroyKeysLocked(*peer);
      if (peer->endpoint == nullptr || peer->lost) continue;
      AmHeader goodbye;
      goodbye.token = peer->send_token;
      goodbye.sequence = peer->next_send++;
      goodbye.flags = AmHeader::kGoodbye;
      goodbye.source = rank_;
      EncodeAmHeader(goodbye, peer->goodbye);
      ucp_request_param_t send_param{};
      requests.push_back(Ucx().am_send_nbx(peer->endpoint, internal::kFabricAmId, peer->goodbye,
                                           kAmPrefixSize, nullptr, 0, &send_param));
      ucp_request_param_t close_param{};
      requests.push_back(Ucx().ep_close_nbx(peer->endpoint, &close_param));
      peer->endpoint = nullptr;
    }
    deadline = std::chrono::steady_clock::now() + kCloseWait;
    for (ucs_status_ptr_t request : requests) {
      if (request == nullptr || UCS_PTR_IS_ERR(request)) continue;
      while (Ucx().request_check_status(request) == UCS_INPROGRESS &&
             std::chrono::steady_clock::now() < deadline) {
        Ucx().worker_progress(worker_->get());
      }
      Ucx().request_free(request);  // freed now, or by UCX once it completes
    }
    for (ucp_mem_h memory : exposed_) Ucx().mem_unmap(worker_->context(), memory);
    exposed_.clear();
    finished.swap(finished_sends_);
  }
  for (auto& [on_sent, sent] : finished) {
    if (on_sent) on_sent(sent);
  }
}

void FabricTransport::DestroyKeysLocked(Peer& peer) {
  for (auto& [packed, key] : peer.keys) Ucx().rkey_destroy(key);
  peer.keys.clear();
}

std::string FabricTransport::ExposeForReading(void* base, std::size_t size) {
  std::lock_guard lock(ucx_mutex_);
  if (closing_) throw Error(LMDX_ERR_NETWORK, "fabric: memory exposed after the transport closed");
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_PROT;
  params.address = base;
  params.length = size;
  params.prot =
      UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE | UCP_MEM_MAP_PROT_REMOTE_READ;
  ucp_mem_h memory = nullptr;
  ucs_status_t status = Ucx().mem_map(worker_->context(), &params, &memory);
  if (status != UCS_OK) {
    throw Error(LMDX_ERR_NETWORK,
                "fabric: cannot expose " + std::to_string(size) +
                    " bytes for reading: " + UcxStatusText("ucp_mem_map", status));
  }
  void* packed = nullptr;
  std::size_t packed_size = 0;
  status = Ucx().rkey_pack(worker_->context(), memory, &packed, &packed_size);
  if (status != UCS_OK) {
    Ucx().mem_unmap(worker_->context(), memory);
    throw Error(LMDX_ERR_NETWORK, "fabric: " + UcxStatusText("ucp_rkey_pack", status));
  }
  std::string key(static_cast<const char*>(packed), packed_size);
  Ucx().rkey_buffer_release(packed);
  exposed_.push_back(memory);
  return key;
}

void FabricTransport::Get(int dest, std::uint64_t remote_address, const std::string& key,
                          void* local, std::size_t size, std::function<void(bool ok)> on_done) {
  auto op = std::make_unique<GetOp>();
  op->owner = this;
  op->on_done = std::move(on_done);
  bool done = false;
  bool ok = false;
  {
    std::lock_guard lock(ucx_mutex_);
    Peer& peer = *peers_.at(static_cast<std::size_t>(dest));
    ucp_ep_h endpoint = closing_ || peer.lost ? nullptr : EndpointLocked(peer);
    ucp_rkey_h rkey = nullptr;
    if (endpoint != nullptr) {
      auto it = peer.keys.find(key);
      if (it == peer.keys.end()) {
        if (Ucx().ep_rkey_unpack(endpoint, key.data(), &rkey) == UCS_OK) {
          peer.keys.emplace(key, rkey);
        }
      } else {
        rkey = it->second;
      }
    }
    if (rkey == nullptr) {
      done = true;
    } else {
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
      param.cb.send = &FabricTransport::OnGetDone;
      param.user_data = op.get();
      ucs_status_ptr_t request = Ucx().get_nbx(endpoint, local, size, remote_address, rkey, &param);
      if (UCS_PTR_IS_ERR(request)) {
        LoseLocked(peer, UcxStatusText("ucp_get_nbx", UCS_PTR_STATUS(request)));
        done = true;
      } else if (request == nullptr) {
        done = ok = true;
      } else {
        gets_in_flight_.insert(op.release());
      }
    }
  }
  if (done) {
    engine_.Post([] {});  // a peer lost meanwhile is reported from the dispatching thread
    if (op->on_done) op->on_done(ok);
  }
}

void FabricTransport::OnGetDone(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<GetOp*>(user_data);
  FabricTransport* self = op->owner;
  self->gets_in_flight_.erase(op);
  self->finished_sends_.emplace_back(std::move(op->on_done), status == UCS_OK);
  delete op;
  Ucx().request_free(request);
}

}  // namespace lmdx::net

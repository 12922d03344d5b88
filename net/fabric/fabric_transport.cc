#include "net/fabric/fabric_transport.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>

#include "base/error.h"
#include "base/hex.h"
#include "base/log.h"
#include "net/handshake.h"
#include "net/fabric/internal/fabric_state.h"
#include "net/internal/frame_assembly.h"
#include "net/fabric/internal/ucx_am_header.h"
#include "net/fabric/internal/ucx_library.h"
#include "net/fabric/internal/ucx_worker.h"

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

// SendNow takes frames whose header (with the body) and payload are at most these: UCX sends
// them by copy, so they may complete within the call, and the header fits on the sender's stack.
constexpr std::size_t kSendNowBodyLimit = 256;
constexpr std::size_t kSendNowPayloadLimit = 256;

// Writes the frame's header (and its body, when it rides in the header) behind the active
// message's prefix, which is written under the transport's lock (EncodeAmHeader).
void EncodeFrameBehindPrefix(OutgoingMessage& message, bool body_in_header, std::uint8_t* header) {
  message.header.body_length = static_cast<std::uint32_t>(message.body.size());
  message.header.payload_length = message.payload.size;
  EncodeFrameHeader(message.header, header + kAmPrefixSize);
  if (body_in_header && !message.body.empty()) {
    std::memcpy(header + kAmHeaderSize, message.body.data(), message.body.size());
  }
}

}  // namespace

FabricTransport::FabricTransport(ProgressEngine& engine, TransportHost& host,
                                 const JobSecret& secret, int rank, int size,
                                 bool peers_on_this_host)
    : engine_(engine),
      host_(host),
      secret_(secret),
      rank_(rank),
      size_(size),
      worker_(std::make_unique<internal::UcxWorker>(static_cast<std::size_t>(size),
                                                    peers_on_this_host)),
      ucx_(Ucx()),
      ucp_worker_(worker_->get()) {
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
      std::unique_ptr<SendOp> owned(op);  // in flight, UCX held it by its raw pointer
      finished.emplace_back(std::move(owned->message.on_sent), false);
    }
    sends_in_flight_.clear();
    for (GetOp* op : gets_in_flight_) {
      std::unique_ptr<GetOp> owned(op);
      finished.emplace_back(std::move(owned->on_done), false);
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
  // The worker's address travels in the job table as hex.
  endpoint.set_address(HexEncode(worker_->address()));
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
      std::string address = HexDecode(endpoint.address()).value_or("");
      if (address.empty()) {
        LogLine("fabric: " + RankText(node.rank()) + " advertised an address that is not hex");
        continue;
      }
      peers_[static_cast<std::size_t>(node.rank())]->address = std::move(address);
    }
  }
  // Every pair's endpoint is made now rather than by its first frame. UCX leaves an interface
  // that no endpoint of this worker uses to its own thread, which wakes the worker when the
  // interface has an event; over UCX's shared memory that wake-up was sometimes lost (a node
  // that had only received never saw the next frames, 1 burst in 30 in a test), while a
  // worker whose interfaces serve its own endpoints hears them through its armed descriptor.
  // The handshake each endpoint starts is also done before the first frame follows it.
  for (auto& peer : peers_) {
    if (peer->rank != rank_ && !peer->address.empty()) EndpointLocked(*peer);
  }
  ProgressLocked();
}

ucp_ep_h FabricTransport::UsableEndpointLocked(Peer& peer) {
  return closing_ || peer.lost ? nullptr : EndpointLocked(peer);
}

ucp_ep_h FabricTransport::EndpointLocked(Peer& peer) {
  if (peer.endpoint != nullptr) return peer.endpoint;
  if (peer.address.empty()) {
    throw Error(LMDX_ERR_INTERNAL,
                "fabric: send to " + RankText(peer.rank) + " before its address is known");
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
  const std::string& body = op->message.body;
  const Payload& payload = op->message.payload;

  AmHeader am;
  am.source = rank_;
  bool body_in_header = kAmHeaderSize + body.size() <= body_in_header_limit_;
  op->header.resize(kAmHeaderSize + (body_in_header ? body.size() : 0));
  EncodeFrameBehindPrefix(op->message, body_in_header, op->header.data());
  const void* data = payload.data;
  std::size_t length = payload.size;
  if (!body_in_header) {
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
  bool queued = false;  // the first frame UCX queued since the queue was last empty
  {
    std::lock_guard lock(ucx_mutex_);
    Peer& peer = *peers_.at(static_cast<std::size_t>(dest));
    ucp_ep_h endpoint = UsableEndpointLocked(peer);
    if (endpoint == nullptr) {
      failed = true;
    } else {
      if (keeping_sends_moving_) {
        // Frames are queued: a sender that goes on sending moves them along itself, faster than
        // the progress thread's looks would. What that brings in is handed over by the look.
        ProgressLocked();
      }
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
        // A sender that waits polling moves it along itself, and the progress thread is told
        // when it stops (Arm).
        bool sender_polls = op->message.sender_polls;
        sends_in_flight_.insert(op.release());
        queued = !sender_polls && StartKeepingSendsMovingLocked(0);
      }
    }
  }
  if (queued) ScheduleKeepSendsMoving(0);
  if (failed) {
    // The node hears of the lost peer from the dispatching thread (Deliver): wake it.
    engine_.Post([] {});
    if (op->message.on_sent) op->message.on_sent(false);
  } else if (sent && op->message.on_sent) {
    op->message.on_sent(true);
  }
}

// UCX is asked to complete the send within the call or not to start it
// (UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL): a frame it would queue goes through Send instead, and takes
// its sequence number there. A frame sent here may overtake one UCX still queues; the receiver
// puts them back in order by their sequence numbers, as it does frames of different lanes.
bool FabricTransport::SendNow(int dest, OutgoingMessage& message) {
  if (message.body.size() > kSendNowBodyLimit || message.payload.size > kSendNowPayloadLimit ||
      kAmHeaderSize + message.body.size() > body_in_header_limit_) {
    return false;
  }
  std::array<std::uint8_t, kAmHeaderSize + kSendNowBodyLimit> header;
  EncodeFrameBehindPrefix(message, /*body_in_header=*/true, header.data());
  return SendWithinCall(dest, 0, header.data(), kAmHeaderSize + message.body.size(),
                        message.payload.data, message.payload.size);
}

// The express lane: a header of its own, the raw body after a short prefix
// (internal/ucx_am_header.h).
bool FabricTransport::SendRawNow(const SmallRaw& raw) {
  if (raw.length > kSendNowPayloadLimit) return false;
  // The header leads the data (internal/ucx_am_header.h says why).
  std::array<std::uint8_t, internal::kSmallRawHeaderSize + kSendNowPayloadLimit> message;
  RawBody{raw.tag, raw.sequence}.Write(message.data() + internal::kSmallRawBodyOffset);
  if (raw.length > 0) {
    std::memcpy(message.data() + internal::kSmallRawHeaderSize, raw.payload, raw.length);
  }
  return SendWithinCall(raw.destination, AmHeader::kSmallRaw, message.data(), 0, message.data(),
                        internal::kSmallRawHeaderSize + raw.length);
}

bool FabricTransport::SendWithinCall(int dest, std::uint32_t flags, std::uint8_t* header,
                                     std::size_t header_size, const void* data,
                                     std::size_t length) {
  AmHeader am;
  am.source = rank_;
  am.flags = flags;
  std::lock_guard lock(ucx_mutex_);
  Peer& peer = *peers_.at(static_cast<std::size_t>(dest));
  ucp_ep_h endpoint = UsableEndpointLocked(peer);
  if (endpoint == nullptr) return false;  // Send reports the loss
  am.token = peer.send_token;
  am.sequence = peer.next_send;
  if ((flags & AmHeader::kSmallRaw) != 0) {
    internal::EncodeSmallRawPrefix(am.token, am.sequence, am.source, header);
  } else {
    EncodeAmHeader(am, header);
  }
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
  param.datatype = ucp_dt_make_contig(1);
  ucs_status_ptr_t request =
      ucx_.am_send_nbx(endpoint, internal::kFabricAmId, header_size > 0 ? header : nullptr,
                       header_size, data, length, &param);
  if (UCS_PTR_IS_ERR(request)) return false;  // not sent; Send meets any failure again
  if (request != nullptr) {
    // UCX started it after all: its memory is this stack's and the caller's until it ends.
    while (Ucx().request_check_status(request) == UCS_INPROGRESS) ProgressLocked();
    Ucx().request_free(request);
  }
  ++peer.next_send;
  return true;
}

void FabricTransport::KeepSendsMoving() {
  bool moved;
  {
    std::lock_guard lock(ucx_mutex_);
    if (closing_ || sends_in_flight_.empty()) {
      keeping_sends_moving_ = false;
      return;
    }
    std::size_t before = sends_in_flight_.size();
    ProgressLocked();
    moved = sends_in_flight_.size() < before;
    if (sends_in_flight_.empty()) keeping_sends_moving_ = false;
  }
  Deliver();  // the finished sends' on_sent, and whatever the progress brought in
  int delay_ms;
  {
    std::lock_guard lock(ucx_mutex_);
    if (!keeping_sends_moving_ || closing_) return;
    // A queue that does not move waits for its peer to take what it has (or to fetch a large
    // message's data, which may be long): looking again at once would take the core the peer
    // needs, so the looks grow apart, from 1 to 16 ms, until it moves.
    keep_moving_delay_ms_ = moved ? 0 : std::clamp(2 * keep_moving_delay_ms_, 1, 16);
    delay_ms = keep_moving_delay_ms_;
  }
  ScheduleKeepSendsMoving(delay_ms);
}

bool FabricTransport::StartKeepingSendsMovingLocked(int first_delay_ms) {
  if (keeping_sends_moving_) return false;
  keeping_sends_moving_ = true;
  keep_moving_delay_ms_ = first_delay_ms;
  return true;
}

void FabricTransport::ScheduleKeepSendsMoving(int delay_ms) {
  if (delay_ms == 0) {
    engine_.Post([this] { KeepSendsMoving(); });
  } else {
    engine_.PostAfter(delay_ms, [this] { KeepSendsMoving(); });
  }
}

void FabricTransport::OnSendDone(void* request, ucs_status_t status, void* user_data) {
  std::unique_ptr<SendOp> op(static_cast<SendOp*>(user_data));  // UCX is done with it
  FabricTransport* self = op->owner;
  self->sends_in_flight_.erase(op.get());
  self->finished_sends_.emplace_back(std::move(op->message.on_sent), status == UCS_OK);
  Ucx().request_free(request);
}

bool FabricTransport::ProgressLocked() {
  bool any = false;
  while (ucx_.worker_progress(ucp_worker_) != 0) any = true;
  return any;
}

// One round of progress, not until the worker has nothing: over UCX's tcp each round is an
// epoll_wait, and a second round after the one that brought a message delayed its delivery by
// that system call. A waiting thread polls again at once, and the progress thread polls again
// before it sleeps when a poll found something (ProgressEngine::Run).
bool FabricTransport::Poll() {
  bool progressed;
  bool to_deliver;
  // Touched only when frames came: a waiting thread polls millions of times a second, and most
  // rounds bring nothing, or a message taken inside the callback.
  std::vector<QuickFrame> quick;
  {
    std::lock_guard lock(ucx_mutex_);
    if (closing_) return false;
    progressed = ucx_.worker_progress(ucp_worker_) != 0;
    if (!failed_endpoints_.empty()) CloseFailedEndpointsLocked();
    if (!quick_frames_.empty()) {
      quick = std::move(quick_spare_);
      quick.swap(quick_frames_);
    }
    // Asked in the same trip through the lock: a round that brings nothing or only quick frames
    // (most rounds of a conversation) then takes the lock once.
    to_deliver = HasRecordsLocked() || !peers_waiting_for_receives_.empty();
  }
  bool found = false;
  if (!quick.empty()) {
    found = HandOverQuickFrames(quick);
    quick_spare_ = std::move(quick);
  }
  if (to_deliver) found |= Deliver();
  return found || progressed;
}

// Before the progress thread sleeps: progress until the worker has nothing, then arm it. A busy
// worker (UCS_ERR_BUSY: events came meanwhile), or anything the callbacks recorded, sends the
// progress thread round again instead of to sleep.
bool FabricTransport::Arm() {
  bool start_keeping_sends_moving = false;
  bool busy = false;
  {
    std::lock_guard lock(ucx_mutex_);
    if (closing_) return false;
    ProgressLocked();
    // Frames still queued now have nobody polling for them: a sender that waited for them
    // stopped polling, or the progress thread goes to sleep after a handler queued them.
    start_keeping_sends_moving = !sends_in_flight_.empty() && StartKeepingSendsMovingLocked(1);
    if (HasRecordsLocked()) {
      busy = true;
    } else if (Ucx().worker_arm(worker_->get()) == UCS_ERR_BUSY) {
      busy = true;
    } else {
      // Armed (which also drained what made the descriptor readable): now the progress thread
      // may hear of it. An event between the arm and this call still shows, as epoll looks again.
      engine_.Modify(worker_->event_fd(), EPOLLIN);
    }
  }
  if (start_keeping_sends_moving) ScheduleKeepSendsMoving(1);
  return busy;
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
    if (HasRecordsLocked()) {
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
    // Each peer hears a goodbye after the last frame (as a TCP peer sees the
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

}  // namespace lmdx::net

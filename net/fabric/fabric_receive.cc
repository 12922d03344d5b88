// The fabric transport's receiving side: active messages as they arrive, handed to the node in
// each pair's order (rendezvous data fetched when its turn comes), and failed endpoints.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "net/fabric/fabric_transport.h"
#include "net/fabric/internal/fabric_state.h"
#include "net/internal/frame_assembly.h"
#include "net/internal/payload_buffer.h"
#include "net/fabric/internal/ucx_am_header.h"
#include "net/fabric/internal/ucx_library.h"
#include "net/fabric/internal/ucx_worker.h"

namespace lmdx::net {

using internal::AmHeader;
using internal::kAmHeaderSize;
using internal::kAmPrefixSize;
using internal::Ucx;
using internal::UcxStatusText;

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
  // A small raw message's header leads its data (internal/ucx_am_header.h). Its data is kept
  // only as a copy: UCX's pointer to it is not where the payload starts.
  bool header_in_data = header_length == 0;
  if (header_in_data) {
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 ||
        length < internal::kSmallRawHeaderSize) {
      Refuse("it has no header and " + std::to_string(length) + " bytes of data");
      return UCS_OK;
    }
    header_bytes = data;
    header_length = internal::kSmallRawHeaderSize;
    data = static_cast<std::uint8_t*>(data) + header_length;
    length -= header_length;
  } else if (header_length == internal::kSmallRawHeaderSize) {
    Refuse("its small-message header came as UCX's header");
    return UCS_OK;
  }
  const auto* bytes = static_cast<const std::uint8_t*>(header_bytes);
  if (header_length < kAmPrefixSize) {
    Refuse("its header has " + std::to_string(header_length) + " bytes");
    return UCS_OK;
  }
  std::optional<AmHeader> am = internal::DecodeAmHeader(bytes, header_length);
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
    Refuse("it claims to come from " + RankText(peer.rank) + " but its pair token is wrong");
    return UCS_OK;
  }
  if (closing_ || peer.lost) return UCS_OK;
  am = am->WithFullSequence(peer.next_receive);
  if (am->sequence < peer.next_receive || peer.arrived.contains(am->sequence)) {
    Refuse("it repeats message " + std::to_string(am->sequence) + " from " + RankText(peer.rank));
    return UCS_OK;
  }

  if ((am->flags & AmHeader::kGoodbye) != 0) {
    auto inbound = std::make_unique<Inbound>();
    inbound->owner = this;
    inbound->source = peer.rank;
    inbound->goodbye = true;
    peer.arrived.emplace(am->sequence, std::move(inbound));
    peers_with_arrivals_.insert(peer.rank);
    return UCS_OK;
  }
  std::string error;
  std::optional<FrameHeader> frame;
  std::size_t body_offset = kAmHeaderSize;  // where the body starts in the header
  if ((am->flags & AmHeader::kSmallRaw) != 0) {
    // The raw frame it stands for: its body ends the header, its payload is the data.
    body_offset = internal::kSmallRawBodyOffset;
    frame.emplace();
    frame->type = MessageType::kRaw;
    frame->source = peer.rank;
    frame->destination = rank_;
    frame->body_length = RawBody::kSize;
    frame->payload_length = length;
  } else {
    frame = header_length < kAmHeaderSize
                ? std::nullopt
                : internal::CheckIncomingHeader(bytes + kAmPrefixSize, peer.rank, rank_,
                                                "the fabric endpoint", &error);
  }
  if (!frame) {
    LoseLocked(peer, header_length < kAmHeaderSize ? "a message without a frame header" : error);
    return UCS_OK;
  }
  bool body_in_data = (am->flags & AmHeader::kBodyInData) != 0;
  std::size_t header_body = header_length - body_offset;
  std::uint64_t expected_data = frame->payload_length;
  if (body_in_data) expected_data += frame->body_length;
  if ((body_in_data ? header_body != 0 : header_body != frame->body_length) ||
      length != expected_data) {
    LoseLocked(peer, "a message whose lengths disagree with its frame header");
    return UCS_OK;
  }
  bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  bool next_in_order = !rendezvous && am->sequence == peer.next_receive && peer.arrived.empty();
  if (next_in_order && (am->flags & AmHeader::kSmallRaw) != 0 && header_body == RawBody::kSize &&
      quick_frames_.empty() && engine_.InDispatch()) {
    // Most often the receive it completes is this very thread's, polling in lmdx_recv: it takes
    // the message here, straight from UCX's memory. Only while this thread dispatches (it holds
    // the dispatch lock), as every hand-over does: no other thread is then between taking this
    // peer's earlier frames out and handing them over, and the node's counters have one writer.
    // (A driver that arms the worker as its drive ends polls UCX outside the dispatch lock.)
    RawBody raw = RawBody::Read(bytes + body_offset);
    if (host_.TakeRawForThisThread(SmallRaw{peer.rank, rank_, raw.tag, raw.sequence,
                                            static_cast<const std::uint8_t*>(data), length})) {
      ++peer.next_receive;
      return UCS_OK;
    }
  }
  if (next_in_order && header_body + length <= QuickFrame::kMaxBytes) {
    QuickFrame& quick = quick_frames_.emplace_back();
    quick.header = *frame;
    std::memcpy(quick.bytes.data(), bytes + body_offset, header_body);
    if (length > 0) std::memcpy(quick.bytes.data() + header_body, data, length);
    ++peer.next_receive;
    return UCS_OK;  // copied: UCX may take its memory back
  }
  auto inbound = std::make_unique<Inbound>();
  inbound->owner = this;
  inbound->source = peer.rank;
  inbound->body_in_data = body_in_data;
  inbound->message.header = *frame;
  if (!inbound->body_in_data) {
    inbound->message.body.assign(reinterpret_cast<const char*>(bytes + body_offset), header_body);
  }
  inbound->length = length;
  ucs_status_t result = UCS_OK;
  if (rendezvous) {
    inbound->state = Inbound::State::kRendezvous;
    inbound->data = data;
    result = UCS_INPROGRESS;
  } else if (length > 0 && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0 &&
             !header_in_data) {
    inbound->data = data;
    inbound->release_data = true;
    result = UCS_INPROGRESS;
  } else if (length > 0) {
    inbound->own_data = internal::AllocatePayload(length);
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

// UCX cannot cancel a fetch under way, and a fetch writes into memory the node named for it (a
// receive's buffer), which the node hands back as soon as this returns: each such fetch is waited
// for. One from a live peer ends within a transfer's time; one from a dead peer fails with its
// endpoint.
void FabricTransport::DropPeer(int rank, const std::string& why) {
  constexpr auto kFetchWait = std::chrono::seconds(2);
  std::lock_guard lock(ucx_mutex_);
  if (closing_ || rank < 0 || static_cast<std::size_t>(rank) >= peers_.size() || rank == rank_) {
    return;
  }
  Peer& peer = *peers_[static_cast<std::size_t>(rank)];
  LoseLocked(peer, why);
  auto fetching_into_named_memory = [&peer] {
    return std::any_of(peer.arrived.begin(), peer.arrived.end(), [](const auto& entry) {
      return entry.second->state == Inbound::State::kFetching &&
             entry.second->message.payload_placed;
    });
  };
  auto deadline = std::chrono::steady_clock::now() + kFetchWait;
  while (fetching_into_named_memory() && std::chrono::steady_clock::now() < deadline) {
    ProgressLocked();
  }
  if (fetching_into_named_memory()) {
    LogLine("fabric: a fetch from " + RankText(rank) +
            " into a receive's buffer was still under way 2 s after the rank was lost; the "
            "buffer may still change");
  }
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
        std::string why = inbound->goodbye ? RankText(peer.rank) + " closed its fabric endpoint"
                                           : inbound->failure;
        peer.arrived.erase(it);
        ++peer.next_receive;
        LoseLocked(peer, why);
        return true;
      }
    }
    InboundMessage& message = inbound->message;
    std::uint32_t body_length = message.header.body_length;
    std::string error;
    if (inbound->state == Inbound::State::kRendezvous) {
      // The payload's memory is named now, with every earlier frame handed over; then UCX
      // fetches the data straight into it.
      void* target = RendezvousTarget(peer, *inbound, &error);
      if (target == nullptr && error.empty()) return moved;  // waits for its receive
      moved = true;
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
    moved = true;
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

// A raw message's receive is often posted microseconds after the announcement of its data
// arrives: in a ping-pong the receiver is still finishing its own send. Fetched at once, the data
// would land in a buffer of the message's own and be copied again into the receive, which
// halved the rate of large messages (45% of 1 MiB ping-pong messages over UCX's shared memory
// found no receive). So the data stays at the sender for a while (wait_for_receive_ms_), while
// the node may still name memory for it. A later frame from the same peer ends the wait at once:
// it must not queue behind a receive that may be far off. A wait that runs out means the
// receiver is busy elsewhere (computing, or polling with lmdx_try_recv, which posts nothing): the
// peer's frames then go on at once, as before, until one finds its receive posted ahead, so a
// sender that runs ahead of its receiver pays one wait, not one per message. The limit also keeps
// programs that send large messages both ways before receiving (which rendezvous alone would
// deadlock) going.
void* FabricTransport::RendezvousTarget(Peer& peer, Inbound& inbound, std::string* error) {
  InboundMessage& message = inbound.message;
  auto place = [&] {
    message.payload = host_.PlacePayload(message.header, message.body);
    message.payload_placed = message.payload != nullptr;
    return message.payload_placed;
  };
  if (!inbound.body_in_data) {
    bool waiting = inbound.place_by_ms >= 0;
    // Asked for before the look, so that a receive posted just after it still wakes a look (a
    // receiver that parks never polls).
    if (waiting) host_.WakeOnNextReceive();
    bool may_wait = host_.MayPlaceLater(message.header);
    if (place()) {
      if (may_wait && !waiting) {
        std::lock_guard lock(ucx_mutex_);
        peer.waits_for_receives = true;  // this receiver posts ahead
      }
      return message.payload;
    }
    if (may_wait && !waiting) {
      {
        std::lock_guard lock(ucx_mutex_);
        may_wait = peer.waits_for_receives;
      }
      if (may_wait) {
        host_.WakeOnNextReceive();
        if (place()) return message.payload;  // posted between the first look and the notice
      }
    }
    if (may_wait) {
      std::int64_t now = MonotonicMs();
      std::int64_t wait_ms = wait_for_receive_ms_.load(std::memory_order_relaxed);
      std::lock_guard lock(ucx_mutex_);
      if (!waiting) inbound.place_by_ms = now + wait_ms;
      bool later_frame_waits = peer.arrived.size() > 1;
      if (!later_frame_waits && now < inbound.place_by_ms && !closing_ && !peer.lost) {
        peers_waiting_for_receives_.insert(peer.rank);
        if (!waiting) {
          // Nobody may poll meanwhile: the progress thread ends the wait if a poll does not.
          engine_.PostAfter(static_cast<int>(wait_ms) + 1, [this] { OnPlacementDeadline(); });
        }
        return nullptr;
      }
      if (waiting && !later_frame_waits) peer.waits_for_receives = false;  // it ran out
    }
  }
  internal::PayloadBuffer& buffer = inbound.body_in_data ? inbound.own_data : message.owned_payload;
  try {
    buffer = internal::AllocatePayload(inbound.length);
  } catch (const std::bad_alloc&) {
    *error = "cannot allocate " + std::to_string(inbound.length) + " bytes for an incoming message";
    return nullptr;
  }
  if (!inbound.body_in_data) message.payload = buffer.get();
  return buffer.get();
}

void FabricTransport::OnPlacementDeadline() {
  {
    std::lock_guard lock(ucx_mutex_);
    if (closing_) return;
  }
  Deliver();
}

bool FabricTransport::HandOverQuickFrames(std::vector<QuickFrame>& frames) {
  if (frames.empty()) return false;
  int failed_source = -1;  // a peer lost here: its later frames are not handed over
  for (QuickFrame& quick : frames) {
    if (quick.header.source == failed_source) continue;
    // A raw frame that carries nothing besides what a small raw message does, sent on the
    // express lane or not, skips the frame.
    if (internal::HandOverSmallRaw(host_, quick.header, quick.bytes.data(), quick.bytes.size())) {
      continue;
    }
    InboundMessage message;
    message.header = quick.header;
    std::uint32_t body_length = quick.header.body_length;
    message.body.assign(reinterpret_cast<const char*>(quick.bytes.data()), body_length);
    std::string error;
    if (!internal::TakePayloadFrom(quick.bytes.data() + body_length, host_, message, &error)) {
      std::lock_guard lock(ucx_mutex_);
      LoseLocked(*peers_[static_cast<std::size_t>(message.header.source)], error);
      failed_source = message.header.source;
      continue;
    }
    host_.OnMessage(std::move(message));
  }
  frames.clear();
  return true;
}

bool FabricTransport::Deliver() {
  std::vector<std::pair<std::function<void(bool)>, bool>> finished;
  std::set<int> ready;
  std::vector<QuickFrame> quick = std::move(quick_spare_);
  std::vector<std::pair<int, std::string>> lost;
  bool found;
  {
    std::lock_guard lock(ucx_mutex_);
    quick.swap(quick_frames_);
    finished.swap(finished_sends_);
    ready.swap(peers_with_arrivals_);
    if (!closing_) lost.swap(lost_);
    // Frames waiting for their receives are looked at again, but they are nothing found.
    found = !finished.empty() || !ready.empty();
    ready.insert(peers_waiting_for_receives_.begin(), peers_waiting_for_receives_.end());
    peers_waiting_for_receives_.clear();
  }
  // Before any frame still in the peers' maps: a quick frame came ahead of all of them.
  bool handed_over = HandOverQuickFrames(quick);
  found |= handed_over;
  quick_spare_ = std::move(quick);
  for (auto& [on_sent, sent] : finished) {
    if (on_sent) on_sent(sent);
  }
  for (int rank : ready) AdvancePeer(*peers_[static_cast<std::size_t>(rank)]);
  if (!ready.empty() || handed_over) {
    // Advancing a peer (or a quick frame's payload) may have lost it meanwhile.
    std::lock_guard lock(ucx_mutex_);
    if (!closing_) {
      lost.insert(lost.end(), std::make_move_iterator(lost_.begin()),
                  std::make_move_iterator(lost_.end()));
      lost_.clear();
    }
  }
  for (const auto& [rank, why] : lost) host_.OnPeerLost(rank, why);
  return found || !lost.empty();
}

}  // namespace lmdx::net

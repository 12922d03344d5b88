// A node's messages: sends (blocking, asynchronous, raw), requests and replies, and the frames
// that arrive, placed, counted and dispatched. Its start, networks and end are node.cc's.
#include <algorithm>
#include <cstring>
#include <optional>

#include "base/error.h"
#include "base/log.h"
#include "net/internal/node_helpers.h"
#include "net/node.h"
#include "net/wire.pb.h"

namespace lmdx::net {
namespace {

using internal::AddAsDispatcher;
using internal::NetworkIndex;
using internal::Rank;

}  // namespace

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

std::optional<OutgoingMessage> Node::NumberedRaw(int dest, std::int32_t tag, Payload& payload,
                                                 int network) {
  RawBody raw;
  raw.tag = tag;
  raw.sequence =
      raw_sequence_[static_cast<std::size_t>(dest)].fetch_add(1, std::memory_order_relaxed);
  if (payload.size <= SmallRaw::kMaxPayload) {
    Transport* transport = ReadyRoute(dest, network);
    SmallRaw small{
        info_.rank,  dest, tag, raw.sequence, static_cast<const std::uint8_t*>(payload.data),
        payload.size};
    if (transport != nullptr && transport->SendRawNow(small)) {
      CountSent(MessageType::kRaw, RawBody::kSize + payload.size);
      return std::nullopt;
    }
  }
  OutgoingMessage message;
  message.header.type = MessageType::kRaw;
  message.body = raw.Encode();
  message.payload = std::move(payload);
  return message;
}

void Node::SendRaw(int dest, std::int32_t tag, Payload payload, std::string_view network) {
  int index = RawNetworkIndex(dest, network);
  std::optional<OutgoingMessage> message = NumberedRaw(dest, tag, payload, index);
  if (message) SendBlocking(dest, std::move(*message), index);
}

void Node::SendRawAsync(int dest, std::int32_t tag, Payload payload, std::string_view network,
                        std::function<void(bool)> on_sent) {
  int index = RawNetworkIndex(dest, network);
  std::optional<OutgoingMessage> message = NumberedRaw(dest, tag, payload, index);
  if (!message) {
    on_sent(true);
    return;
  }
  message->on_sent = std::move(on_sent);
  SendFrame(dest, std::move(*message), index, /*may_block=*/false);
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

}  // namespace lmdx::net

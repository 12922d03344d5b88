#include "net/mailbox.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/log.h"
#include "base/small_copy.h"

namespace lmdx::net {

Mailbox::Result Mailbox::Truncated(int source, int tag, std::size_t length, std::size_t capacity) {
  Result result;
  result.code = LMDX_ERR_TRUNCATED;
  result.source = source;
  result.tag = tag;
  result.length = length;
  result.error = "the message from rank " + std::to_string(source) + " (tag " +
                 std::to_string(tag) + ") is " + std::to_string(length) +
                 " bytes, longer than the receive buffer of " + std::to_string(capacity) +
                 " bytes; it stays queued";
  return result;
}

Mailbox::SourceOrder& Mailbox::OrderOf(int source) {
  auto index = static_cast<std::size_t>(source);
  if (index >= sources_.size()) sources_.resize(index + 1);
  return sources_[index];
}

void Mailbox::Post(Posted* posted) {
  posted->listed = true;
  posted->prev = last_posted_;
  posted->next = nullptr;
  (last_posted_ != nullptr ? last_posted_->next : first_posted_) = posted;
  last_posted_ = posted;
}

void Mailbox::Unlist(Posted* posted) {
  (posted->prev != nullptr ? posted->prev->next : first_posted_) = posted->next;
  (posted->next != nullptr ? posted->next->prev : last_posted_) = posted->prev;
  posted->listed = false;
}

void Mailbox::Complete(Posted* posted) {
  Unlist(posted);
  posted->done.SetBytesMoved(posted->result.length);
  posted->done.Signal();
}

std::optional<Mailbox::Result> Mailbox::TakeUnexpectedLocked(int source, int tag, void* buffer,
                                                             std::size_t capacity) {
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    int from = it->message.header.source;
    if (!Matches(source, tag, from, it->tag)) continue;
    std::size_t length = static_cast<std::size_t>(it->message.header.payload_length);
    if (length > capacity) return Truncated(from, it->tag, length, capacity);
    CopySmall(buffer, it->message.payload, length);
    Result result{LMDX_OK, from, it->tag, length, {}};
    unexpected_.erase(it);
    return result;
  }
  return std::nullopt;
}

Mailbox::Result Mailbox::Receive(int source, int tag, void* buffer, std::size_t capacity,
                                 bool wait) {
  Posted posted(source, tag, static_cast<std::uint8_t*>(buffer), capacity);
  {
    std::lock_guard lock(mutex_);
    if (std::optional<Result> taken = TakeUnexpectedLocked(source, tag, buffer, capacity)) {
      return std::move(*taken);
    }
    if (!wait) return Result{1, -1, -1, 0, {}};
    Post(&posted);
    posted.done.SetWaitsInBursts();
  }
  if (notice_next_post_.load(std::memory_order_acquire) &&
      notice_next_post_.exchange(false, std::memory_order_acq_rel) && on_posted_) {
    on_posted_();
  }
  WaitReason reason{"lmdx_recv", {}, source};
  if (!posted.done.WaitUnlessInterrupted(&reason)) {
    std::lock_guard lock(mutex_);
    if (posted.listed && !posted.claimed) {
      Unlist(&posted);
      return Result{LMDX_ERR_SHUTDOWN, -1, -1, 0, "the thread was killed while it waited"};
    }
    // A message is being read into the buffer already: the receive completes.
  }
  posted.done.Wait(&reason);
  return std::move(posted.result);
}

std::unique_ptr<Mailbox::PendingReceive> Mailbox::Start(int source, int tag, void* buffer,
                                                        std::size_t capacity) {
  auto pending =
      std::make_unique<PendingReceive>(source, tag, static_cast<std::uint8_t*>(buffer), capacity);
  Posted& posted = pending->posted;
  {
    std::lock_guard lock(mutex_);
    if (std::optional<Result> taken = TakeUnexpectedLocked(source, tag, buffer, capacity)) {
      posted.result = std::move(*taken);
      posted.done.Signal();
      return pending;
    }
    Post(&posted);
  }
  if (notice_next_post_.load(std::memory_order_acquire) &&
      notice_next_post_.exchange(false, std::memory_order_acq_rel) && on_posted_) {
    on_posted_();
  }
  return pending;
}

bool Mailbox::Done(const PendingReceive& pending) { return pending.posted.done.done(); }

Mailbox::Result Mailbox::Finish(PendingReceive& pending) {
  Posted& posted = pending.posted;
  WaitReason reason{"lmdx_wait_request (a receive)", {}, posted.source};
  if (!posted.done.WaitUnlessInterrupted(&reason)) {
    std::lock_guard lock(mutex_);
    if (posted.listed && !posted.claimed) {
      Unlist(&posted);
      return Result{LMDX_ERR_SHUTDOWN, -1, -1, 0, "the thread was killed while it waited"};
    }
  }
  posted.done.Wait(&reason);
  return std::move(posted.result);
}

void Mailbox::Withdraw(PendingReceive& pending) {
  Posted& posted = pending.posted;
  {
    std::lock_guard lock(mutex_);
    if (posted.listed && !posted.claimed) {
      Unlist(&posted);
      return;
    }
  }
  posted.done.Wait();
}

std::uint8_t* Mailbox::Place(const FrameHeader& header, const std::string& body) {
  std::optional<RawBody> raw = RawBody::Decode(body);
  if (!raw || header.source < 0) return nullptr;
  std::lock_guard lock(mutex_);
  // A message that overtook an earlier one of its source (it came over another network) waits in
  // a buffer of its own until the earlier one has been matched.
  if (OrderOf(header.source).next != raw->sequence) return nullptr;
  for (Posted* posted = first_posted_; posted != nullptr; posted = posted->next) {
    if (posted->claimed || !Matches(posted->source, posted->tag, header.source, raw->tag)) {
      continue;
    }
    // The first matching receive is this message's; if it is too small, the message is queued
    // and Deliver reports the truncation.
    if (header.payload_length > posted->capacity) return nullptr;
    posted->claimed = true;
    posted->claimed_by = header.source;
    return posted->buffer;
  }
  return nullptr;
}

// Callers hold mutex_; message is the next message of its source.
void Mailbox::DeliverInOrder(InboundMessage& message, int tag) {
  int source = message.header.source;
  std::size_t length = static_cast<std::size_t>(message.header.payload_length);
  for (Posted* posted = first_posted_; posted != nullptr; posted = posted->next) {
    if (posted->claimed || !Matches(posted->source, posted->tag, source, tag)) continue;
    if (length > posted->capacity) {
      posted->result = Truncated(source, tag, length, posted->capacity);
      KeepPayload(message);
      unexpected_.push_back(Queued{std::move(message), tag});
    } else {
      CopySmall(posted->buffer, message.payload, length);
      // Field by field: a whole Result built and moved in cost a string's move on every receive.
      posted->result.code = LMDX_OK;
      posted->result.source = source;
      posted->result.tag = tag;
      posted->result.length = length;
    }
    Complete(posted);
    return;
  }
  KeepPayload(message);
  unexpected_.push_back(Queued{std::move(message), tag});
}

void Mailbox::Deliver(InboundMessage&& message) {
  int source = message.header.source;
  std::optional<RawBody> raw = RawBody::Decode(message.body);
  if (!raw || source < 0) {
    LogLine("a raw message from rank " + std::to_string(source) + " has a body of " +
            std::to_string(message.body.size()) + " bytes instead of " +
            std::to_string(RawBody::kSize) + "; dropped");
    return;
  }
  DeliverNumbered(message, raw->tag, raw->sequence);
}

void Mailbox::DeliverSmall(const SmallRaw& raw) {
  if (raw.source < 0) return;
  std::lock_guard lock(mutex_);
  if (TakeSmallLocked(raw, /*only_this_thread=*/false)) return;
  InboundMessage message = BorrowedRawFrame(raw);
  DeliverNumberedLocked(message, raw.tag, raw.sequence);
}

bool Mailbox::DeliverSmallToThisThread(const SmallRaw& raw) {
  if (raw.source < 0) return false;
  std::lock_guard lock(mutex_);
  return TakeSmallLocked(raw, /*only_this_thread=*/true);
}

bool Mailbox::TakeSmallLocked(const SmallRaw& raw, bool only_this_thread) {
  SourceOrder& order = OrderOf(raw.source);
  // Messages that came early follow this one, maybe to receives of other threads.
  if (raw.sequence != order.next || !order.early.empty()) return false;
  for (Posted* posted = first_posted_; posted != nullptr; posted = posted->next) {
    if (posted->claimed || !Matches(posted->source, posted->tag, raw.source, raw.tag)) continue;
    if (raw.length > posted->capacity) return false;  // the frame's way reports the truncation
    if (only_this_thread && !posted->done.DrivenOnThisThread()) return false;
    CopySmall(posted->buffer, raw.payload, raw.length);
    posted->result.code = LMDX_OK;
    posted->result.source = raw.source;
    posted->result.tag = raw.tag;
    posted->result.length = raw.length;
    Complete(posted);
    ++order.next;
    return true;
  }
  return false;
}

void Mailbox::DeliverNumbered(InboundMessage& message, int tag, std::uint64_t sequence) {
  std::lock_guard lock(mutex_);
  DeliverNumberedLocked(message, tag, sequence);
}

void Mailbox::DeliverNumberedLocked(InboundMessage& message, int tag, std::uint64_t sequence) {
  int source = message.header.source;
  SourceOrder& order = OrderOf(source);
  if (message.payload_placed) {
    // Place gave this message a posted receive's buffer: that receive is complete.
    for (Posted* posted = first_posted_; posted != nullptr; posted = posted->next) {
      if (!posted->claimed || posted->buffer != message.payload) continue;
      posted->result =
          Result{LMDX_OK, source, tag, static_cast<std::size_t>(message.header.payload_length), {}};
      Complete(posted);
      break;
    }
  } else if (sequence != order.next) {
    if (sequence < order.next) {
      LogLine("a raw message from rank " + std::to_string(source) + " repeats number " +
              std::to_string(sequence) + "; dropped");
      return;
    }
    KeepPayload(message);
    order.early.emplace(sequence, Queued{std::move(message), tag});
    return;
  } else {
    DeliverInOrder(message, tag);
  }
  ++order.next;
  while (!order.early.empty() && order.early.begin()->first == order.next) {
    auto early = order.early.extract(order.early.begin());
    DeliverInOrder(early.mapped().message, early.mapped().tag);
    ++order.next;
  }
}

void Mailbox::FailSource(int source, const std::string& why) {
  std::lock_guard lock(mutex_);
  for (Posted* posted = first_posted_; posted != nullptr;) {
    Posted* next = posted->next;
    bool waits_on_source =
        posted->claimed ? posted->claimed_by == source : posted->source == source;
    if (waits_on_source) {
      posted->result.code = LMDX_ERR_PEER_LOST;
      posted->result.source = source;
      posted->result.error = why;
      Complete(posted);
    }
    posted = next;
  }
}

}  // namespace lmdx::net

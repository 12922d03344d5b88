#include "net/mailbox.h"

#include <cstring>

namespace lmdx::net {

Mailbox::Result Mailbox::Truncated(int source, std::size_t length, std::size_t capacity) {
  Result result;
  result.code = LMDX_ERR_TRUNCATED;
  result.source = source;
  result.length = length;
  result.error = "the message from rank " + std::to_string(source) + " is " +
                 std::to_string(length) + " bytes, longer than the receive buffer of " +
                 std::to_string(capacity) + " bytes; it stays queued";
  return result;
}

Mailbox::Result Mailbox::Receive(int source, void* buffer, std::size_t capacity, bool wait) {
  Posted posted(source, static_cast<std::uint8_t*>(buffer), capacity);
  {
    std::lock_guard lock(mutex_);
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
      int from = it->header.source;
      if (source != LMDX_ANY_SOURCE && source != from) continue;
      std::size_t length = static_cast<std::size_t>(it->header.payload_length);
      if (length > capacity) return Truncated(from, length, capacity);
      if (length > 0) std::memcpy(buffer, it->payload, length);
      unexpected_.erase(it);
      return Result{LMDX_OK, from, length, {}};
    }
    if (!wait) return Result{1, -1, 0, {}};
    posted_.push_back(&posted);
  }
  posted.done.Wait();
  return posted.result;
}

std::uint8_t* Mailbox::Place(int source, std::uint64_t length) {
  std::lock_guard lock(mutex_);
  for (Posted* posted : posted_) {
    if (posted->claimed || !Matches(*posted, source)) continue;
    // The first matching receive is this message's; if it is too small, the message is queued
    // and Deliver reports the truncation.
    if (length > posted->capacity) return nullptr;
    posted->claimed = true;
    posted->claimed_by = source;
    return posted->buffer;
  }
  return nullptr;
}

void Mailbox::Deliver(InboundMessage message) {
  int source = message.header.source;
  std::size_t length = static_cast<std::size_t>(message.header.payload_length);
  std::lock_guard lock(mutex_);
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    Posted* posted = *it;
    if (message.payload_placed) {
      if (!posted->claimed || posted->buffer != message.payload) continue;
    } else if (posted->claimed || !Matches(*posted, source)) {
      continue;
    }
    if (!message.payload_placed) {
      if (length > posted->capacity) {
        posted->result = Truncated(source, length, posted->capacity);
        unexpected_.push_back(std::move(message));
      } else {
        if (length > 0) std::memcpy(posted->buffer, message.payload, length);
        posted->result = Result{LMDX_OK, source, length, {}};
      }
    } else {
      posted->result = Result{LMDX_OK, source, length, {}};
    }
    posted_.erase(it);
    posted->done.Signal();
    return;
  }
  unexpected_.push_back(std::move(message));
}

void Mailbox::FailSource(int source, const std::string& why) {
  std::lock_guard lock(mutex_);
  for (auto it = posted_.begin(); it != posted_.end();) {
    Posted* posted = *it;
    bool waits_on_source =
        posted->claimed ? posted->claimed_by == source : posted->source == source;
    if (!waits_on_source) {
      ++it;
      continue;
    }
    posted->result.code = LMDX_ERR_PEER_LOST;
    posted->result.source = source;
    posted->result.error = why;
    it = posted_.erase(it);
    posted->done.Signal();
  }
}

}  // namespace lmdx::net

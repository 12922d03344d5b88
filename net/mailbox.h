#ifndef LMDX_NET_MAILBOX_H_
#define LMDX_NET_MAILBOX_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <string>

#include <lmdx/lmdx.h>

#include "net/completion.h"
#include "net/message.h"

namespace lmdx::net {

// Raw messages (lmdx_send/lmdx_recv) waiting for their receivers, and receivers waiting for
// their messages. A receive posted before its message arrives gets the payload read straight
// from the socket into the user's buffer, so a large message is never copied on the way in.
// Messages from one source are received in the order they were sent.
class Mailbox {
 public:
  struct Result {
    int code = LMDX_OK;  // LMDX_OK, LMDX_ERR_TRUNCATED, LMDX_ERR_PEER_LOST, or 1: nothing waiting
    int source = -1;
    std::size_t length = 0;
    std::string error;  // the full text when code < 0
  };

  // Application threads. wait=false returns code 1 at once when nothing matches.
  Result Receive(int source, void* buffer, std::size_t capacity, bool wait);

  // Progress thread: where the payload of a raw message from source should go (a posted
  // receive's buffer), or nullptr.
  std::uint8_t* Place(int source, std::uint64_t length);
  // Progress thread: a whole raw message arrived (its payload placed or not).
  void Deliver(InboundMessage message);
  // A source vanished: receives waiting for it alone, or filling from it, fail.
  void FailSource(int source, const std::string& why);

 private:
  struct Posted {
    Posted(int source, std::uint8_t* buffer, std::size_t capacity)
        : source(source), buffer(buffer), capacity(capacity) {}
    int source;
    std::uint8_t* buffer;
    std::size_t capacity;
    bool claimed = false;  // a message is being read into buffer
    int claimed_by = -1;
    Result result;
    Completion done;
  };
  bool Matches(const Posted& posted, int source) const {
    return posted.source == LMDX_ANY_SOURCE || posted.source == source;
  }
  static Result Truncated(int source, std::size_t length, std::size_t capacity);

  std::mutex mutex_;
  std::deque<InboundMessage> unexpected_;
  std::list<Posted*> posted_;  // in posting order
};

}  // namespace lmdx::net

#endif  // LMDX_NET_MAILBOX_H_

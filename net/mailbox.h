#ifndef LMDX_NET_MAILBOX_H_
#define LMDX_NET_MAILBOX_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <lmdx/lmdx.h>

#include "net/completion.h"
#include "net/message.h"

namespace lmdx::net {

// Raw messages (lmdx_send/lmdx_recv) waiting for their receivers, and receivers waiting for
// their messages. A receive posted before its message arrives gets the payload read straight
// from the socket into the user's buffer, so a large message is never copied on the way in.
// Messages from one source are matched in the order they were sent (by their sequence number,
// whichever network carried them); a receive takes the first message that matches its source and
// tag.
class Mailbox {
 public:
  struct Result {
    int code = LMDX_OK;  // LMDX_OK, LMDX_ERR_TRUNCATED, LMDX_ERR_PEER_LOST, or 1: nothing waiting
    int source = -1;
    int tag = -1;
    std::size_t length = 0;
    std::string error;  // the full text when code < 0
  };

  // Application threads. source may be LMDX_ANY_SOURCE, tag LMDX_ANY_TAG. wait=false returns
  // code 1 at once when nothing matches.
  Result Receive(int source, int tag, void* buffer, std::size_t capacity, bool wait);

  // A receive posted now and finished later (lmdx_irecv), so that the caller computes while its
  // message arrives, straight into buffer when it comes after the post. It lives on the heap;
  // its owner calls Finish, or Withdraw, before destroying it.
  struct PendingReceive;
  std::unique_ptr<PendingReceive> Start(int source, int tag, void* buffer, std::size_t capacity);
  // True once the receive has its message, or has failed: Finish then returns at once.
  static bool Done(const PendingReceive& pending);
  // Waits for the message (a killed LMDX thread stops waiting, as in Receive) and returns what
  // Receive would have.
  Result Finish(PendingReceive& pending);
  // Takes back a receive nobody will finish; one whose message is being read in is waited for,
  // since the transport writes into its buffer.
  void Withdraw(PendingReceive& pending);

  // Progress thread: where the payload of this raw frame should go (a posted receive's buffer),
  // or nullptr. A frame that overtook an earlier one of its source is never placed.
  std::uint8_t* Place(const FrameHeader& header, const std::string& body);
  // Progress thread: a whole raw message arrived (its payload placed or not).
  void Deliver(InboundMessage&& message);
  // Progress thread: a small raw message came whole on the express lane; its payload is borrowed
  // for the call. Spares it the frame it would otherwise be built into.
  void DeliverSmall(const SmallRaw& raw);
  // DeliverSmall, but only when raw completes a receive that the calling thread drives
  // (Completion::DrivenOnThisThread): then nothing is woken and no lock but this one is taken, so
  // a transport may call it inside its own lock. False, with nothing done, otherwise.
  bool DeliverSmallToThisThread(const SmallRaw& raw);
  // A transport keeps a raw message's data at its sender until a receive names memory for it
  // (TransportHost::WakeOnNextReceive): the next receive posted calls on_posted (outside the lock),
  // which wakes whoever must look again. A receiving thread that parks never polls the network
  // itself. Asked again for each wait.
  void NoticeNextPost() { notice_next_post_.store(true, std::memory_order_release); }
  void SetPostedHook(std::function<void()> on_posted) { on_posted_ = std::move(on_posted); }
  // A source vanished: receives waiting for it alone, or filling from it, fail.
  void FailSource(int source, const std::string& why);

 private:
  struct Posted {
    Posted(int source, int tag, std::uint8_t* buffer, std::size_t capacity)
        : source(source), tag(tag), buffer(buffer), capacity(capacity) {}
    int source;
    int tag;
    std::uint8_t* buffer;
    std::size_t capacity;
    bool claimed = false;  // a message is being read into buffer
    int claimed_by = -1;
    Result result;
    Completion done;
    // In the posted list: linked through the receives themselves, which live on their callers'
    // stacks, so that posting one allocates nothing.
    bool listed = false;
    Posted* prev = nullptr;
    Posted* next = nullptr;
  };

 public:
  struct PendingReceive {
    PendingReceive(int source, int tag, std::uint8_t* buffer, std::size_t capacity)
        : posted(source, tag, buffer, capacity) {}
    Posted posted;
  };

 private:
  struct Queued {
    InboundMessage message;
    int tag;
  };
  // Per source: the sequence number of the next message to match, and those that came early.
  struct SourceOrder {
    std::uint64_t next = 0;
    std::map<std::uint64_t, Queued> early;
  };
  static bool Matches(int want_source, int want_tag, int source, int tag) {
    return (want_source == LMDX_ANY_SOURCE || want_source == source) &&
           (want_tag == LMDX_ANY_TAG || want_tag == tag);
  }
  static Result Truncated(int source, int tag, std::size_t length, std::size_t capacity);
  // The first queued message that matches, copied into buffer (a truncation when too long, the
  // message left queued); nothing when none matches. Callers hold mutex_.
  std::optional<Result> TakeUnexpectedLocked(int source, int tag, void* buffer,
                                             std::size_t capacity);
  SourceOrder& OrderOf(int source);  // callers hold mutex_
  // Deliver once the frame's tag and number are known.
  void DeliverNumbered(InboundMessage& message, int tag, std::uint64_t sequence);
  void DeliverNumberedLocked(InboundMessage& message, int tag, std::uint64_t sequence);
  // The common case of a small message: the next of its source, for a posted receive that can
  // hold it, copied there without the frame it would otherwise be built into. only_this_thread:
  // that receive must be the calling thread's own (DeliverSmallToThisThread). False, with
  // nothing done, otherwise. Callers hold mutex_.
  bool TakeSmallLocked(const SmallRaw& raw, bool only_this_thread);
  // Moves message into the queue only when no receive takes it; callers hold mutex_.
  void DeliverInOrder(InboundMessage& message, int tag);
  void Post(Posted* posted);  // appends; callers hold mutex_
  // Takes posted out of the list and signals its waiter; callers hold mutex_.
  void Complete(Posted* posted);
  void Unlist(Posted* posted);  // callers hold mutex_

  std::atomic<bool> notice_next_post_{false};
  std::function<void()> on_posted_;  // set before the node joins
  std::mutex mutex_;
  std::deque<Queued> unexpected_;
  Posted* first_posted_ = nullptr;  // in posting order
  Posted* last_posted_ = nullptr;
  std::vector<SourceOrder> sources_;  // by rank, grown on demand
};

}  // namespace lmdx::net

#endif  // LMDX_NET_MAILBOX_H_

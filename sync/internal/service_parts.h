// What the sync service's files share: the message types, the manager's state of a name, the
// actions a handler collects, and the texts of errors. Private to sync/.
#ifndef LMDX_SYNC_INTERNAL_SERVICE_PARTS_H_
#define LMDX_SYNC_INTERNAL_SERVICE_PARTS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "net/node.h"
#include "sync/internal/framing.h"
#include "sync/names.h"
#include "sync/service.h"
#include "sync/sync.pb.h"

namespace lmdx::sync {
namespace internal {

// Message types, offsets from net::MessageType::kFirstSync. Fields of wire::SyncMessage used:
enum Offset : int {
  kLockAcquire = 0,      // node -> manager, one-way: name. Join the distributed queue.
  kLockForward = 1,      // manager -> last requester, one-way: name, requester.
  kLockGrant = 2,        // holder -> next holder, one-way: name, payloads (the token).
  kLockError = 3,        // manager -> requester, one-way: name, code, text.
  kLockTry = 4,          // node -> manager, request: name. Reply: flag (acquired), payloads.
  kLockProbe = 5,        // manager -> last requester, one-way: name, requester.
  kLockProbeResult = 6,  // last requester -> manager, one-way: name, flag, payloads.
  kBarrierInit = 7,      // node -> manager, request: name, value (count).
  kBarrierArrive = 8,    // node -> manager, one-way: name, waiter, value (pass), flag (first).
  kBarrierDepart = 9,    // manager -> node, one-way: name, waiters, payloads, round.
  kBarrierError = 10,    // manager -> node, one-way: waiter, code, text.
  kSemaInit = 11,        // node -> manager, request: name, value.
  kSemaP = 12,           // node -> manager, request: name. Reply (when a unit is free): payloads.
  kSemaV = 13,           // node -> manager, request: name, payloads.
  kAllUp = 14,           // child -> parent, one-way: round (epoch), payloads of the subtree.
  kAllDown = 15,         // parent -> child, one-way: round (epoch), payloads of every rank.
};

constexpr int kTreeArity = 4;
constexpr const char* kBarrierAllName = "lmdx_barrier_all";

inline net::MessageType TypeOf(int offset) {
  return static_cast<net::MessageType>(static_cast<int>(net::MessageType::kFirstSync) + offset);
}

inline std::string Rank(int rank) { return "rank " + std::to_string(rank); }

inline std::string Quoted(const Object& object) {
  return std::string(KindName(object.kind)) + " \"" + object.name + "\"";
}

// What a wait throws when its LMDX thread was killed (lmdx_kill_thread) while it waited: the
// API's guard turns it into the thread's end.
inline Error Killed(const Object& object) {
  return Error(LMDX_ERR_SHUTDOWN, "the thread was killed while it waited on " + Quoted(object));
}

inline std::vector<std::string> PayloadsOf(const wire::SyncMessage& message) {
  return {message.payloads().begin(), message.payloads().end()};
}

inline std::string KindConflict(const std::string& name, ObjectKind is, ObjectKind used_as,
                                int by) {
  return "\"" + name + "\" is a " + KindName(is) + ", so " + Rank(by) + " cannot use it as a " +
         KindName(used_as);
}

}  // namespace internal

// The manager's state of one name.
struct Service::Managed {
  ObjectKind kind;
  // Locks: the tail of the distributed queue, and a trylock probe under way.
  int last = -1;
  bool probing = false;
  net::ReplyTo probe_reply;
  int probe_requester = -1;
  struct HeldBack {
    int source;
    std::string body;
    std::optional<net::ReplyTo> try_reply;
  };
  std::deque<HeldBack> held_back;  // requests that came during a probe, in order
  // Barriers.
  int count = 0;  // 0 until initialized
  bool broken = false;
  std::string broken_text;
  std::uint64_t round = 0;
  int arrived = 0;
  std::map<int, std::vector<std::uint64_t>> waiting;  // waiter ids by node
  // Every thread that ever arrived, as (node, thread): count is the number of participating
  // threads, so one more than count can never be served.
  std::set<std::pair<int, std::uint64_t>> participants;
  std::vector<std::string> payloads;
  // Semaphores.
  bool sema_ready = false;
  std::int64_t init_value = 0;
  std::int64_t init_units = 0;    // units from init, which carry no payload
  std::deque<std::string> units;  // units from sema_v, with their payloads
  // A thread waiting in lmdx_sema_p: of another node (answered by a reply), or of the manager's
  // own node (woken in place: a semaphore managed here costs its threads no message).
  struct PWaiter {
    std::optional<net::ReplyTo> remote;
    std::shared_ptr<Waiter> local;  // also in waiters_ under id, until woken or killed
    std::uint64_t id = 0;
  };
  std::deque<PWaiter> p_waiters;  // first come, first served
};

struct Service::Actions {
  struct Out {
    int dest;
    int offset;
    internal::Framed frame;
  };
  struct Err {
    net::ReplyTo to;
    lmdx_error code;
    std::string text;
  };
  std::vector<Out> sends;
  std::vector<std::pair<net::ReplyTo, internal::Framed>> replies;
  std::vector<Err> errors;
  std::vector<std::shared_ptr<Waiter>> wakes;

  void Send(int dest, int offset, wire::SyncMessage message) {
    sends.push_back({dest, offset, internal::Frame(std::move(message))});
  }
  void Wake(std::shared_ptr<Waiter> waiter, lmdx_error code = LMDX_OK, std::string text = {}) {
    waiter->code = code;
    waiter->text = std::move(text);
    wakes.push_back(std::move(waiter));
  }
};

}  // namespace lmdx::sync

#endif  // LMDX_SYNC_INTERNAL_SERVICE_PARTS_H_

// The sync layer of one node: the local side of every named lock, barrier and semaphore this node
// uses, and the manager side of those whose names hash to it. The protocols are described in
// docs/sync.md.
//
// Blocking calls (Lock, Barrier, SemaP, ...) block only the calling thread, in net::Completion, so
// the node keeps serving other requests meanwhile. Every call is thread-safe. Failures throw
// lmdx::Error; misuse (LMDX_ERR_MISUSE) names the object and the rank.
#ifndef LMDX_SYNC_SERVICE_H_
#define LMDX_SYNC_SERVICE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "net/completion.h"
#include "net/node.h"
#include "sync/consistency_hooks.h"

namespace lmdx::sync {

namespace wire {
class SyncMessage;
}

// A thread blocked in a sync call; whoever completes the call fills it in and signals.
struct Waiter {
  net::Completion done;
  lmdx_error code = LMDX_OK;
  std::string text;
  std::vector<std::string> payloads;
  std::uint64_t round = 0;
  std::uint64_t thread = 0;  // net::CurrentThreadKey() of the waiting thread
};

// This node's view of one named object. Handles given to the C API point to these; they live as
// long as the node.
struct Object {
  std::string name;
  ObjectKind kind;
  int manager;

  // Locks: the distributed queue's local end.
  bool token_here = false;                    // the lock's token is at this node
  bool held = false;                          // a thread of this node holds it
  std::uint64_t holder = 0;                   // net::CurrentThreadKey() of the holding thread
  std::deque<std::shared_ptr<Waiter>> queue;  // threads of this node waiting, in order
  bool requested = false;                     // this node's request is in the distributed queue
  bool trying = false;                        // a remote trylock of this node is under way
  int next = -1;                              // the node the token goes to at the next release
  std::string released;                       // the payload of the last release, token at rest
  std::string next_knowledge;                 // what `next` already knows (its request said)
};

class Service {
 public:
  explicit Service(net::Node& node);
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Installs the message handlers; called before the node joins the job.
  void RegisterHandlers();

  // The object named name, as kind; a name this node already uses as another kind is misuse.
  Object* Find(std::string_view name, ObjectKind kind);

  void Lock(Object* lock);
  // True when acquired, false when the lock is busy.
  bool TryLock(Object* lock);
  void Unlock(Object* lock);
  // Releases every lock the calling thread holds: an LMDX thread that ends killed may hold some,
  // and nobody else could release them.
  void ReleaseLocksOfCaller();

  void BarrierInit(Object* barrier, int count);
  void Barrier(Object* barrier);
  void BarrierAll();

  void SemaInit(Object* sema, int value);
  void SemaP(Object* sema);
  void SemaV(Object* sema);

  int rank() const { return node_.rank(); }

  // A peer was lost (net::Node's observer): every waiting call fails with LMDX_ERR_PEER_LOST,
  // and so does every later blocking call, since the grant, departure or unit it waits for may
  // have been the lost node's to send.
  void OnPeerLost(const std::string& why);

  // Adds a line for each lock a thread of this node holds, and for each barrier and semaphore
  // this node manages that has threads waiting (net/wait_board.h's hang report).
  void Describe(std::vector<std::string>& lines);

 private:
  struct Managed;
  struct Actions;

  // Manager side, and the handlers; all run under mutex_ and only collect what to send.
  Managed& ManagedLocked(const std::string& name, ObjectKind kind, int from, Actions& actions,
                         bool& kind_ok);
  Object& ObjectLocked(const std::string& name, ObjectKind kind);
  bool ManagerLockRequest(int source, const wire::SyncMessage& message,
                          const std::optional<net::ReplyTo>& try_reply, Actions& actions);
  void ForwardLocked(Object& lock, int requester, std::string knowledge, Actions& actions);
  // This node joins lock's distributed queue, saying what it knows (ConsistencyHooks::Knowledge).
  void RequestLockLocked(const Object& lock, Actions& actions);
  // The token leaves for lock.next with the payload of the last release, trimmed to what next
  // lacks.
  void SendTokenLocked(Object& lock, Actions& actions);
  void ProbeLocked(Object& lock, int requester, Actions& actions);
  void GrantLocked(Object& lock, std::string payload, Actions& actions);
  void ServeLocalLocked(Object& lock, Actions& actions);
  void FailLockWaitersLocked(Object& lock, lmdx_error code, const std::string& text,
                             Actions& actions);
  void BarrierArriveLocked(int source, const wire::SyncMessage& message, Actions& actions);
  // Semaphores (semaphores.cc). Each throws lmdx::Error (misuse, naming the semaphore, call and
  // rank) on a kind conflict, a second init with another value, or a use before init.
  // The manager's entry of name, which must be a semaphore (initialized or not).
  Managed& SemaphoreEntryLocked(const std::string& name, int source);
  void SemaInitLocked(const std::string& name, std::int64_t value, int source);
  Managed& SemaphoreLocked(const std::string& name, int source, const char* call);
  // A free unit's payloads (none for a unit of the initial value), or nullopt when none is free.
  std::optional<std::vector<std::string>> SemaTakeLocked(Managed& managed);
  // A V's unit: to the first waiting thread, of whichever node, or kept.
  void SemaGiveLocked(Managed& managed, std::string payload, Actions& actions);
  // A P's unit's payloads: taken in place from a semaphore managed here, or asked of its manager.
  std::vector<std::string> LocalSemaP(const Object& sema);
  std::vector<std::string> RemoteSemaP(const Object& sema);
  void MergePayloads(std::vector<std::string>& payloads);
  void AllTryAdvanceLocked(std::uint64_t epoch, Actions& actions);
  void AllDepartLocked(std::uint64_t epoch, std::vector<std::string> payloads, Actions& actions);
  void Run(Actions& actions);
  void ThrowIfLostLocked() const;

  void Handle(int offset, net::Node::Handler handler);
  std::shared_ptr<Waiter> NewWaiterLocked(std::uint64_t& id);
  void WaitFor(Waiter& waiter, const net::WaitReason& reason);

  net::Node& node_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Object>> objects_;
  std::unordered_map<std::string, std::unique_ptr<Managed>> managed_;
  // Threads of this node waiting for a barrier, or for a semaphore managed here, by id.
  std::unordered_map<std::uint64_t, std::shared_ptr<Waiter>> waiters_;
  std::uint64_t next_waiter_ = 1;
  std::string lost_;  // why a peer was lost; empty while all are there

  // lmdx_barrier_all: a tree over the ranks.
  std::uint64_t all_epoch_ = 0;         // the epoch this node's caller is in or enters next
  std::shared_ptr<Waiter> all_waiter_;  // this node's caller, while it waits
  std::string all_own_payload_;         // its release payload
  struct AllArrivals {
    int children = 0;
    std::vector<std::string> payloads;
  };
  std::map<std::uint64_t, AllArrivals> all_arrivals_;  // from children, by epoch
};

// Creates this node's sync service and registers its handlers (a net::Node::Setup).
void Attach(net::Node& node);
// The service of the current node; throws LMDX_ERR_NOT_INITIALIZED when there is none.
Service& Current();

}  // namespace lmdx::sync

#endif  // LMDX_SYNC_SERVICE_H_

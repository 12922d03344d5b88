// The consistency events of synchronisation. Every release (unlock, semaphore V, barrier arrival)
// asks the protocol for a payload that travels with the outgoing message; every acquire (lock
// grant, successful semaphore P, barrier departure) hands the payloads received to the protocol
// before the calling thread continues. The DSM protocols (blueprint section 6) implement this
// interface: write notices, vector time or diffs go in the payload. Until they exist, a null
// protocol sends nothing.
#ifndef LMDX_SYNC_CONSISTENCY_HOOKS_H_
#define LMDX_SYNC_CONSISTENCY_HOOKS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace lmdx::sync {

// kThread: a thread's start (the starter releases, the new thread acquires) and its end (the
// thread releases, its joiner acquires), when the two are on different nodes. kTask: the same for
// a task (tasks/runtime.h) that runs on a node other than its spawner's.
enum class ObjectKind { kLock, kBarrier, kSemaphore, kThread, kTask };

// "lock", "barrier", "semaphore", "thread", "task".
const char* KindName(ObjectKind kind);

// The object an event belongs to. lmdx_barrier_all is the barrier named "lmdx_barrier_all".
struct SyncObject {
  ObjectKind kind;
  std::string_view name;
  // Barriers, at an acquire: the round the departure ends (several threads of a node that pass
  // one round each see the same number). 0 otherwise.
  std::uint64_t round = 0;
};

class ConsistencyHooks {
 public:
  virtual ~ConsistencyHooks() = default;
  // Release side, on the releasing thread before its message leaves: the bytes to attach.
  virtual std::string OnRelease(const SyncObject& object) = 0;
  // Acquire side, on the acquiring thread before the call returns: what the releases this acquire
  // synchronises with attached. A lock grant and a semaphore P bring one payload (the releaser's;
  // a semaphore unit that came from lmdx_sema_init brings none); a barrier departure brings one
  // per arrival of the round, in the order the manager counted them, or one that Merge made of
  // them.
  virtual void OnAcquire(const SyncObject& object, std::span<const std::string> payloads) = 0;
  // At a barrier's manager (and at every node of lmdx_barrier_all's tree): one payload that tells
  // a departing node all that the arrivals' payloads would, so that a departure carries one
  // payload instead of one per arrival. nullopt keeps them apart. Runs on the progress thread
  // under the sync layer's lock: it must not block.
  virtual std::optional<std::string> Merge(std::span<const std::string> payloads) {
    (void)payloads;
    return std::nullopt;
  }
  // What this node already knows of others' releases, small, for a lock request to carry: the
  // node that hands the token over then leaves it out of the payload (Trim). Empty: nothing.
  // Called under the sync layer's lock when a request leaves: it must be cheap and not block.
  virtual std::string Knowledge() { return {}; }
  // payload without what a node whose Knowledge() was knowledge has already acquired. Runs on
  // the progress thread under the sync layer's lock: it must not block. Never throws: payload
  // is consumed, so a summary it cannot use leaves the payload whole (only larger: the acquirer
  // ignores what it already knows).
  virtual std::string Trim(std::string payload, const std::string& knowledge) {
    (void)knowledge;
    return payload;
  }
  // payload, a lock grant that Trim cut to what this node lacked, with what the cut left out put
  // back: every bit of this node's own knowledge the protocol would pass on at a release. A grant
  // that reaches a node with no thread left to take it (its only waiter was killed after the
  // request left) goes on to the next holder, whose acquire follows the same release, so the
  // payload must again be whole before Trim cuts it for that holder; what the first cut removed
  // is what this node already had, so its own knowledge holds it. Hooks that override Trim must
  // override this too. Runs on the progress thread under the sync layer's lock: it must not
  // block. Never throws: a payload it cannot read stays as it is.
  virtual std::string Untrim(std::string payload) { return payload; }
};

// Sends nothing and ignores what arrives.
class NullConsistencyHooks final : public ConsistencyHooks {
 public:
  std::string OnRelease(const SyncObject&) override { return {}; }
  void OnAcquire(const SyncObject&, std::span<const std::string>) override {}
};

// The hooks of this process (the null protocol unless another was installed). Installing is
// meant for start-up, before the program synchronises; calls already under way keep the hooks
// they started with.
void SetConsistencyHooks(std::shared_ptr<ConsistencyHooks> hooks);
std::shared_ptr<ConsistencyHooks> CurrentConsistencyHooks();

}  // namespace lmdx::sync

#endif  // LMDX_SYNC_CONSISTENCY_HOOKS_H_

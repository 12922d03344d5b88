#include "sync/service.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <utility>

#include "base/error.h"
#include "base/log.h"
#include "net/wait_board.h"
#include "sync/internal/framing.h"
#include "sync/internal/service_parts.h"
#include "sync/names.h"
#include "sync/sync.pb.h"

namespace lmdx::sync {
namespace {

std::mutex current_mutex;
std::shared_ptr<Service> current_service;
std::atomic<Service*> current_pointer{nullptr};

}  // namespace

using namespace internal;  // NOLINT(google-build-using-namespace): the service's own parts

Service::Service(net::Node& node) : node_(node) {}

void Service::Run(Actions& actions) {
  for (auto& out : actions.sends) {
    try {
      node_.Send(out.dest, TypeOf(out.offset), std::move(out.frame.body),
                 std::move(out.frame.payload));
    } catch (const Error& error) {
      // The peer is gone: the node's lost-peer handling ends the job or fails the calls.
      DebugLine(std::string("sync: a message was not sent: ") + error.what());
    }
  }
  for (auto& [to, frame] : actions.replies) {
    try {
      node_.Reply(to, std::move(frame.body), std::move(frame.payload));
    } catch (const Error& error) {
      DebugLine(std::string("sync: a reply was not sent: ") + error.what());
    }
  }
  for (auto& error : actions.errors) {
    try {
      node_.ReplyError(error.to, error.code, error.text);
    } catch (const Error& e) {
      DebugLine(std::string("sync: an error reply was not sent: ") + e.what());
    }
  }
  for (auto& waiter : actions.wakes) waiter->done.Signal();
}

void Service::ThrowIfLostLocked() const {
  if (!lost_.empty()) throw Error(LMDX_ERR_PEER_LOST, lost_);
}

void Service::OnPeerLost(const std::string& why) {
  Actions actions;
  {
    std::lock_guard guard(mutex_);
    if (!lost_.empty()) return;
    lost_ = why;
    for (auto& [name, object] : objects_) {
      if (object->kind == ObjectKind::kLock) {
        FailLockWaitersLocked(*object, LMDX_ERR_PEER_LOST, why, actions);
      }
    }
    for (auto& [id, waiter] : waiters_) actions.Wake(waiter, LMDX_ERR_PEER_LOST, why);
    waiters_.clear();
    if (all_waiter_) actions.Wake(std::exchange(all_waiter_, nullptr), LMDX_ERR_PEER_LOST, why);
  }
  node_.FailRequests(TypeOf(0), TypeOf(kAllDown), LMDX_ERR_PEER_LOST, why);
  Run(actions);
}

void Service::WaitFor(Waiter& waiter, const net::WaitReason& reason) {
  waiter.done.Wait(&reason);
  if (waiter.code != LMDX_OK) throw Error(waiter.code, waiter.text);
}

std::shared_ptr<Waiter> Service::NewWaiterLocked(std::uint64_t& id) {
  auto waiter = std::make_shared<Waiter>();
  waiter->thread = net::CurrentThreadKey();
  id = next_waiter_++;
  waiters_[id] = waiter;
  return waiter;
}

// ---- Names -------------------------------------------------------------------------------------

Object& Service::ObjectLocked(const std::string& name, ObjectKind kind) {
  auto it = objects_.find(name);
  if (it != objects_.end()) {
    if (it->second->kind != kind) {
      throw Error(LMDX_ERR_MISUSE, "\"" + name + "\" is a " + KindName(it->second->kind) + " on " +
                                       Rank(rank()) + ", so it cannot be used as a " +
                                       KindName(kind));
    }
    return *it->second;
  }
  auto object = std::make_unique<Object>();
  object->name = name;
  object->kind = kind;
  object->manager = ManagerOf(name, node_.size());
  if (object->manager == rank()) {
    // The manager learns the kind of every name its own node uses, as it does from messages.
    Actions ignored;
    bool kind_ok = true;
    Managed& managed = ManagedLocked(name, kind, rank(), ignored, kind_ok);
    if (!kind_ok) throw Error(LMDX_ERR_MISUSE, KindConflict(name, managed.kind, kind, rank()));
  }
  // A lock's token starts at its manager.
  object->token_here = kind == ObjectKind::kLock && object->manager == rank();
  Object& result = *object;
  objects_.emplace(name, std::move(object));
  return result;
}

Object* Service::Find(std::string_view name, ObjectKind kind) {
  if (name.empty()) throw Error(LMDX_ERR_INVALID_ARGUMENT, "the name is empty");
  std::lock_guard lock(mutex_);
  return &ObjectLocked(std::string(name), kind);
}

Service::Managed& Service::ManagedLocked(const std::string& name, ObjectKind kind, int, Actions&,
                                         bool& kind_ok) {
  auto it = managed_.find(name);
  if (it == managed_.end()) {
    auto managed = std::make_unique<Managed>();
    managed->kind = kind;
    managed->last = rank();  // the token starts here
    it = managed_.emplace(name, std::move(managed)).first;
  }
  kind_ok = it->second->kind == kind;
  return *it->second;
}

// ---- Locks: the node's side --------------------------------------------------------------------

void Service::Lock(Object* lock) {
  auto hooks = CurrentConsistencyHooks();
  const auto self = net::CurrentThreadKey();
  std::shared_ptr<Waiter> waiter;
  Actions actions;
  bool fast = false;
  {
    std::lock_guard guard(mutex_);
    if (lock->held && lock->holder == self) {
      throw Error(LMDX_ERR_MISUSE, Quoted(*lock) + " is already held by this thread of " +
                                       Rank(rank()) + " (locks are not recursive)");
    }
    ThrowIfLostLocked();
    waiter = std::make_shared<Waiter>();
    if (lock->token_here && !lock->held && lock->queue.empty()) {
      // The token rests here: taken again without a message.
      lock->held = true;
      lock->holder = self;
      waiter->payloads = {std::move(lock->released)};
      lock->released.clear();
      fast = true;
    } else {
      // Queued in the same critical section as the test above: a token arriving between the two
      // would find no waiter and rest here, while this thread waited for a grant forever.
      waiter->thread = self;
      lock->queue.push_back(waiter);
      if (!lock->token_here && !lock->requested && !lock->trying) {
        lock->requested = true;
        RequestLockLocked(*lock, actions);
      }
    }
  }
  if (fast) {
    hooks->OnAcquire({ObjectKind::kLock, lock->name}, waiter->payloads);
    return;
  }
  Run(actions);
  net::WaitReason reason{"lock", lock->name};
  if (!waiter->done.WaitUnlessInterrupted(&reason)) {
    std::lock_guard guard(mutex_);
    auto queued = std::find(lock->queue.begin(), lock->queue.end(), waiter);
    if (queued != lock->queue.end()) {
      lock->queue.erase(queued);
      throw Killed(*lock);
    }
    // Granted meanwhile: the thread holds the lock, and its end releases it.
  }
  WaitFor(*waiter, reason);
  hooks->OnAcquire({ObjectKind::kLock, lock->name}, waiter->payloads);
}

void Service::ReleaseLocksOfCaller() {
  const auto self = net::CurrentThreadKey();
  std::vector<Object*> held;
  {
    std::lock_guard guard(mutex_);
    for (auto& [name, object] : objects_) {
      if (object->kind == ObjectKind::kLock && object->held && object->holder == self) {
        held.push_back(object.get());
      }
    }
  }
  for (Object* lock : held) {
    try {
      Unlock(lock);
    } catch (const Error& error) {
      DebugLine(std::string("sync: a killed thread's lock was not released: ") + error.what());
    }
  }
}

bool Service::TryLock(Object* lock) {
  auto hooks = CurrentConsistencyHooks();
  const auto self = net::CurrentThreadKey();
  bool local = false;
  std::string local_payload;
  {
    std::lock_guard guard(mutex_);
    if (lock->held || !lock->queue.empty() || lock->requested || lock->trying) return false;
    if (lock->token_here) {
      lock->held = true;
      lock->holder = self;
      local_payload = std::move(lock->released);
      lock->released.clear();
      local = true;
    } else {
      lock->trying = true;
    }
  }
  if (local) {
    hooks->OnAcquire({ObjectKind::kLock, lock->name},
                     std::span<const std::string>(&local_payload, 1));
    return true;
  }
  wire::SyncMessage request;
  request.set_name(lock->name);
  wire::SyncMessage reply;
  std::optional<Error> failure;
  try {
    net::InboundMessage answer =
        node_.Request(lock->manager, TypeOf(kLockTry), request.SerializeAsString());
    reply = internal::Unframe(answer);
  } catch (const Error& error) {
    failure = error;
  }
  Actions actions;
  bool acquired = false;
  {
    std::lock_guard guard(mutex_);
    lock->trying = false;
    if (!failure && reply.flag()) {
      acquired = true;
      lock->token_here = true;
      lock->held = true;
      lock->holder = self;
    } else if (!lock->queue.empty() && !lock->requested && !lock->token_here) {
      // Threads that asked meanwhile left the request to this call; send it now.
      lock->requested = true;
      RequestLockLocked(*lock, actions);
    }
  }
  Run(actions);
  if (failure) throw *failure;
  if (acquired) hooks->OnAcquire({ObjectKind::kLock, lock->name}, PayloadsOf(reply));
  return acquired;
}

void Service::Unlock(Object* lock) {
  const auto self = net::CurrentThreadKey();
  {
    std::lock_guard guard(mutex_);
    if (!lock->held) {
      throw Error(LMDX_ERR_MISUSE, Quoted(*lock) + " is not held by " + Rank(rank()));
    }
    if (lock->holder != self) {
      throw Error(LMDX_ERR_MISUSE, Quoted(*lock) + " is held by another thread of " + Rank(rank()) +
                                       ", not by the caller");
    }
  }
  // Only the holder gets here, so the state cannot change under it but for a forwarded request.
  std::string payload = CurrentConsistencyHooks()->OnRelease({ObjectKind::kLock, lock->name});
  Actions actions;
  {
    std::lock_guard guard(mutex_);
    lock->held = false;
    lock->released = std::move(payload);
    if (lock->next >= 0) {
      // Another node asked first: the token goes straight to it. Threads of this node still
      // waiting queue up behind it.
      SendTokenLocked(*lock, actions);
      if (!lock->queue.empty() && !lock->requested && !lock->trying) {
        lock->requested = true;
        RequestLockLocked(*lock, actions);
      }
    } else {
      ServeLocalLocked(*lock, actions);
    }
  }
  Run(actions);
}

// The token is here and free: the first local waiter gets it, else the next node, else it rests.
void Service::ServeLocalLocked(Object& lock, Actions& actions) {
  if (!lock.queue.empty()) {
    std::shared_ptr<Waiter> waiter = lock.queue.front();
    lock.queue.pop_front();
    lock.held = true;
    lock.holder = waiter->thread;
    waiter->payloads = {std::move(lock.released)};
    lock.released.clear();
    actions.Wake(std::move(waiter));
    return;
  }
  if (lock.next >= 0) SendTokenLocked(lock, actions);
}

void Service::RequestLockLocked(const Object& lock, Actions& actions) {
  wire::SyncMessage message;
  message.set_name(lock.name);
  message.set_knowledge(CurrentConsistencyHooks()->Knowledge());
  actions.Send(lock.manager, kLockAcquire, std::move(message));
}

void Service::SendTokenLocked(Object& lock, Actions& actions) {
  wire::SyncMessage grant;
  grant.set_name(lock.name);
  std::string payload = std::move(lock.released);
  lock.released.clear();
  grant.add_payloads(CurrentConsistencyHooks()->Trim(std::move(payload), lock.next_knowledge));
  actions.Send(lock.next, kLockGrant, std::move(grant));
  lock.next = -1;
  lock.next_knowledge.clear();
  lock.token_here = false;
}

// A request forwarded by the manager: this node is the one before requester in the queue.
void Service::ForwardLocked(Object& lock, int requester, std::string knowledge, Actions& actions) {
  if (lock.token_here && !lock.held && lock.queue.empty()) {
    lock.next = requester;
    lock.next_knowledge = std::move(knowledge);
    ServeLocalLocked(lock, actions);
    return;
  }
  if (lock.next >= 0) {
    LogLine("sync: " + Quoted(lock) + " got a second successor (" + Rank(requester) + " after " +
            Rank(lock.next) + "); internal error");
  }
  lock.next = requester;
  lock.next_knowledge = std::move(knowledge);
}

void Service::GrantLocked(Object& lock, std::string payload, Actions& actions) {
  lock.token_here = true;
  lock.requested = false;
  if (lock.queue.empty()) {
    // Nobody here takes the grant: the threads that asked were killed in their wait. The payload
    // was trimmed by this node's knowledge, yet it goes on (to `next`, a later request or a
    // trylock's probe) to a node whose acquire follows the release as much as if it came from
    // the releaser, and a second trim cannot bring back what the first removed. That part is in
    // this node's own notices, so the hooks put it back here, once, for every way the token may
    // leave; the releaser could not have known that nobody would take the grant.
    payload = CurrentConsistencyHooks()->Untrim(std::move(payload));
  }
  lock.released = std::move(payload);
  ServeLocalLocked(lock, actions);
}

void Service::ProbeLocked(Object& lock, int requester, Actions& actions) {
  wire::SyncMessage result;
  result.set_name(lock.name);
  result.set_requester(requester);
  bool free =
      lock.token_here && !lock.held && lock.queue.empty() && !lock.requested && lock.next < 0;
  result.set_flag(free);
  if (free) {
    lock.token_here = false;
    result.add_payloads(std::move(lock.released));
    lock.released.clear();
  }
  actions.Send(lock.manager, kLockProbeResult, result);
}

void Service::FailLockWaitersLocked(Object& lock, lmdx_error code, const std::string& text,
                                    Actions& actions) {
  lock.requested = false;
  while (!lock.queue.empty()) {
    actions.Wake(lock.queue.front(), code, text);
    lock.queue.pop_front();
  }
}

// ---- Locks: the manager's side -----------------------------------------------------------------

// Returns true when it started a probe (later requests then wait for its result).
bool Service::ManagerLockRequest(int source, const wire::SyncMessage& message,
                                 const std::optional<net::ReplyTo>& try_reply, Actions& actions) {
  bool kind_ok = true;
  Managed& managed = ManagedLocked(message.name(), ObjectKind::kLock, source, actions, kind_ok);
  if (!kind_ok) {
    std::string text = KindConflict(message.name(), managed.kind, ObjectKind::kLock, source);
    if (try_reply) {
      actions.errors.push_back({*try_reply, LMDX_ERR_MISUSE, text});
    } else {
      wire::SyncMessage error;
      error.set_name(message.name());
      error.set_code(LMDX_ERR_MISUSE);
      error.set_text(text);
      actions.Send(source, kLockError, error);
    }
    return false;
  }
  if (managed.probing) {
    managed.held_back.push_back({source, message.SerializeAsString(), try_reply});
    return false;
  }
  if (!try_reply) {
    int last = managed.last;
    managed.last = source;
    if (last == rank()) {
      ForwardLocked(ObjectLocked(message.name(), ObjectKind::kLock), source, message.knowledge(),
                    actions);
    } else {
      wire::SyncMessage forward;
      forward.set_name(message.name());
      forward.set_requester(source);
      forward.set_knowledge(message.knowledge());
      actions.Send(last, kLockForward, forward);
    }
    return false;
  }
  managed.probing = true;
  managed.probe_reply = *try_reply;
  managed.probe_requester = source;
  if (managed.last == rank()) {
    ProbeLocked(ObjectLocked(message.name(), ObjectKind::kLock), source, actions);
  } else {
    wire::SyncMessage probe;
    probe.set_name(message.name());
    probe.set_requester(source);
    actions.Send(managed.last, kLockProbe, probe);
  }
  return true;
}

// ---- Barriers ----------------------------------------------------------------------------------

void Service::BarrierInit(Object* barrier, int count) {
  if (count <= 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                Quoted(*barrier) + ": the count must be positive, not " + std::to_string(count));
  }
  wire::SyncMessage message;
  message.set_name(barrier->name);
  message.set_value(count);
  node_.Request(barrier->manager, TypeOf(kBarrierInit), message.SerializeAsString());
}

void Service::Barrier(Object* barrier) {
  // Each thread's passes through each barrier: an arrival for a round that already ended means
  // the barrier has more participants than its count.
  thread_local std::unordered_map<const Object*, std::uint64_t> passes;
  auto hooks = CurrentConsistencyHooks();
  auto known = passes.find(barrier);
  wire::SyncMessage message;
  message.set_name(barrier->name);
  message.set_flag(known == passes.end());
  message.set_value(static_cast<std::int64_t>(known == passes.end() ? 0 : known->second));
  message.set_participant(net::CurrentThreadKey());
  message.add_payloads(hooks->OnRelease({ObjectKind::kBarrier, barrier->name}));
  std::shared_ptr<Waiter> waiter;
  std::uint64_t id = 0;
  {
    std::lock_guard guard(mutex_);
    ThrowIfLostLocked();
    waiter = NewWaiterLocked(id);
    message.set_waiter(id);
  }
  Actions actions;
  actions.Send(barrier->manager, kBarrierArrive, message);
  Run(actions);
  net::WaitReason reason{"barrier", barrier->name};
  if (!waiter->done.WaitUnlessInterrupted(&reason)) {
    // The arrival counts: the others go on when the barrier fills, and its release for this
    // waiter finds no one.
    std::lock_guard guard(mutex_);
    if (waiters_.erase(id) != 0) throw Killed(*barrier);
  }
  WaitFor(*waiter, reason);
  passes[barrier] = waiter->round + 1;
  hooks->OnAcquire({ObjectKind::kBarrier, barrier->name, waiter->round}, waiter->payloads);
}

void Service::BarrierArriveLocked(int source, const wire::SyncMessage& message, Actions& actions) {
  auto fail = [&](int dest, std::uint64_t waiter, const std::string& text) {
    wire::SyncMessage error;
    error.set_name(message.name());
    error.set_waiter(waiter);
    error.set_code(LMDX_ERR_MISUSE);
    error.set_text(text);
    actions.Send(dest, kBarrierError, error);
  };
  bool kind_ok = true;
  Managed& managed = ManagedLocked(message.name(), ObjectKind::kBarrier, source, actions, kind_ok);
  const std::string quoted = "barrier \"" + message.name() + "\"";
  if (!kind_ok) {
    fail(source, message.waiter(),
         KindConflict(message.name(), managed.kind, ObjectKind::kBarrier, source));
    return;
  }
  if (managed.count == 0) {
    fail(source, message.waiter(),
         quoted + " is used before lmdx_barrier_init (a thread of " + Rank(source) + " arrived)");
    return;
  }
  if (managed.broken) {
    fail(source, message.waiter(), managed.broken_text);
    return;
  }
  managed.participants.emplace(source, message.participant());
  bool too_many = static_cast<int>(managed.participants.size()) > managed.count;
  bool late = !message.flag() && static_cast<std::uint64_t>(message.value()) < managed.round;
  if (too_many || late) {
    // More threads use the barrier than its count (seen directly, or as a thread that arrives
    // for a round that ended without it): rounds can no longer be told apart, and a thread could
    // wait for ever. Everyone waiting, and every later arrival, is told.
    managed.broken = true;
    managed.broken_text =
        quoted + " has more arrivals than its count " + std::to_string(managed.count) +
        ": a thread of " + Rank(source) +
        (too_many ? " is participant " + std::to_string(managed.participants.size())
                  : " arrived for round " + std::to_string(message.value()) +
                        ", which had already ended");
    fail(source, message.waiter(), managed.broken_text);
    for (const auto& [node, ids] : managed.waiting) {
      for (std::uint64_t id : ids) fail(node, id, managed.broken_text);
    }
    managed.waiting.clear();
    managed.payloads.clear();
    managed.arrived = 0;
    return;
  }
  ++managed.arrived;
  managed.waiting[source].push_back(message.waiter());
  for (const auto& payload : message.payloads()) managed.payloads.push_back(payload);
  if (managed.arrived < managed.count) return;
  MergePayloads(managed.payloads);
  // The last arrival: one departure per node, naming its waiting threads.
  for (const auto& [node, ids] : managed.waiting) {
    wire::SyncMessage depart;
    depart.set_name(message.name());
    depart.set_round(managed.round);
    for (std::uint64_t id : ids) depart.add_waiters(id);
    for (const auto& payload : managed.payloads) depart.add_payloads(payload);
    actions.Send(node, kBarrierDepart, depart);
  }
  ++managed.round;
  managed.arrived = 0;
  managed.waiting.clear();
  managed.payloads.clear();
}

// The consistency protocols combine a barrier's payloads where they can, so a departure carries
// one payload, not one per arrival (N nodes would otherwise each receive N).
void Service::MergePayloads(std::vector<std::string>& payloads) {
  if (payloads.size() < 2) return;
  std::optional<std::string> merged;
  try {
    merged = CurrentConsistencyHooks()->Merge(payloads);
  } catch (const std::exception& error) {
    LogLine(std::string("sync: barrier payloads kept apart: ") + error.what());
  }
  if (!merged) return;
  payloads.clear();
  payloads.push_back(std::move(*merged));
}

// lmdx_barrier_all: a combining tree of arity kTreeArity over the ranks (rank 0 is the root,
// rank r's children are kTreeArity*r+1 ...). Arrivals go up, the departure comes down.
void Service::BarrierAll() {
  auto hooks = CurrentConsistencyHooks();
  std::string payload = hooks->OnRelease({ObjectKind::kBarrier, kBarrierAllName});
  std::shared_ptr<Waiter> waiter;
  Actions actions;
  {
    std::lock_guard guard(mutex_);
    ThrowIfLostLocked();
    if (all_waiter_) {
      throw Error(LMDX_ERR_MISUSE, "another thread of " + Rank(rank()) +
                                       " is already waiting in lmdx_barrier_all (one thread per "
                                       "rank calls it)");
    }
    waiter = std::make_shared<Waiter>();
    waiter->thread = net::CurrentThreadKey();
    all_waiter_ = waiter;
    all_own_payload_ = std::move(payload);
    AllTryAdvanceLocked(all_epoch_, actions);
  }
  Run(actions);
  WaitFor(*waiter, net::WaitReason{"lmdx_barrier_all", {}, -1});
  hooks->OnAcquire({ObjectKind::kBarrier, kBarrierAllName, waiter->round}, waiter->payloads);
}

void Service::AllTryAdvanceLocked(std::uint64_t epoch, Actions& actions) {
  if (!all_waiter_ || epoch != all_epoch_ || all_waiter_->round == 1) return;
  int children = 0;
  for (int k = 1; k <= kTreeArity; ++k) {
    if (kTreeArity * rank() + k < node_.size()) ++children;
  }
  AllArrivals& arrivals = all_arrivals_[epoch];
  if (arrivals.children < children) return;
  std::vector<std::string> payloads = std::move(arrivals.payloads);
  all_arrivals_.erase(epoch);
  payloads.push_back(std::move(all_own_payload_));
  MergePayloads(payloads);
  all_waiter_->round = 1;  // this node's arrival has gone up
  if (rank() == 0) {
    AllDepartLocked(epoch, std::move(payloads), actions);
    return;
  }
  wire::SyncMessage up;
  up.set_round(epoch);
  for (auto& p : payloads) up.add_payloads(std::move(p));
  actions.Send((rank() - 1) / kTreeArity, kAllUp, up);
}

void Service::AllDepartLocked(std::uint64_t epoch, std::vector<std::string> payloads,
                              Actions& actions) {
  wire::SyncMessage down;
  down.set_round(epoch);
  for (const auto& p : payloads) down.add_payloads(p);
  for (int k = 1; k <= kTreeArity; ++k) {
    int child = kTreeArity * rank() + k;
    if (child < node_.size()) actions.Send(child, kAllDown, down);
  }
  std::shared_ptr<Waiter> waiter = std::move(all_waiter_);
  all_waiter_.reset();
  ++all_epoch_;
  if (!waiter) {
    LogLine("sync: lmdx_barrier_all departure with no thread waiting; internal error");
    return;
  }
  waiter->round = epoch;
  waiter->payloads = std::move(payloads);
  actions.Wake(std::move(waiter));
}

// ---- Handlers ----------------------------------------------------------------------------------

void Service::Handle(int offset, net::Node::Handler handler) {
  node_.Handle(TypeOf(offset), std::move(handler));
}

void Service::RegisterHandlers() {
  static constexpr const char* kTypeNames[] = {
      "lock-acquire",   "lock-forward",   "lock-grant",     "lock-error",
      "lock-try",       "lock-probe",     "lock-probe-res", "barrier-init",
      "barrier-arrive", "barrier-depart", "barrier-error",  "sema-init",
      "sema-p",         "sema-v",         "barrier-all-up", "barrier-all-down"};
  for (int offset = kLockAcquire; offset <= kAllDown; ++offset) {
    net::SetMessageTypeName(TypeOf(offset), kTypeNames[offset]);
  }
  // Parses the body, runs body under the mutex, then sends what it collected.
  auto on = [this](int offset, auto body) {
    Handle(offset, [this, body](net::InboundMessage& in, const net::ReplyTo* reply_to) {
      Actions actions;
      try {
        wire::SyncMessage message = internal::Unframe(in);
        std::lock_guard guard(mutex_);
        body(in.header.source, message, reply_to, actions);
      } catch (const Error& error) {
        if (reply_to != nullptr) {
          actions.errors.push_back({*reply_to, error.code(), error.what()});
        } else {
          LogLine(std::string("sync: ") + error.what());
        }
      }
      Run(actions);
    });
  };
  using Msg = const wire::SyncMessage&;
  using To = const net::ReplyTo*;

  on(kLockAcquire,
     [this](int source, Msg m, To, Actions& a) { ManagerLockRequest(source, m, std::nullopt, a); });
  on(kLockTry, [this](int source, Msg m, To to, Actions& a) {
    if (to != nullptr) ManagerLockRequest(source, m, *to, a);
  });
  on(kLockForward, [this](int, Msg m, To, Actions& a) {
    ForwardLocked(ObjectLocked(m.name(), ObjectKind::kLock), m.requester(), m.knowledge(), a);
  });
  on(kLockProbe, [this](int, Msg m, To, Actions& a) {
    ProbeLocked(ObjectLocked(m.name(), ObjectKind::kLock), m.requester(), a);
  });
  on(kLockGrant, [this](int, Msg m, To, Actions& a) {
    GrantLocked(ObjectLocked(m.name(), ObjectKind::kLock),
                m.payloads_size() > 0 ? m.payloads(0) : std::string(), a);
  });
  on(kLockError, [this](int, Msg m, To, Actions& a) {
    FailLockWaitersLocked(ObjectLocked(m.name(), ObjectKind::kLock),
                          static_cast<lmdx_error>(m.code()), m.text(), a);
  });
  on(kLockProbeResult, [this](int, Msg m, To, Actions& a) {
    bool kind_ok = true;
    Managed& managed = ManagedLocked(m.name(), ObjectKind::kLock, rank(), a, kind_ok);
    managed.probing = false;
    wire::SyncMessage reply;
    reply.set_flag(m.flag());
    if (m.flag()) {
      managed.last = managed.probe_requester;
      for (const auto& p : m.payloads()) reply.add_payloads(p);
    }
    a.replies.emplace_back(managed.probe_reply, internal::Frame(std::move(reply)));
    // Requests that came during the probe, in their order, until one starts another probe.
    while (!managed.probing && !managed.held_back.empty()) {
      Managed::HeldBack held = std::move(managed.held_back.front());
      managed.held_back.pop_front();
      wire::SyncMessage request;
      request.ParseFromString(held.body);
      ManagerLockRequest(held.source, request, held.try_reply, a);
    }
  });

  on(kBarrierInit, [this](int source, Msg m, To to, Actions& a) {
    if (to == nullptr) return;
    bool kind_ok = true;
    Managed& managed = ManagedLocked(m.name(), ObjectKind::kBarrier, source, a, kind_ok);
    if (!kind_ok) {
      a.errors.push_back({*to, LMDX_ERR_MISUSE,
                          KindConflict(m.name(), managed.kind, ObjectKind::kBarrier, source)});
    } else if (managed.count == 0 || managed.count == m.value()) {
      managed.count = static_cast<int>(m.value());
      a.replies.emplace_back(*to, internal::Framed{});
    } else {
      a.errors.push_back({*to, LMDX_ERR_MISUSE,
                          "barrier \"" + m.name() + "\" was initialized with count " +
                              std::to_string(managed.count) + "; " + Rank(source) +
                              " initializes it again with count " + std::to_string(m.value())});
    }
  });
  on(kBarrierArrive,
     [this](int source, Msg m, To, Actions& a) { BarrierArriveLocked(source, m, a); });
  on(kBarrierDepart, [this](int, Msg m, To, Actions& a) {
    std::vector<std::string> payloads = PayloadsOf(m);
    for (std::uint64_t id : m.waiters()) {
      auto it = waiters_.find(id);
      if (it == waiters_.end()) continue;
      std::shared_ptr<Waiter> waiter = std::move(it->second);
      waiters_.erase(it);
      waiter->round = m.round();
      waiter->payloads = payloads;
      a.Wake(std::move(waiter));
    }
  });
  on(kBarrierError, [this](int, Msg m, To, Actions& a) {
    auto it = waiters_.find(m.waiter());
    if (it == waiters_.end()) return;
    std::shared_ptr<Waiter> waiter = std::move(it->second);
    waiters_.erase(it);
    a.Wake(std::move(waiter), static_cast<lmdx_error>(m.code()), m.text());
  });
  on(kAllUp, [this](int, Msg m, To, Actions& a) {
    AllArrivals& arrivals = all_arrivals_[m.round()];
    ++arrivals.children;
    for (const auto& p : m.payloads()) arrivals.payloads.push_back(p);
    AllTryAdvanceLocked(m.round(), a);
  });
  on(kAllDown,
     [this](int, Msg m, To, Actions& a) { AllDepartLocked(m.round(), PayloadsOf(m), a); });

  on(kSemaInit, [this](int source, Msg m, To to, Actions& a) {
    if (to == nullptr) return;
    SemaInitLocked(m.name(), m.value(), source);
    a.replies.emplace_back(*to, internal::Framed{});
  });
  on(kSemaP, [this](int source, Msg m, To to, Actions& a) {
    if (to == nullptr) return;
    Managed& managed = SemaphoreLocked(m.name(), source, "lmdx_sema_p");
    if (std::optional<std::vector<std::string>> unit = SemaTakeLocked(managed)) {
      wire::SyncMessage reply;
      for (std::string& payload : *unit) reply.add_payloads(std::move(payload));
      a.replies.emplace_back(*to, internal::Frame(std::move(reply)));
    } else {
      managed.p_waiters.push_back({*to, nullptr, 0});
    }
  });
  on(kSemaV, [this](int source, Msg m, To to, Actions& a) {
    Managed* managed = nullptr;
    if (to != nullptr) {
      managed = &SemaphoreLocked(m.name(), source, "lmdx_sema_v");
    } else {
      // A unit given back for a thread killed while it waited (no answer expected).
      auto found = managed_.find(m.name());
      if (found != managed_.end() && found->second->kind == ObjectKind::kSemaphore) {
        managed = found->second.get();
      }
    }
    if (managed == nullptr) return;
    SemaGiveLocked(*managed, m.payloads_size() > 0 ? m.payloads(0) : std::string(), a);
    if (to != nullptr) a.replies.emplace_back(*to, internal::Framed{});
  });
}

// ---- The node's service ------------------------------------------------------------------------

// The hang report's lines about what this node's sync objects are doing.
void Service::Describe(std::vector<std::string>& lines) {
  auto ranks_text = [](const auto& ranks) {
    std::string text;
    for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
    return text;
  };
  std::lock_guard guard(mutex_);
  for (const auto& [name, object] : objects_) {
    if (object->kind != ObjectKind::kLock || !object->held) continue;
    std::string line =
        "holds lock \"" + name + "\" (" + net::wait_board::ThreadName(object->holder) + ")";
    if (!object->queue.empty()) {
      line += "; " + std::to_string(object->queue.size()) + " more of its threads wait for it";
    }
    lines.push_back(std::move(line));
  }
  for (const auto& [name, managed] : managed_) {
    if (managed->kind == ObjectKind::kBarrier && managed->arrived > 0) {
      std::set<int> ranks;
      for (const auto& [node, ids] : managed->waiting) {
        if (!ids.empty()) ranks.insert(node);
      }
      std::string count = managed->count > 0 ? " of " + std::to_string(managed->count) : "";
      std::string line = "manages barrier \"" + name + "\": " + std::to_string(managed->arrived) +
                         count + " arrived (from ranks " + ranks_text(ranks) + ")";
      if (managed->count == 0) line += "; it was never initialized (lmdx_barrier_init)";
      lines.push_back(std::move(line));
    }
    if (managed->kind == ObjectKind::kSemaphore && !managed->p_waiters.empty()) {
      std::set<int> ranks;
      for (const Managed::PWaiter& waiter : managed->p_waiters) {
        ranks.insert(waiter.remote ? waiter.remote->dest : rank());
      }
      std::string line = "manages semaphore \"" + name +
                         "\": " + std::to_string(managed->p_waiters.size()) +
                         " waiting in lmdx_sema_p (from ranks " + ranks_text(ranks) + "), no unit";
      if (!managed->sema_ready) line += "; it was never initialized (lmdx_sema_init)";
      lines.push_back(std::move(line));
    }
  }
}

void Attach(net::Node& node) {
  // One describer for the process; it asks whichever service is current.
  static const bool described = [] {
    net::wait_board::AddDescriber([](std::vector<std::string>& lines) {
      std::shared_ptr<Service> service;
      {
        std::lock_guard lock(current_mutex);
        service = current_service;
      }
      if (service) service->Describe(lines);
    });
    return true;
  }();
  static_cast<void>(described);
  auto service = std::make_shared<Service>(node);
  service->RegisterHandlers();
  node.AddPeerLostObserver([service](int, const std::string& why) { service->OnPeerLost(why); });
  std::lock_guard lock(current_mutex);
  current_service = service;
  current_pointer.store(service.get(), std::memory_order_release);
}

Service& Current() {
  Service* service = current_pointer.load(std::memory_order_acquire);
  if (service == nullptr) {
    throw Error(LMDX_ERR_NOT_INITIALIZED, "called before lmdx_init or lmdx_init_spmd");
  }
  return *service;
}

}  // namespace lmdx::sync

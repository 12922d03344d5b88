// Semaphores: the calling node's side and the manager's. A semaphore managed by the calling
// node is served in place, under the service's mutex, with no message: a P and a V between
// threads of one node cost what a mutex and, when a thread must wait, a wake-up cost, not a
// round trip through the progress thread (about 5 µs a call here, which made a producer and a
// consumer on one node a hundred times slower than on POSIX semaphores).
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "sync/internal/service_parts.h"
#include "sync/service.h"

namespace lmdx::sync {

using namespace internal;  // NOLINT(google-build-using-namespace): the service's own parts

// ---- The manager's side ----

Service::Managed& Service::SemaphoreEntryLocked(const std::string& name, int source) {
  Actions ignored;
  bool kind_ok = true;
  Managed& managed = ManagedLocked(name, ObjectKind::kSemaphore, source, ignored, kind_ok);
  if (!kind_ok) {
    throw Error(LMDX_ERR_MISUSE, KindConflict(name, managed.kind, ObjectKind::kSemaphore, source));
  }
  return managed;
}

void Service::SemaInitLocked(const std::string& name, std::int64_t value, int source) {
  Managed& managed = SemaphoreEntryLocked(name, source);
  if (!managed.sema_ready) {
    managed.sema_ready = true;
    managed.init_value = value;
    managed.init_units = value;
  } else if (managed.init_value != value) {
    throw Error(LMDX_ERR_MISUSE, "semaphore \"" + name + "\" was initialized with value " +
                                     std::to_string(managed.init_value) + "; " + Rank(source) +
                                     " initializes it again with value " + std::to_string(value));
  }
}

Service::Managed& Service::SemaphoreLocked(const std::string& name, int source, const char* call) {
  Managed& managed = SemaphoreEntryLocked(name, source);
  if (!managed.sema_ready) {
    throw Error(LMDX_ERR_MISUSE, "semaphore \"" + name + "\" is used before lmdx_sema_init (" +
                                     call + " on " + Rank(source) + ")");
  }
  return managed;
}

std::optional<std::vector<std::string>> Service::SemaTakeLocked(Managed& managed) {
  if (managed.init_units > 0) {
    --managed.init_units;
    return std::vector<std::string>{};  // a unit of the initial value carries no payload
  }
  if (managed.units.empty()) return std::nullopt;
  std::vector<std::string> unit{std::move(managed.units.front())};
  managed.units.pop_front();
  return unit;
}

void Service::SemaGiveLocked(Managed& managed, std::string payload, Actions& actions) {
  while (!managed.p_waiters.empty()) {
    Managed::PWaiter waiter = std::move(managed.p_waiters.front());
    managed.p_waiters.pop_front();
    if (waiter.remote) {
      wire::SyncMessage reply;
      reply.add_payloads(std::move(payload));
      actions.replies.emplace_back(*waiter.remote, internal::Frame(std::move(reply)));
      return;
    }
    // A thread of this node: gone from waiters_ when a lost peer woke it or it was killed, and
    // then the unit goes to the next in line.
    if (waiters_.erase(waiter.id) == 0) continue;
    // Woken to take a unit, not handed one: a thread of this node that asks first takes it, and
    // the woken thread, if it finds none, waits again at the head of the line. Handing the unit
    // over made every contended P wait for a wake-up (20 µs and more here), as the releasing
    // thread, asking again at once, queued behind the one still waking: a semaphore used as a
    // mutex then passed every turn through the scheduler.
    managed.units.push_back(std::move(payload));
    actions.Wake(std::move(waiter.local));
    return;
  }
  managed.units.push_back(std::move(payload));
}

// ---- The calling node's side ----

void Service::SemaInit(Object* sema, int value) {
  if (value < 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                Quoted(*sema) + ": the value must not be negative, not " + std::to_string(value));
  }
  if (sema->manager == rank()) {
    std::lock_guard guard(mutex_);
    SemaInitLocked(sema->name, value, rank());
    return;
  }
  wire::SyncMessage message;
  message.set_name(sema->name);
  message.set_value(value);
  node_.Request(sema->manager, TypeOf(kSemaInit), message.SerializeAsString());
}

void Service::SemaP(Object* sema) {
  std::vector<std::string> payloads =
      sema->manager == rank() ? LocalSemaP(*sema) : RemoteSemaP(*sema);
  CurrentConsistencyHooks()->OnAcquire({ObjectKind::kSemaphore, sema->name}, payloads);
}

std::vector<std::string> Service::LocalSemaP(const Object& sema) {
  net::WaitReason reason{"semaphore", sema.name};
  for (bool woken = false;; woken = true) {
    std::shared_ptr<Waiter> waiter;
    std::uint64_t id = 0;
    {
      std::lock_guard guard(mutex_);
      ThrowIfLostLocked();
      Managed& managed = SemaphoreLocked(sema.name, rank(), "lmdx_sema_p");
      if (std::optional<std::vector<std::string>> unit = SemaTakeLocked(managed)) return *unit;
      waiter = NewWaiterLocked(id);
      // A thread woken for a unit another took first keeps its place at the head of the line.
      if (woken) {
        managed.p_waiters.push_front({std::nullopt, waiter, id});
      } else {
        managed.p_waiters.push_back({std::nullopt, waiter, id});
      }
    }
    if (!waiter->done.WaitUnlessInterrupted(&reason)) {
      Actions actions;
      {
        std::lock_guard guard(mutex_);
        Managed& managed = SemaphoreLocked(sema.name, rank(), "lmdx_sema_p");
        if (waiters_.erase(id) != 0) {
          std::erase_if(managed.p_waiters,
                        [id](const Managed::PWaiter& queued) { return queued.id == id; });
        } else if (waiter->code == LMDX_OK) {
          // Woken for a unit as it was killed: the next thread in line is woken for it instead.
          if (std::optional<std::vector<std::string>> unit = SemaTakeLocked(managed)) {
            SemaGiveLocked(managed, unit->empty() ? std::string() : std::move(unit->front()),
                           actions);
          }
        }
      }
      Run(actions);
      throw Killed(sema);
    }
    WaitFor(*waiter, reason);
  }
}

std::vector<std::string> Service::RemoteSemaP(const Object& sema) {
  {
    std::lock_guard guard(mutex_);
    ThrowIfLostLocked();
  }
  wire::SyncMessage message;
  message.set_name(sema.name);
  // A thread killed while it waits gives back the unit that comes for it later.
  auto give_back = [this, manager = sema.manager, name = sema.name](net::InboundMessage& late) {
    try {
      wire::SyncMessage grant = internal::Unframe(late);
      wire::SyncMessage v;
      v.set_name(name);
      v.add_payloads(grant.payloads_size() > 0 ? grant.payloads(0) : std::string());
      internal::Framed frame = internal::Frame(std::move(v));
      node_.Send(manager, TypeOf(kSemaV), std::move(frame.body), std::move(frame.payload));
    } catch (const Error& error) {
      DebugLine(std::string("sync: a unit could not be given back: ") + error.what());
    }
  };
  net::WaitReason reason{"semaphore", sema.name};
  std::optional<net::InboundMessage> answer = node_.RequestUnlessInterrupted(
      sema.manager, TypeOf(kSemaP), message.SerializeAsString(), give_back, &reason);
  if (!answer) throw Killed(sema);
  return PayloadsOf(internal::Unframe(*answer));
}

void Service::SemaV(Object* sema) {
  std::string payload = CurrentConsistencyHooks()->OnRelease({ObjectKind::kSemaphore, sema->name});
  if (sema->manager == rank()) {
    Actions actions;
    {
      std::lock_guard guard(mutex_);
      SemaGiveLocked(SemaphoreLocked(sema->name, rank(), "lmdx_sema_v"), std::move(payload),
                     actions);
    }
    Run(actions);
    return;
  }
  wire::SyncMessage message;
  message.set_name(sema->name);
  message.add_payloads(std::move(payload));
  internal::Framed frame = internal::Frame(std::move(message));
  node_.Request(sema->manager, TypeOf(kSemaV), std::move(frame.body), std::move(frame.payload));
}

}  // namespace lmdx::sync

// Synchronisation: barriers, semaphores and locks (sync/service.h does the work).
#include <string>

#include "api/internal/runtime_state.h"
#include "sync/service.h"

namespace lmdx::api {
namespace {

using sync::ObjectKind;

const char* KindOf(ObjectKind kind) { return sync::KindName(kind); }

sync::Object* Lookup(const char* call, const char* name, ObjectKind kind) {
  RequireNode(call);
  if (name == nullptr) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, std::string("the ") + KindOf(kind) + " name is NULL");
  }
  return sync::Current().Find(name, kind);
}

sync::Object* FromHandle(const char* call, void* handle, ObjectKind kind) {
  RequireNode(call);
  if (handle == nullptr) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, std::string("the ") + KindOf(kind) + " handle is NULL");
  }
  auto* object = static_cast<sync::Object*>(handle);
  if (object->kind != kind) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "the handle of " + std::string(KindOf(object->kind)) +
                                               " \"" + object->name + "\" is not a " +
                                               KindOf(kind) + " handle");
  }
  return object;
}

template <typename Op>
int ByName(const char* call, const char* name, ObjectKind kind, Op op) {
  return Guard(call, [&] { return op(sync::Current(), Lookup(call, name, kind)); });
}

template <typename Op>
int ByHandle(const char* call, void* handle, ObjectKind kind, Op op) {
  return Guard(call, [&] { return op(sync::Current(), FromHandle(call, handle, kind)); });
}

template <typename Handle>
Handle Find(const char* call, const char* name, ObjectKind kind) {
  sync::Object* found = nullptr;
  Guard(call, [&] {
    found = Lookup(call, name, kind);
    return LMDX_OK;
  });
  return reinterpret_cast<Handle>(found);
}

auto BarrierInit(int count) {
  return [count](sync::Service& s, sync::Object* o) {
    s.BarrierInit(o, count);
    return LMDX_OK;
  };
}
auto SemaInit(int value) {
  return [value](sync::Service& s, sync::Object* o) {
    s.SemaInit(o, value);
    return LMDX_OK;
  };
}
int DoBarrier(sync::Service& s, sync::Object* o) {
  s.Barrier(o);
  return LMDX_OK;
}
int DoSemaP(sync::Service& s, sync::Object* o) {
  s.SemaP(o);
  return LMDX_OK;
}
int DoSemaV(sync::Service& s, sync::Object* o) {
  s.SemaV(o);
  return LMDX_OK;
}
int DoLock(sync::Service& s, sync::Object* o) {
  s.Lock(o);
  return LMDX_OK;
}
int DoUnlock(sync::Service& s, sync::Object* o) {
  s.Unlock(o);
  return LMDX_OK;
}
int DoTryLock(sync::Service& s, sync::Object* o) { return s.TryLock(o) ? 0 : 1; }

}  // namespace
}  // namespace lmdx::api

using lmdx::api::ByHandle;
using lmdx::api::ByName;
using lmdx::sync::ObjectKind;

extern "C" {

int lmdx_barrier_init(const char* name, int count) {
  return ByName("lmdx_barrier_init", name, ObjectKind::kBarrier, lmdx::api::BarrierInit(count));
}
int lmdx_barrier(const char* name) {
  return ByName("lmdx_barrier", name, ObjectKind::kBarrier, lmdx::api::DoBarrier);
}
int lmdx_barrier_all(void) {
  return lmdx::api::Guard("lmdx_barrier_all", [] {
    lmdx::api::RequireNode("lmdx_barrier_all");
    lmdx::sync::Current().BarrierAll();
    return LMDX_OK;
  });
}
int lmdx_sema_init(const char* name, int value) {
  return ByName("lmdx_sema_init", name, ObjectKind::kSemaphore, lmdx::api::SemaInit(value));
}
int lmdx_sema_p(const char* name) {
  return ByName("lmdx_sema_p", name, ObjectKind::kSemaphore, lmdx::api::DoSemaP);
}
int lmdx_sema_v(const char* name) {
  return ByName("lmdx_sema_v", name, ObjectKind::kSemaphore, lmdx::api::DoSemaV);
}
int lmdx_lock(const char* name) {
  return ByName("lmdx_lock", name, ObjectKind::kLock, lmdx::api::DoLock);
}
int lmdx_unlock(const char* name) {
  return ByName("lmdx_unlock", name, ObjectKind::kLock, lmdx::api::DoUnlock);
}
int lmdx_trylock(const char* name) {
  return ByName("lmdx_trylock", name, ObjectKind::kLock, lmdx::api::DoTryLock);
}

lmdx_barrier_t lmdx_barrier_find(const char* name) {
  return lmdx::api::Find<lmdx_barrier_t>("lmdx_barrier_find", name, ObjectKind::kBarrier);
}
lmdx_sema_t lmdx_sema_find(const char* name) {
  return lmdx::api::Find<lmdx_sema_t>("lmdx_sema_find", name, ObjectKind::kSemaphore);
}
lmdx_lock_t lmdx_lock_find(const char* name) {
  return lmdx::api::Find<lmdx_lock_t>("lmdx_lock_find", name, ObjectKind::kLock);
}

int lmdx_barrier_init_h(lmdx_barrier_t b, int count) {
  return ByHandle("lmdx_barrier_init", b, ObjectKind::kBarrier, lmdx::api::BarrierInit(count));
}
int lmdx_barrier_h(lmdx_barrier_t b) {
  return ByHandle("lmdx_barrier", b, ObjectKind::kBarrier, lmdx::api::DoBarrier);
}
int lmdx_sema_init_h(lmdx_sema_t s, int value) {
  return ByHandle("lmdx_sema_init", s, ObjectKind::kSemaphore, lmdx::api::SemaInit(value));
}
int lmdx_sema_p_h(lmdx_sema_t s) {
  return ByHandle("lmdx_sema_p", s, ObjectKind::kSemaphore, lmdx::api::DoSemaP);
}
int lmdx_sema_v_h(lmdx_sema_t s) {
  return ByHandle("lmdx_sema_v", s, ObjectKind::kSemaphore, lmdx::api::DoSemaV);
}
int lmdx_lock_h(lmdx_lock_t l) {
  return ByHandle("lmdx_lock", l, ObjectKind::kLock, lmdx::api::DoLock);
}
int lmdx_unlock_h(lmdx_lock_t l) {
  return ByHandle("lmdx_unlock", l, ObjectKind::kLock, lmdx::api::DoUnlock);
}
int lmdx_trylock_h(lmdx_lock_t l) {
  return ByHandle("lmdx_trylock", l, ObjectKind::kLock, lmdx::api::DoTryLock);
}

}  // extern "C"

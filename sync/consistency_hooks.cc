#include "sync/consistency_hooks.h"

#include <mutex>

namespace lmdx::sync {
namespace {

std::mutex hooks_mutex;

std::shared_ptr<ConsistencyHooks>& Installed() {
  static std::shared_ptr<ConsistencyHooks> hooks = std::make_shared<NullConsistencyHooks>();
  return hooks;
}

}  // namespace

const char* KindName(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kLock: return "lock";
    case ObjectKind::kBarrier: return "barrier";
    case ObjectKind::kSemaphore: return "semaphore";
    case ObjectKind::kThread: return "thread";
    case ObjectKind::kTask: return "task";
  }
  return "object";
}

void SetConsistencyHooks(std::shared_ptr<ConsistencyHooks> hooks) {
  std::lock_guard lock(hooks_mutex);
  Installed() = hooks ? std::move(hooks) : std::make_shared<NullConsistencyHooks>();
}

std::shared_ptr<ConsistencyHooks> CurrentConsistencyHooks() {
  std::lock_guard lock(hooks_mutex);
  return Installed();
}

}  // namespace lmdx::sync

// LMDX threads: lmdx_start_thread and the calls around it, over the execution manager
// (threads/service.h).
#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "api/internal/runtime_state.h"
#include "threads/service.h"

namespace lmdx::api {
namespace {

threads::Service& RequireThreads(const char* call) {
  RequireNode(call);
  threads::Service* service = threads::Current();
  if (service == nullptr)
    throw Error(LMDX_ERR_NOT_INITIALIZED, "the execution manager is not running");
  return *service;
}

using ThreadFunction = void* (*)(void*);

// The joinable threads this node started, by function, oldest first, until joined here: MDX
// names a thread by its function (LMDX_join_thread(prod)), which lmdxpp turns into
// lmdx_thread_started_from(prod).
class StartedThreads {
 public:
  void Add(ThreadFunction fn, lmdx_thread_t id) {
    std::lock_guard lock(mutex_);
    by_function_[fn].push_back(id);
  }
  void Forget(lmdx_thread_t id) {
    std::lock_guard lock(mutex_);
    for (auto it = by_function_.begin(); it != by_function_.end(); ++it) {
      auto& ids = it->second;
      auto found = std::find(ids.begin(), ids.end(), id);
      if (found == ids.end()) continue;
      ids.erase(found);
      if (ids.empty()) by_function_.erase(it);
      return;
    }
  }
  lmdx_thread_t Oldest(ThreadFunction fn) {
    std::lock_guard lock(mutex_);
    auto it = by_function_.find(fn);
    return it == by_function_.end() ? LMDX_THREAD_INVALID : it->second.front();
  }

 private:
  std::mutex mutex_;
  std::map<ThreadFunction, std::deque<lmdx_thread_t>> by_function_;
};

StartedThreads& Started() {
  static StartedThreads started;
  return started;
}

lmdx_thread_t StartThread(const char* call, int node, ThreadFunction fn, void* arg, bool detached) {
  lmdx_thread_t id = LMDX_THREAD_INVALID;
  Guard(call, [&] {
    id = RequireThreads(call).Start(fn, arg, node, detached);
    if (!detached) Started().Add(fn, id);
    return LMDX_OK;
  });
  return id;
}

}  // namespace

void EndThreadIfKilled() {
  threads::Service* service = threads::Current();
  if (service != nullptr) service->ExitIfKilled();
}

}  // namespace lmdx::api

extern "C" {

lmdx_thread_t lmdx_start_thread(void* (*fn)(void*), void* arg) {
  return lmdx::api::StartThread("lmdx_start_thread", -1, fn, arg, false);
}

lmdx_thread_t lmdx_start_dthread(void* (*fn)(void*), void* arg) {
  return lmdx::api::StartThread("lmdx_start_dthread", -1, fn, arg, true);
}

lmdx_thread_t lmdx_start_thread_on(int node, void* (*fn)(void*), void* arg) {
  if (node < 0) {
    lmdx::api::Fail("lmdx_start_thread_on", LMDX_ERR_INVALID_ARGUMENT,
                    "node " + std::to_string(node) + " is not a rank");
    return LMDX_THREAD_INVALID;
  }
  return lmdx::api::StartThread("lmdx_start_thread_on", node, fn, arg, false);
}

void* lmdx_join_thread(lmdx_thread_t thread) {
  void* result = nullptr;
  lmdx::api::Guard("lmdx_join_thread", [&] {
    result = lmdx::api::RequireThreads("lmdx_join_thread").Join(thread);
    lmdx::api::Started().Forget(thread);
    return LMDX_OK;
  });
  return result;
}

int lmdx_kill_thread(lmdx_thread_t thread) {
  return lmdx::api::Guard("lmdx_kill_thread", [&] {
    lmdx::api::RequireThreads("lmdx_kill_thread").Kill(thread);
    return LMDX_OK;
  });
}

int lmdx_exit_thread(void* result) {
  // In a child of fork() the thread's worker, to which the exit would unwind, does not exist.
  if (lmdx::InForkedChild()) return lmdx::api::FailInForkedChild("lmdx_exit_thread");
  lmdx::threads::Service* service = lmdx::threads::Current();
  if (service != nullptr && lmdx::threads::Scheduler::Current() != nullptr) {
    service->Exit(result);  // does not return: unwinds to the thread's outermost frame
  }
  return lmdx::api::Fail("lmdx_exit_thread", LMDX_ERR_MISUSE,
                         "called outside an LMDX thread (main ends by returning)");
}

lmdx_thread_t lmdx_thread_started_from(void* (*fn)(void*)) {
  lmdx_thread_t id = lmdx::api::Started().Oldest(fn);
  if (id == LMDX_THREAD_INVALID) {
    lmdx::api::Fail("lmdx_thread_started_from", LMDX_ERR_MISUSE,
                    "this node started no joinable thread from that function that is not "
                    "joined yet");
  }
  return id;
}

lmdx_thread_t lmdx_thread_self(void) {
  lmdx::threads::Service* service = lmdx::threads::Current();
  return service != nullptr ? service->Self() : LMDX_THREAD_INVALID;
}

int lmdx_thread_node(lmdx_thread_t thread) {
  return thread == LMDX_THREAD_INVALID ? -1 : lmdx::threads::Service::NodeOf(thread);
}

}  // extern "C"

#include "tasks/internal/runner_thread.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "base/error.h"

namespace lmdx::tasks::internal {
namespace {

void* Start(void* raw) {
  std::unique_ptr<std::function<void()>> body(static_cast<std::function<void()>*>(raw));
  (*body)();
  return nullptr;
}

// The lowest address of the calling thread's stack, looked up once per thread.
std::uintptr_t StackLow() {
  thread_local std::uintptr_t low = [] {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return std::uintptr_t{0};
    void* base = nullptr;
    std::size_t size = 0;
    pthread_attr_getstack(&attributes, &base, &size);
    pthread_attr_destroy(&attributes);
    return reinterpret_cast<std::uintptr_t>(base);
  }();
  return low;
}

}  // namespace

RunnerThread::RunnerThread(std::function<void()> body) {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, kStackBytes);
  auto owned = std::make_unique<std::function<void()>>(std::move(body));
  int failed = pthread_create(&thread_, &attributes, Start, owned.get());
  pthread_attr_destroy(&attributes);
  if (failed != 0) {
    throw Error(LMDX_ERR_INTERNAL,
                std::string("cannot start a task runner thread: ") + std::strerror(failed));
  }
  static_cast<void>(owned.release());  // the thread owns it now
  joinable_ = true;
}

RunnerThread::~RunnerThread() { Join(); }

void RunnerThread::Join() {
  if (!joinable_) return;
  pthread_join(thread_, nullptr);
  joinable_ = false;
}

std::size_t StackLeft() {
  char here = 0;
  auto at = reinterpret_cast<std::uintptr_t>(&here);
  std::uintptr_t low = StackLow();
  return low != 0 && at > low ? at - low : SIZE_MAX;
}

bool OnStackBelow(const void* address, const void* top) {
  auto at = reinterpret_cast<std::uintptr_t>(address);
  std::uintptr_t low = StackLow();
  return low != 0 && at >= low && at < reinterpret_cast<std::uintptr_t>(top);
}

}  // namespace lmdx::tasks::internal

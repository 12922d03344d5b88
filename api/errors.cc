// Error modes and texts of the C API.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "api/internal/runtime_state.h"
#include "base/log.h"
#include "threads/scheduler.h"

namespace lmdx::api {
namespace {

std::atomic<int> error_mode{LMDX_ERRORS_ARE_FATAL};
thread_local std::string last_error;
thread_local int last_error_code = LMDX_OK;
std::atomic<bool> job_ending{false};

}  // namespace

void MarkJobEnding() { job_ending.store(true, std::memory_order_release); }

void WaitIfTheJobIsEnding() {
  if (InForkedChild()) return;  // a child of fork() fails at once: its job is not ending
  if (!job_ending.load(std::memory_order_acquire) || threads::Scheduler::Current() == nullptr) {
    return;
  }
  // An LMDX thread: the main thread is tearing the node down and will end the process, so
  // whatever this thread would do or report now is moot. pause() blocks its worker (and the
  // worker's other threads, equally moot) with its core free until then.
  for (;;) ::pause();
}

void ExitAfterPeerLoss(const std::string& message) {
  WaitIfTheJobIsEnding();
  net::Node* node = CurrentNode();
  if (node != nullptr && node->info().launcher == "lmdx run") {
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  LogLine(message);
  std::fflush(nullptr);
  ::_exit(1);
}

int FailInForkedChild(const char* call) {
  return Fail(call, LMDX_ERR_MISUSE,
              "this process (pid " + std::to_string(::getpid()) +
                  ") is a child of fork() of the node; LMDX calls belong to the node's own "
                  "process, whose connections the child shares: exec a new program in the "
                  "child, or make the call in the parent");
}

int Fail(const char* call, int code, const std::string& message) {
  WaitIfTheJobIsEnding();
  std::string text = std::string(call) + ": " + message;
  if (error_mode.load(std::memory_order_relaxed) == LMDX_ERRORS_RETURN) {
    last_error = text;
    last_error_code = code;
    return code;
  }
  if (code == LMDX_ERR_PEER_LOST) ExitAfterPeerLoss(text);
  LogLine(text);
  std::fflush(nullptr);
  ::_exit(1);
}

}  // namespace lmdx::api

extern "C" {

void lmdx_set_error_mode(lmdx_error_mode mode) {
  lmdx::api::error_mode.store(mode == LMDX_ERRORS_RETURN ? LMDX_ERRORS_RETURN
                                                         : LMDX_ERRORS_ARE_FATAL);
}

lmdx_error_mode lmdx_get_error_mode(void) {
  return static_cast<lmdx_error_mode>(lmdx::api::error_mode.load());
}

const char* lmdx_last_error_message(void) { return lmdx::api::last_error.c_str(); }

int lmdx_last_error(void) { return lmdx::api::last_error_code; }

void lmdx_clear_error(void) {
  lmdx::api::last_error.clear();
  lmdx::api::last_error_code = LMDX_OK;
}

const char* lmdx_strerror(int code) {
  switch (code) {
    case LMDX_OK: return "success";
    case LMDX_ERR_NOT_INITIALIZED: return "LMDX is not initialized (call lmdx_init first)";
    case LMDX_ERR_ALREADY_INITIALIZED: return "LMDX is already initialized";
    case LMDX_ERR_INVALID_ARGUMENT: return "invalid argument";
    case LMDX_ERR_TRUNCATED: return "the message is longer than the receive buffer";
    case LMDX_ERR_PEER_LOST: return "a node of the job was lost";
    case LMDX_ERR_BOOTSTRAP: return "the node could not join the job";
    case LMDX_ERR_NETWORK: return "network failure";
    case LMDX_ERR_SHUTDOWN: return "the job is ending";
    case LMDX_ERR_INTERNAL: return "internal error";
    case LMDX_ERR_MISUSE: return "an LMDX object was used against its rules";
    case LMDX_ERR_CONFIG: return "the LMDX configuration is invalid";
    case LMDX_ERR_NO_MEMORY: return "out of shared memory";
    case LMDX_ERR_BAD_MESSAGE:
      return "a typed message is of another type than its port or does not parse";
    default: return "unknown LMDX error code";
  }
}

}  // extern "C"

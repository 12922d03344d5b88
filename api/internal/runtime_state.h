#ifndef LMDX_API_INTERNAL_RUNTIME_STATE_H_
#define LMDX_API_INTERNAL_RUNTIME_STATE_H_

#include <lmdx/lmdx.h>

#include <atomic>
#include <exception>
#include <string>

#include "base/error.h"
#include "base/forked_child.h"
#include "net/node.h"
#include "net/ports.h"
#include "net/wait_board.h"

namespace lmdx::api {

// The node of this process, or nullptr before lmdx_init and after lmdx_finalize. Read inline:
// every call asks it.
inline std::atomic<net::Node*> current_node{nullptr};
inline net::Node* CurrentNode() { return current_node.load(std::memory_order_acquire); }

// Reports a failed call by the error mode: in LMDX_ERRORS_ARE_FATAL prints one line naming the
// call, the rank and the reason, and ends the process; otherwise records the text for
// lmdx_last_error_message() and returns code.
int Fail(const char* call, int code, const std::string& message);

// Runs body (returning an int result) and turns lmdx::Error into Fail(call, ...).
// An LMDX thread killed by lmdx_kill_thread ends here, at its next call into LMDX.
void EndThreadIfKilled();

// The failure of every call made in a child of fork() (base/forked_child.h).
int FailInForkedChild(const char* call);

// Says, once per process, that the calling thread blocks the signal that brings this node's faults
// on shared memory to LMDX (SIGSEGV under mprotect, SIGBUS under userfaultfd): the kernel kills
// the node at such a thread's first fault, before any handler of LMDX runs, so this is the only
// place it can be said. One system call; Guard checks each thread at its first call, the calls
// that hand out shared memory check every time (api/dsm.cc).
void WarnIfFaultSignalBlocked(const char* call);
inline thread_local bool fault_signal_checked = false;

template <typename Body>
int Guard(const char* call, Body body) {
  // First, before any lock is taken: in a child of fork() a lock that another thread held at the
  // fork stays held for ever.
  if (InForkedChild()) [[unlikely]]
    return FailInForkedChild(call);
  EndThreadIfKilled();
  if (!fault_signal_checked) [[unlikely]]
    WarnIfFaultSignalBlocked(call);
  try {
    // A thread that calls LMDX is the program's: the hang watch counts it (net/wait_board.h).
    net::wait_board::NoteProgramThread();
    return body();
  } catch (const Error& error) {
    EndThreadIfKilled();  // a wait the kill interrupted ends the thread, not the job
    return Fail(call, error.code(), error.what());
  } catch (const std::exception& error) {
    return Fail(call, LMDX_ERR_INTERNAL, error.what());
  }
}

// This node's typed-message ports, or nullptr when CurrentNode() is.
net::Ports* CurrentPorts();

// Throws NOT_INITIALIZED (after waiting for the job's end when it is ending).
[[noreturn]] void ThrowNoNode();
// The node, or a failure NOT_INITIALIZED (Guard names the call).
inline net::Node& RequireNode(const char* /*call*/) {
  net::Node* node = CurrentNode();
  if (node == nullptr) [[unlikely]]
    ThrowNoNode();
  return *node;
}

// Ends the process after a peer was lost. When started by `lmdx run`, waits a moment first: the
// launcher sees the process that really failed and stops the whole job with a line naming it,
// which is the message the user needs, not this node's view of it.
[[noreturn]] void ExitAfterPeerLoss(const std::string& message);

// Threads style: set once the job's end has begun (rank 0's main returned or called exit, or
// another rank was told to shut down). An LMDX thread still running then ends with the process,
// as a POSIX thread does when main returns: its calls wait for that end instead of failing.
void MarkJobEnding();
// Waits for the process to end when the job is ending and the caller is not the main thread;
// returns at once otherwise.
void WaitIfTheJobIsEnding();

}  // namespace lmdx::api

#endif  // LMDX_API_INTERNAL_RUNTIME_STATE_H_

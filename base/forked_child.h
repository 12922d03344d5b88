// Whether this process is a child of fork() of an LMDX node that has not exec'd a new program.
//
// Such a child holds a copy of the node's memory but none of its threads, and its sockets are the
// parent's own: if it ran any of the runtime it would speak for the parent on the parent's
// connections. Every layer asks InForkedChild() before doing so, and leaves the runtime alone in
// the child (docs/dsm.md, "Outside the guarantee").
#ifndef LMDX_BASE_FORKED_CHILD_H_
#define LMDX_BASE_FORKED_CHILD_H_

#include <atomic>

namespace lmdx {

namespace internal {
inline std::atomic<bool> forked_child{false};
}  // namespace internal

// Marks every later child of fork() as one, from a pthread_atfork child handler. Idempotent;
// called when a node starts. Handlers a layer registers with pthread_atfork after this call run
// in the child after the mark (POSIX runs child handlers in the order they were registered).
void WatchForForks();

// One load: fault handlers and every API call ask it.
inline bool InForkedChild() { return internal::forked_child.load(std::memory_order_relaxed); }

}  // namespace lmdx

#endif  // LMDX_BASE_FORKED_CHILD_H_

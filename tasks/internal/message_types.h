// The task runtime's message types (net/wire.h gives tasks/ 600..699). Private to tasks/.
#ifndef LMDX_TASKS_INTERNAL_MESSAGE_TYPES_H_
#define LMDX_TASKS_INTERNAL_MESSAGE_TYPES_H_

#include "net/wire.h"

namespace lmdx::tasks::internal {

constexpr net::MessageType TypeOf(int offset) noexcept {
  return static_cast<net::MessageType>(static_cast<int>(net::MessageType::kFirstTasks) + offset);
}
// One-way, from a node's first spawn to every other node: tasks exist, start the runners.
inline constexpr net::MessageType kTaskBegin = TypeOf(0);
// Request from an idle node; reply wire::Stolen.
inline constexpr net::MessageType kTaskSteal = TypeOf(1);
// One-way, from a victim that refused a thief and has work again.
inline constexpr net::MessageType kTaskWork = TypeOf(2);
// One-way: a task pushed by a sharing scheduler; body wire::Task.
inline constexpr net::MessageType kTaskPush = TypeOf(3);
// One-way, to a task's origin when it has ended; body wire::Done.
inline constexpr net::MessageType kTaskDone = TypeOf(4);
// Request from rank 0 at the job's end; reply wire::Counters.
inline constexpr net::MessageType kTaskStats = TypeOf(5);

}  // namespace lmdx::tasks::internal

#endif  // LMDX_TASKS_INTERNAL_MESSAGE_TYPES_H_

// Names the task a runner was running when the process crashes or the task throws: its function,
// the node and its spawner (docs/tasks.md, "When a task fails"). Private to tasks/.
#ifndef LMDX_TASKS_INTERNAL_CRASH_NOTE_H_
#define LMDX_TASKS_INTERNAL_CRASH_NOTE_H_

#include <string>

#include "tasks/internal/task.h"

namespace lmdx::tasks::internal {

// "fib" when the symbol is known, else "the function at ./prog+0x1234".
std::string FunctionName(TaskFunction fn);
// "task fib of node 1", or "a thread of node 0" for a spawn outside any task.
std::string SpawnerOf(const Task& task, int node);

// While alive on a runner, a crash of that thread names this task (base/crash_note.h).
class CrashNote {
 public:
  CrashNote(const Task* task, int node);
  ~CrashNote();
  CrashNote(const CrashNote&) = delete;
  CrashNote& operator=(const CrashNote&) = delete;

 private:
  const Task* outer_task_;
  int outer_node_;
};

// A task let an exception out: ends the job with a line that names the task, its node and its
// spawner, as a crash does.
[[noreturn]] void EndJobForTask(const Task& task, int node, const std::string& what);
// The runtime met what cannot go on (a task from another node that cannot run here, an ending
// that names no task of this node): ends the job with why.
[[noreturn]] void EndJob(const std::string& why);

}  // namespace lmdx::tasks::internal

#endif  // LMDX_TASKS_INTERNAL_CRASH_NOTE_H_

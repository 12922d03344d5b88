#include "tasks/internal/crash_note.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "base/crash_note.h"
#include "base/error.h"
#include "base/log.h"
#include "threads/function_address.h"

namespace lmdx::tasks::internal {
namespace {

thread_local const Task* noted_task = nullptr;
thread_local int noted_node = -1;

void WriteNote(const CrashSite& site) {
  const Task* task = noted_task;
  if (task == nullptr) return;
  // In a signal handler: the program crashed in user code, so the runtime holds none of its
  // locks here, and formatting on the crashing thread is the last thing the process does.
  std::string line = "lmdx: rank " + std::to_string(noted_node) + ": the task " +
                     FunctionName(task->fn) + ", spawned by " + SpawnerOf(*task, noted_node) +
                     ", crashed (" + ::strsignal(site.signal) + ")\n";
  ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
  static_cast<void>(written);
}

}  // namespace

std::string FunctionName(TaskFunction fn) {
  try {
    threads::PortableFunction where = threads::Describe(reinterpret_cast<const void*>(fn));
    std::string name = threads::SymbolName(where);
    if (!name.empty()) return name;
    char offset[32];
    std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(where.offset));
    return "the function at " +
           (where.object.empty() ? std::string("the executable") : where.object) + offset;
  } catch (const Error&) {
    return "an unknown function";
  }
}

std::string SpawnerOf(const Task& task, int node) {
  if (!task.spawner.empty()) return task.spawner;  // it came from another node
  if (task.spawner_fn != nullptr) {
    return "task " + FunctionName(task.spawner_fn) + " of node " + std::to_string(node);
  }
  return "a thread of node " + std::to_string(node);
}

CrashNote::CrashNote(const Task* task, int node)
    : outer_task_(noted_task), outer_node_(noted_node) {
  static const bool installed = [] {
    AddCrashNoteWriter(WriteNote);
    return true;
  }();
  static_cast<void>(installed);
  noted_task = task;
  noted_node = node;
}

CrashNote::~CrashNote() {
  noted_task = outer_task_;
  noted_node = outer_node_;
}

void EndJobForTask(const Task& task, int node, const std::string& what) {
  LogLine("the task " + FunctionName(task.fn) + " on node " + std::to_string(node) +
          ", spawned by " + SpawnerOf(task, node) + ", " + what + "; the job ends");
  std::fflush(nullptr);
  std::abort();
}

void EndJob(const std::string& why) {
  LogLine("tasks: " + why + "; the job ends");
  std::fflush(nullptr);
  std::abort();
}

}  // namespace lmdx::tasks::internal

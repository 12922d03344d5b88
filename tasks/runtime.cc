// This node's side of the task runtime: the queue, the runners, spawn and wait. What crosses to
// other nodes (stealing, pushing, endings) is in stealing.cc.
#include "tasks/runtime.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <span>
#include <string>

#include "base/error.h"
#include "base/log.h"
#include "net/completion.h"
#include "net/wait_board.h"
#include "sync/consistency_hooks.h"
#include "tasks/internal/crash_note.h"

namespace lmdx::tasks {
namespace {

using Clock = std::chrono::steady_clock;

// Stack a waiting task keeps free below it before it stops running other tasks inline.
constexpr std::size_t kStackReserve = std::size_t{16} << 20;

// The runtime whose runner the calling thread is (nullptr on any other thread), and on a runner,
// the task it runs and the group of that task's children. Tasks run only on runners, and a
// runner is an OS thread that never switches stacks, so plain thread_locals follow the task.
thread_local Runtime* runner_of = nullptr;
thread_local internal::WaitGroup* task_group = nullptr;
thread_local const internal::Task* running_task = nullptr;
// On a runner, an address in the frame of the Run that runs running_task: the task's own frames
// lie below it.
thread_local const void* task_frame = nullptr;

// Lives as long as the process, as the execution manager does: runners may still be inside a
// task when the job ends.
std::atomic<Runtime*> current_pointer{nullptr};

}  // namespace

Runtime::Runtime(net::Node& node, Options options)
    : node_(node),
      options_(options),
      scheduling_(options.scheduling),
      random_(static_cast<unsigned>(node.rank()) * 7919u + 17u),
      loads_(static_cast<std::size_t>(node.size()), 0) {
  if (options_.runners < 1) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "a node needs at least one task runner");
  }
}

Runtime::~Runtime() { Stop(); }

void Runtime::Spawn(TaskFunction fn, const void* args, std::size_t size, bool write_back) {
  if (fn == nullptr) throw Error(LMDX_ERR_INVALID_ARGUMENT, "the task function is NULL");
  if (args == nullptr && size > 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                "the task's arguments are NULL but their size is " + std::to_string(size));
  }
  if (size > kMaxArgsBytes) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                "a task's arguments are " + std::to_string(size) + " bytes, over the limit of " +
                    std::to_string(kMaxArgsBytes) +
                    " (pass a pointer to shared memory for larger data)");
  }
  EnsureStarted();
  if (!announced_.load(std::memory_order_relaxed) &&
      !announced_.exchange(true, std::memory_order_acq_rel)) {
    Announce();
  }
  WaitGroup& group = CallerGroup();
  // Where it goes, first: a placement of the program's that fails leaves nothing counted.
  int target = node_.rank();
  if (scheduling() != Scheduling::kSteal && node_.size() > 1) {
    target = PushTarget();
  } else if (any_hungry_.load(std::memory_order_relaxed)) {
    // A node asked this one for work and found none: this task goes to it at once, one message
    // instead of a notice, a steal request and its reply.
    int hungry = TakeHungry();
    if (hungry >= 0) target = hungry;
  }
  auto task = std::make_unique_for_overwrite<Task>();
  task->fn = fn;
  task->args.Assign(args, size);
  task->origin = node_.rank();
  task->group = reinterpret_cast<std::uintptr_t>(&group);
  task->args_address = write_back ? reinterpret_cast<std::uintptr_t>(args) : 0;
  task->write_back = write_back && size > 0;
  task->out_id = 0;
  task->spawner_fn = running_task != nullptr ? running_task->fn : nullptr;
  if (task->write_back && runner_of == this && task_frame != nullptr &&
      internal::OnStackBelow(args, task_frame)) {
    group.writes_into_frame = true;
  }
  group.state.fetch_add(1, std::memory_order_relaxed);
  counters_.spawned.fetch_add(1, std::memory_order_relaxed);
  if (target != node_.rank()) {
    Push(target, std::move(task));
  } else {
    Enqueue(std::move(task));
  }
}

void Runtime::Wait() {
  if (runner_of == this && task_group != nullptr) {
    Serve(task_group);
    TakeResults(*task_group);
    return;
  }
  if (!started()) return;  // nothing was ever spawned here
  WaitGroup& group = CallerGroup();
  WaitAsThread(group);
  TakeResults(group);
}

void Runtime::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_changed_.notify_all();
  exports_changed_.notify_all();
}

bool Runtime::StopAndJoin(std::chrono::milliseconds timeout) {
  Stop();
  std::unique_lock lock(mutex_);
  if (!threads_ended_.wait_for(lock, timeout, [this] { return live_threads_ == 0; })) return false;
  std::vector<std::unique_ptr<internal::RunnerThread>> ended;
  ended.swap(runners_);
  std::thread exporter = std::move(exporter_);
  lock.unlock();
  for (auto& runner : ended) runner->Join();
  if (exporter.joinable()) exporter.join();
  return true;
}

void Runtime::ThreadEnded() {
  {
    std::lock_guard lock(mutex_);
    --live_threads_;
  }
  threads_ended_.notify_all();
}

void Runtime::EnsureStarted() {
  if (started_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mutex_);
  if (started_.load(std::memory_order_relaxed) || stopping_) return;
  live_threads_ = options_.runners + 1;
  for (int i = 0; i < options_.runners; ++i) {
    runners_.push_back(std::make_unique<internal::RunnerThread>([this] {
      RunnerMain();
      ThreadEnded();
    }));
  }
  exporter_ = std::thread([this] {
    ExporterMain();
    ThreadEnded();
  });
  started_.store(true, std::memory_order_release);
}

void Runtime::RunnerMain() {
  runner_of = this;
  try {
    Serve(nullptr);
  } catch (const std::exception& error) {
    if (node_.ending()) return;
    internal::EndJob(std::string("a task runner of node ") + std::to_string(node_.rank()) +
                     " failed: " + error.what());
  }
}

std::uint64_t Runtime::Waiting() const { return queued_.load(std::memory_order_relaxed); }

std::unique_ptr<internal::Task> Runtime::TakeChildOf(const WaitGroup* group) {
  std::lock_guard lock(mutex_);
  auto group_address = reinterpret_cast<std::uintptr_t>(group);
  for (auto it = queue_.rbegin(); it != queue_.rend(); ++it) {
    if ((*it)->origin == node_.rank() && (*it)->out_id == 0 && (*it)->group == group_address) {
      std::unique_ptr<Task> task = std::move(*it);
      queue_.erase(std::next(it).base());
      queued_.store(queue_.size(), std::memory_order_relaxed);
      return task;
    }
  }
  return nullptr;
}

std::unique_ptr<internal::Task> Runtime::TakeNewest() {
  std::lock_guard lock(mutex_);
  if (queue_.empty()) return nullptr;
  std::unique_ptr<Task> task = std::move(queue_.back());
  queue_.pop_back();
  queued_.store(queue_.size(), std::memory_order_relaxed);
  return task;
}

void Runtime::Enqueue(std::unique_ptr<Task> task) {
  std::vector<int> hungry;
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
    queued_.store(queue_.size(), std::memory_order_relaxed);
    wake = sleeping_runners_ > 0;
    if (any_hungry_.load(std::memory_order_relaxed)) {
      hungry.assign(hungry_.begin(), hungry_.end());
      hungry_.clear();
      any_hungry_.store(false, std::memory_order_relaxed);
    }
  }
  if (wake) work_changed_.notify_all();  // not one: a runner waiting for its group may wake instead
  for (int node : hungry) TellOfWork(node);
}

int Runtime::TakeHungry() {
  std::lock_guard lock(mutex_);
  if (hungry_.empty()) return -1;
  int node = *hungry_.begin();
  hungry_.erase(hungry_.begin());
  any_hungry_.store(!hungry_.empty(), std::memory_order_relaxed);
  return node;
}

void Runtime::Serve(WaitGroup* group) {
  using internal::WaitGroup;
  for (;;) {
    if (group != nullptr && group->state.load(std::memory_order_acquire) == 0) return;
    // Tasks run while waiting nest on this stack; near its end a waiter only waits (its children
    // run on other runners or nodes) rather than overflow it.
    bool may_nest = group == nullptr || internal::StackLeft() > kStackReserve;
    if (may_nest) {
      if (std::unique_ptr<Task> task = TakeNewest()) {
        Run(std::move(task));
        continue;
      }
      if (StealAndRun()) continue;
    } else if (std::unique_ptr<Task> child = TakeChildOf(group)) {
      // Its own children only: they nest no deeper than the program's own recursion.
      Run(std::move(child));
      continue;
    }
    std::unique_lock lock(mutex_);
    if (group == nullptr && stopping_) return;
    if (group != nullptr) {
      group->sleeper = WaitGroup::Sleeper::kRunner;
      std::int64_t before = group->state.fetch_or(WaitGroup::kSleeping, std::memory_order_acq_rel);
      if (WaitGroup::CountOf(before) == 0) {
        group->state.fetch_and(~WaitGroup::kSleeping, std::memory_order_acq_rel);
        return;
      }
    }
    if (queue_.empty() || !may_nest || stopping_) {
      Clock::time_point slept = Clock::now();
      ++sleeping_runners_;
      // A steal may be due later; one in flight on another runner notifies when it is over.
      if (may_nest && !stopping_ && StealingEnabled() && !stealing_) {
        work_changed_.wait_until(lock, next_steal_);
      } else {
        work_changed_.wait(lock);
      }
      --sleeping_runners_;
      counters_.idle_ns.fetch_add(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - slept).count(),
          std::memory_order_relaxed);
    }
    if (group != nullptr) {
      std::int64_t before =
          group->state.fetch_and(~WaitGroup::kSleeping, std::memory_order_acq_rel);
      // The last end saw the flag: it will set kWoken under this mutex, and must be done with
      // the group before this waiter may leave.
      while (WaitGroup::CountOf(before) == 0 && (before & WaitGroup::kWoken) == 0) {
        work_changed_.wait(lock);
        before = group->state.load(std::memory_order_acquire);
      }
      group->state.fetch_and(~WaitGroup::kWoken, std::memory_order_acq_rel);
    }
  }
}

namespace {

// The task a runner runs and the group of its children, restored however the run ends.
class RunningScope {
 public:
  RunningScope(const internal::Task* task, internal::WaitGroup* children)
      : outer_task_(running_task), outer_group_(task_group), outer_frame_(task_frame) {
    running_task = task;
    task_group = children;
    task_frame = this;
  }
  ~RunningScope() {
    running_task = outer_task_;
    task_group = outer_group_;
    task_frame = outer_frame_;
  }
  RunningScope(const RunningScope&) = delete;
  RunningScope& operator=(const RunningScope&) = delete;

 private:
  const internal::Task* outer_task_;
  internal::WaitGroup* outer_group_;
  const void* outer_frame_;
};

}  // namespace

void Runtime::Run(std::unique_ptr<Task> task) {
  internal::CrashNote note(task.get(), node_.rank());
  counters_.run.fetch_add(1, std::memory_order_relaxed);
  {
    WaitGroup children;
    RunningScope running(task.get(), &children);
    try {
      if (!task->releases.empty()) {
        sync::CurrentConsistencyHooks()->OnAcquire({sync::ObjectKind::kTask, "start"},
                                                   std::span<const std::string>(task->releases));
      }
      task->fn(task->args.data());
    } catch (const std::exception& error) {
      internal::EndJobForTask(*task, node_.rank(), std::string("threw ") + error.what());
    } catch (...) {
      internal::EndJobForTask(*task, node_.rank(), "threw an exception that is not std::exception");
    }
    if (children.writes_into_frame && WaitGroup::CountOf(children.state.load()) != 0) {
      internal::EndJobForTask(*task, node_.rank(),
                              "returned while tasks it spawned with lmdx_spawn were still to "
                              "write their copies back into its stack frame (call lmdx_wait "
                              "before returning, or spawn with lmdx_spawn_copy)");
    }
    // A task ends when all it spawned has ended: its spawner's wait covers its descendants.
    try {
      Serve(&children);
      TakeResults(children);
    } catch (const std::exception& error) {
      internal::EndJobForTask(*task, node_.rank(),
                              std::string("could not wait for its children: ") + error.what());
    }
  }
  try {
    Ended(*task);
  } catch (const std::exception& error) {
    // At the job's end a task still running on a node that has left has nowhere to report.
    if (node_.ending()) return;
    internal::EndJobForTask(*task, node_.rank(),
                            std::string("ended, but its end could not reach node ") +
                                std::to_string(task->origin) + ": " + error.what());
  }
}

void Runtime::Ended(Task& task) {
  if (task.origin != node_.rank()) {
    EndElsewhere(task);
    return;
  }
  std::uint64_t group = task.group;
  std::uint64_t args_address = task.args_address;
  if (task.out_id != 0) {
    // It left and came back (pushed to a node that was busy, and stolen back from there).
    internal::OutTask record = CameBack(task.out_id);
    group = record.group;
    args_address = record.args_address;
  }
  if (args_address != 0 && task.args.size() > 0) {
    std::memcpy(reinterpret_cast<void*>(args_address), task.args.data(), task.args.size());
  }
  CountDown(*reinterpret_cast<WaitGroup*>(group));
}

void Runtime::CountDown(WaitGroup& group) {
  std::int64_t before = group.state.fetch_sub(1, std::memory_order_acq_rel);
  if (WaitGroup::CountOf(before) != 1 || (before & WaitGroup::kSleeping) == 0) return;
  // The waiter sleeps, and stays until kWoken says this is done with the group.
  if (group.sleeper == WaitGroup::Sleeper::kRunner) {
    std::lock_guard lock(mutex_);
    group.state.fetch_or(WaitGroup::kWoken, std::memory_order_acq_rel);
    work_changed_.notify_all();
    return;
  }
  std::lock_guard lock(group.mutex);
  group.state.fetch_or(WaitGroup::kWoken, std::memory_order_acq_rel);
  if (group.sleeper == WaitGroup::Sleeper::kFiber) {
    net::Completion::parking()->Wake(group.fiber);
  } else if (group.woken != nullptr) {
    group.woken->notify_all();
  }
}

void Runtime::WaitAsThread(WaitGroup& group) {
  net::Parking* parking = net::Completion::parking();
  void* fiber = parking != nullptr ? parking->Current() : nullptr;
  net::WaitReason reason{"lmdx_wait for the tasks spawned by", "this thread"};
  net::wait_board::Waiting waiting(&reason);
  std::unique_lock lock(group.mutex);
  group.sleeper = fiber != nullptr ? WaitGroup::Sleeper::kFiber : WaitGroup::Sleeper::kOsThread;
  group.fiber = fiber;
  std::int64_t state =
      group.state.fetch_or(WaitGroup::kSleeping, std::memory_order_acq_rel) | WaitGroup::kSleeping;
  if (WaitGroup::CountOf(state) == 0) state &= ~WaitGroup::kSleeping;  // nothing to wait for
  while (!WaitGroup::Released(state)) {
    if (fiber != nullptr) {
      lock.unlock();
      parking->Park();  // a wake that came first is remembered
      lock.lock();
      if (parking->Interrupted()) {
        // A killed LMDX thread stops waiting. Its group is the thread's own, on the heap, so an
        // end still owed a wake-up finds it (and a sleeper of none) later.
        group.sleeper = WaitGroup::Sleeper::kNone;
        group.state.fetch_and(~WaitGroup::kSleeping, std::memory_order_acq_rel);
        throw Error(LMDX_ERR_MISUSE, "lmdx_wait was interrupted: the waiting thread was killed");
      }
    } else {
      group.woken->wait(lock);
    }
    state = group.state.load(std::memory_order_acquire);
  }
  group.state.fetch_and(~(WaitGroup::kSleeping | WaitGroup::kWoken), std::memory_order_acq_rel);
  group.sleeper = WaitGroup::Sleeper::kNone;
  group.fiber = nullptr;
}

void Runtime::TakeResults(WaitGroup& group) {
  if (!group.any_left.load(std::memory_order_acquire)) return;
  std::vector<internal::EndedElsewhere> ended;
  {
    std::lock_guard lock(group.mutex);
    ended.swap(group.ended_elsewhere);
  }
  if (ended.empty()) return;
  std::vector<std::string> releases;
  releases.reserve(ended.size());
  for (internal::EndedElsewhere& result : ended) releases.push_back(std::move(result.release));
  // The wait is an acquire of every task end it covers; the copies are written after it, so that
  // a copy of the arguments wins over an older value of the same shared bytes.
  sync::CurrentConsistencyHooks()->OnAcquire({sync::ObjectKind::kTask, "end"},
                                             std::span<const std::string>(releases));
  for (const internal::EndedElsewhere& result : ended) {
    if (result.args_address != 0 && !result.args.empty()) {
      std::memcpy(reinterpret_cast<void*>(result.args_address), result.args.data(),
                  result.args.size());
    }
  }
}

internal::WaitGroup& Runtime::CallerGroup() {
  if (runner_of == this && task_group != nullptr) return *task_group;
  std::lock_guard lock(mutex_);
  std::unique_ptr<internal::CallerGroup>& caller = caller_groups_[net::CurrentThreadKey()];
  if (!caller) {
    caller = std::make_unique<internal::CallerGroup>();
    caller->group.woken = &caller->woken;
  }
  return caller->group;
}

void Runtime::SetUserPlacement(UserPlacement place, void* state) {
  std::lock_guard lock(mutex_);
  user_place_ = place;
  user_state_ = state;
  scheduling_.store(place != nullptr ? Scheduling::kUser : options_.scheduling,
                    std::memory_order_relaxed);
}

void Attach(net::Node& node, const Options& options) {
  auto runtime = std::make_unique<Runtime>(node, options);
  runtime->RegisterHandlers();
  // Never destroyed: a runner may be inside a task when the process ends.
  current_pointer.store(runtime.release(), std::memory_order_release);
}

Runtime* Current() { return current_pointer.load(std::memory_order_acquire); }

}  // namespace lmdx::tasks

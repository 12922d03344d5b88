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

// Lives as long as the process, as the execution manager does: runners may still be inside a
// task when the job ends.
std::atomic<Runtime*> current_pointer{nullptr};

}  // namespace

Runtime::Runtime(net::Node& node, Options options)
    : node_(node),
      options_(options),
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
  auto task = std::make_unique_for_overwrite<Task>();
  task->fn = fn;
  task->args = internal::ArgsCopy(args, size);
  task->origin = node_.rank();
  task->group = reinterpret_cast<std::uintptr_t>(&group);
  task->args_address = write_back ? reinterpret_cast<std::uintptr_t>(args) : 0;
  task->spawner_fn = running_task != nullptr ? running_task->fn : nullptr;
  group.state.fetch_add(1, std::memory_order_relaxed);
  counters_.spawned.fetch_add(1, std::memory_order_relaxed);
  if (options_.scheduling != Scheduling::kSteal && node_.size() > 1) {
    int target = PushTarget();
    if (target != node_.rank()) {
      Push(target, std::move(task));
      return;
    }
  } else if (any_hungry_.load(std::memory_order_relaxed)) {
    // A node asked this one for work and found none: this task goes to it at once, one message
    // instead of a notice, a steal request and its reply.
    int hungry = TakeHungry();
    if (hungry >= 0) {
      Push(hungry, std::move(task));
      return;
    }
  }
  Enqueue(std::move(task));
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
  Serve(nullptr);
}

std::uint64_t Runtime::Waiting() const { return queued_.load(std::memory_order_relaxed); }

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
    if ((queue_.empty() || !may_nest) && !stopping_) {
      Clock::time_point slept = Clock::now();
      ++sleeping_runners_;
      // A steal may be due later; one in flight on another runner notifies when it is over.
      if (may_nest && StealingEnabled() && !stealing_) {
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

void Runtime::Run(std::unique_ptr<Task> task) {
  if (!task->releases.empty()) {
    sync::CurrentConsistencyHooks()->OnAcquire({sync::ObjectKind::kTask, "start"},
                                               std::span<const std::string>(task->releases));
  }
  WaitGroup children;
  WaitGroup* outer_group = task_group;
  const Task* outer_task = running_task;
  task_group = &children;
  running_task = task.get();
  internal::CrashNote note(task.get(), node_.rank());
  counters_.run.fetch_add(1, std::memory_order_relaxed);
  try {
    task->fn(task->args.data());
  } catch (const std::exception& error) {
    internal::EndJobForTask(*task, node_.rank(), std::string("threw ") + error.what());
  } catch (...) {
    internal::EndJobForTask(*task, node_.rank(), "threw an exception that is not std::exception");
  }
  // A task ends when all it spawned has ended: its spawner's wait covers its descendants.
  Serve(&children);
  TakeResults(children);
  task_group = outer_group;
  running_task = outer_task;
  Ended(*task);
}

void Runtime::Ended(Task& task) {
  if (task.origin != node_.rank()) {
    EndElsewhere(task);
    return;
  }
  if (task.args_address != 0 && task.args.size() > 0) {
    std::memcpy(reinterpret_cast<void*>(task.args_address), task.args.data(), task.args.size());
  }
  CountDown(*reinterpret_cast<WaitGroup*>(task.group));
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
  } else {
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
  options_.scheduling = place != nullptr ? Scheduling::kUser : Scheduling::kSteal;
}

void Attach(net::Node& node, const Options& options) {
  auto runtime = std::make_unique<Runtime>(node, options);
  runtime->RegisterHandlers();
  // Never destroyed: a runner may be inside a task when the process ends.
  current_pointer.store(runtime.release(), std::memory_order_release);
}

Runtime* Current() { return current_pointer.load(std::memory_order_acquire); }

}  // namespace lmdx::tasks

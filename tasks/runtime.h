// Tasks (di_pSystem, seed 003): a program spawns functions with a copy of their arguments and
// waits for them; the runtime runs them on any node and balances the load, with no message in
// user code. A spawn is a release and a task's start an acquire; a task's end is a release and the
// wait that covers it an acquire, so tasks share the DSM under every protocol (docs/tasks.md).
//
// Each node runs its tasks on its own runner threads (one by default: the node is one core's
// worth of the job). Tasks spawned on a node wait in one queue: its runners take the newest, and
// other nodes steal the oldest (the largest part of a recursion). A task that waits for its
// children runs other tasks meanwhile, on its own stack, and sleeps only when there are none.
#ifndef LMDX_TASKS_RUNTIME_H_
#define LMDX_TASKS_RUNTIME_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "net/node.h"
#include "tasks/internal/runner_thread.h"
#include "tasks/internal/task.h"

namespace lmdx::tasks {
namespace wire {
class Task;
}  // namespace wire

// How a node's tasks reach other nodes.
enum class Scheduling {
  kSteal,        // idle nodes steal the oldest waiting task of a random victim
  kShare,        // a node keeps what its runners can take and pushes the rest round-robin
  kLeastLoaded,  // the same, pushing to the node that last said it had least to do
  kUser,         // the program's own placement (lmdx_set_task_scheduler)
};

// The program's placement of a spawn: the node to run it, or -1 (or this node) to keep it here.
// loads[r] is what node r last said it had waiting (this node's own is exact).
using UserPlacement = int (*)(void* state, int rank, int size, const std::uint64_t* loads);

struct Options {
  Scheduling scheduling = Scheduling::kSteal;
  int runners = 1;  // threads per node that run tasks
};

// A task's arguments are copied at the spawn and travel with it.
inline constexpr std::size_t kMaxArgsBytes = std::size_t{1} << 20;

struct Counters {
  std::atomic<std::uint64_t> spawned{0};
  std::atomic<std::uint64_t> run{0};
  std::atomic<std::uint64_t> stolen{0};          // tasks this node stole and ran
  std::atomic<std::uint64_t> given{0};           // tasks other nodes stole from this one
  std::atomic<std::uint64_t> pushed{0};          // tasks this node pushed to others
  std::atomic<std::uint64_t> received{0};        // tasks others pushed to this node
  std::atomic<std::uint64_t> steal_attempts{0};  // steal requests sent
  std::atomic<std::uint64_t> steal_failures{0};  // ... answered with nothing
  std::atomic<std::uint64_t> idle_ns{0};         // time runners slept with nothing to run
};

class Runtime {
 public:
  Runtime(net::Node& node, Options options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  void RegisterHandlers();

  // Copies size bytes at args; fn runs on some node with the copy, which overwrites args when it
  // ends (unless write_back is false), before the spawner's Wait returns.
  void Spawn(TaskFunction fn, const void* args, std::size_t size, bool write_back = true);
  // Waits until every task the caller spawned, and their descendants, has ended. A task that
  // waits runs other tasks meanwhile; a thread sleeps (a user-level thread parks).
  void Wait();
  // The program's placement, for Scheduling::kUser (and switches this node to it).
  void SetUserPlacement(UserPlacement place, void* state);
  Scheduling scheduling() const { return scheduling_.load(std::memory_order_relaxed); }

  // Stops the runners at the job's end: they leave after the task they run. True when every
  // thread of the runtime has ended within timeout (the node may then go); false when one is
  // still inside a task.
  bool StopAndJoin(std::chrono::milliseconds timeout);
  bool started() const { return started_.load(std::memory_order_acquire); }
  // Rank 0, at the job's end, while every node still serves: a table of every node's counters,
  // or "" when no node spawned a task.
  std::string JobStatsTable();
  const Counters& counters() const { return counters_; }
  const Options& options() const { return options_; }

 private:
  using Task = internal::Task;
  using WaitGroup = internal::WaitGroup;

  // ---- this node's queue and runners (runtime.cc)
  void Stop();
  void EnsureStarted();
  // Runs on each thread of the runtime as it ends.
  void ThreadEnded();
  void RunnerMain();
  // Runs tasks until group has none pending (nullptr: until Stop), stealing when the queue is
  // empty and sleeping when there is nothing to steal.
  void Serve(WaitGroup* group);
  std::unique_ptr<Task> TakeNewest();
  // A node that found no work here since this one last had some, or -1.
  int TakeHungry();
  void Enqueue(std::unique_ptr<Task> task);
  void Run(std::unique_ptr<Task> task);
  void Ended(Task& task);
  void CountDown(WaitGroup& group);
  void WaitAsThread(WaitGroup& group);
  void TakeResults(WaitGroup& group);
  WaitGroup& CallerGroup();
  std::uint64_t Waiting() const;

  // ---- statistics (stats.cc)
  void RegisterStatsHandler();

  // ---- other nodes (stealing.cc)
  bool StealingEnabled() const;
  void Announce();
  // Tells a node that this one refused that it has work now.
  void TellOfWork(int node);
  // One steal attempt when it is time for one; runs what it got. False: nothing was run.
  bool StealAndRun();
  int NextVictim();
  void ServeSteal(const net::ReplyTo& to, int thief);
  void ExporterMain();
  // Where a spawn goes under the pushing schedulers: a node, or this one.
  int PushTarget();
  void Push(int node, std::unique_ptr<Task> task);
  void EndElsewhere(Task& task);
  void OnDone(net::InboundMessage& message);
  void OnTask(net::InboundMessage& message);
  // A task of this node's goes to another: its group now waits on a message. True when this call
  // recorded it (ForgetOut undoes that if it does not leave after all).
  bool LeavesNode(Task& task);
  void ForgetOut(std::uint64_t id);
  // Takes the record of a task of this node's that ended here after it had left (pushed away and
  // stolen back): where its copy goes.
  internal::OutTask CameBack(std::uint64_t id);
  // A child of group waiting in the queue, for a waiter that may not run other tasks.
  std::unique_ptr<Task> TakeChildOf(const WaitGroup* group);
  void ToWire(const Task& task, wire::Task& out) const;
  std::unique_ptr<Task> FromWire(const wire::Task& in, const std::string& releases) const;

  net::Node& node_;
  Options options_;
  // options_.scheduling, or kUser while the program's placement is set.
  std::atomic<Scheduling> scheduling_;
  Counters counters_;

  mutable std::mutex mutex_;
  std::condition_variable work_changed_;  // runners: a task came, a group ended, a steal is due
  std::deque<std::unique_ptr<Task>> queue_;
  std::atomic<std::uint64_t> queued_{0};  // queue_.size(), for load reports without the lock
  std::vector<std::unique_ptr<internal::RunnerThread>> runners_;
  int live_threads_ = 0;  // runners and the exporter still running (guarded by mutex_)
  std::condition_variable threads_ended_;
  std::atomic<bool> started_{false};
  std::atomic<bool> announced_{false};
  bool stopping_ = false;
  // Tasks of this node's groups that run on other nodes, by the number each got when it left: an
  // ending from another node reaches a live group, and writes back the size that left, or nothing.
  std::unordered_map<std::uint64_t, internal::OutTask> out_;
  std::uint64_t next_out_id_ = 1;
  // Groups of callers that are not tasks (main, LMDX threads), by net::CurrentThreadKey().
  std::unordered_map<std::uint64_t, std::unique_ptr<internal::CallerGroup>> caller_groups_;
  int sleeping_runners_ = 0;  // runners waiting on work_changed_ for work (guarded by mutex_)

  // Stealing (guarded by mutex_).
  bool stealing_ = false;  // one steal in flight per node
  std::chrono::steady_clock::time_point next_steal_{};
  std::chrono::microseconds steal_backoff_{0};
  int refusals_in_round_ = 0;
  std::vector<int> victims_;  // this round's order
  std::size_t next_victim_ = 0;
  std::minstd_rand random_;
  std::unordered_set<int> hungry_;  // nodes refused since this node last had work
  std::atomic<bool> any_hungry_{false};

  // Steals this node answers: a thread of its own computes the release (which may itself wait on
  // the network, as hlrc's diffs do) so that the progress thread never blocks.
  struct Export {
    std::unique_ptr<Task> task;
    net::ReplyTo to;
  };
  std::deque<Export> exports_;
  std::condition_variable exports_changed_;
  std::thread exporter_;

  // Pushing schedulers (guarded by mutex_).
  int next_push_ = 0;
  std::vector<std::uint64_t> loads_;  // what each node last said it had waiting
  UserPlacement user_place_ = nullptr;
  void* user_state_ = nullptr;
};

// "steal", "share", "least_loaded", "the program's own".
const char* SchedulingName(Scheduling scheduling);

void Attach(net::Node& node, const Options& options);
// The node's runtime (set by Attach; lives as long as the process).
Runtime* Current();

}  // namespace lmdx::tasks

#endif  // LMDX_TASKS_RUNTIME_H_

// What crosses between nodes in the task runtime: steals (an idle node takes the oldest task of a
// victim), pushes (the sharing schedulers send a spawn away), and endings (a task that ran away
// from its spawner's node reports back with its copy of the arguments).
#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "base/error.h"
#include "base/little_endian.h"
#include "base/log.h"
#include "sync/consistency_hooks.h"
#include "tasks/internal/crash_note.h"
#include "tasks/internal/message_types.h"
#include "tasks/runtime.h"
#include "tasks/tasks.pb.h"
#include "threads/function_address.h"

namespace lmdx::tasks {
namespace {

using Clock = std::chrono::steady_clock;

using internal::kTaskBegin;
using internal::kTaskDone;
using internal::kTaskPush;
using internal::kTaskSteal;
using internal::kTaskWork;

// A thief that found nothing anywhere waits this long before its next round, doubling up to the
// maximum; a victim that gets work tells it at once, so the wait only bounds a lost notice.
constexpr std::chrono::microseconds kFirstBackoff{200};
constexpr std::chrono::microseconds kMaxBackoff{50'000};

// A task's releases as one frame payload: each one's length (8 bytes, little-endian), then it.
std::string EncodeReleases(const std::vector<std::string>& releases) {
  std::string out;
  for (const std::string& release : releases) {
    std::uint8_t length[8];
    StoreLittleEndian<std::uint64_t>(length, release.size());
    out.append(reinterpret_cast<const char*>(length), sizeof length);
    out.append(release);
  }
  return out;
}

std::vector<std::string> DecodeReleases(const std::string& bytes) {
  std::vector<std::string> releases;
  std::size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 8) throw Error(LMDX_ERR_INTERNAL, "a task's releases are cut short");
    auto length =
        LoadLittleEndian<std::uint64_t>(reinterpret_cast<const std::uint8_t*>(bytes.data() + at));
    at += 8;
    if (bytes.size() - at < length) throw Error(LMDX_ERR_INTERNAL, "a task's release is cut short");
    releases.emplace_back(bytes, at, length);
    at += length;
  }
  return releases;
}

}  // namespace

void Runtime::RegisterHandlers() {
  net::SetMessageTypeName(kTaskBegin, "task-begin");
  net::SetMessageTypeName(kTaskSteal, "task-steal");
  net::SetMessageTypeName(kTaskWork, "task-work");
  net::SetMessageTypeName(kTaskPush, "task-push");
  net::SetMessageTypeName(kTaskDone, "task-done");
  node_.Handle(kTaskBegin, [this](net::InboundMessage&, const net::ReplyTo*) { EnsureStarted(); });
  node_.Handle(kTaskSteal, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to != nullptr) ServeSteal(*to, message.header.source);
  });
  node_.Handle(kTaskWork, [this](net::InboundMessage&, const net::ReplyTo*) {
    {
      std::lock_guard lock(mutex_);
      next_steal_ = {};
      steal_backoff_ = std::chrono::microseconds{0};
      refusals_in_round_ = 0;
    }
    work_changed_.notify_all();
  });
  node_.Handle(kTaskPush,
               [this](net::InboundMessage& message, const net::ReplyTo*) { OnTask(message); });
  node_.Handle(kTaskDone,
               [this](net::InboundMessage& message, const net::ReplyTo*) { OnDone(message); });
  RegisterStatsHandler();
}

bool Runtime::StealingEnabled() const {
  return scheduling() == Scheduling::kSteal && node_.size() > 1;
}

void Runtime::Announce() {
  for (int rank = 0; rank < node_.size(); ++rank) {
    if (rank == node_.rank()) continue;
    try {
      node_.Send(rank, kTaskBegin, {});
    } catch (const Error& error) {
      DebugLine(std::string("tasks: node ") + std::to_string(rank) +
                " was not told that tasks exist: " + error.what());
    }
  }
}

void Runtime::TellOfWork(int node) {
  node_.SendAsync(node, kTaskWork, {}, {}, [](bool) {});
}

int Runtime::NextVictim() {
  if (next_victim_ >= victims_.size()) {
    // A new round: every other node once, in a random order, those of this host first (a steal
    // from them is a shared-memory round trip).
    std::vector<int> near;
    std::vector<int> far;
    for (int rank = 0; rank < node_.size(); ++rank) {
      if (rank == node_.rank()) continue;
      (node_.NetworkTo(rank) == "shm" ? near : far).push_back(rank);
    }
    std::shuffle(near.begin(), near.end(), random_);
    std::shuffle(far.begin(), far.end(), random_);
    victims_ = std::move(near);
    victims_.insert(victims_.end(), far.begin(), far.end());
    next_victim_ = 0;
  }
  return victims_[next_victim_++];
}

bool Runtime::StealAndRun() {
  if (!StealingEnabled()) return false;
  int victim = -1;
  {
    std::lock_guard lock(mutex_);
    if (stealing_ || stopping_ || Clock::now() < next_steal_) return false;
    stealing_ = true;
    victim = NextVictim();
  }
  counters_.steal_attempts.fetch_add(1, std::memory_order_relaxed);
  std::unique_ptr<Task> task;
  wire::Stolen stolen;
  bool answered = false;
  std::optional<net::InboundMessage> reply;
  try {
    reply = node_.Request(victim, kTaskSteal, {});
  } catch (const Error& error) {
    DebugLine("tasks: a steal from node " + std::to_string(victim) + " failed: " + error.what());
  }
  if (reply) {
    // The victim counts the task as given from here on: one that cannot run here is lost to its
    // spawner's wait, which would never end.
    if (!stolen.ParseFromString(reply->body)) {
      internal::EndJob("a malformed answer to a steal from node " + std::to_string(victim));
    }
    answered = true;
    if (stolen.has_task()) {
      try {
        task = FromWire(stolen.task(), net::PayloadText(*reply));
      } catch (const Error& error) {
        internal::EndJob("a task stolen from node " + std::to_string(victim) +
                         " cannot run here: " + error.what());
      }
    }
  }
  {
    std::lock_guard lock(mutex_);
    stealing_ = false;
    if (answered) loads_[victim] = stolen.victim_load();
    if (task) {
      refusals_in_round_ = 0;
      steal_backoff_ = std::chrono::microseconds{0};
      next_steal_ = {};
    } else if (++refusals_in_round_ >= node_.size() - 1) {
      refusals_in_round_ = 0;
      steal_backoff_ = std::clamp(steal_backoff_ * 2, kFirstBackoff, kMaxBackoff);
      next_steal_ = Clock::now() + steal_backoff_;
    }
  }
  work_changed_.notify_all();  // other runners may steal now, or learn when to
  if (!task) {
    counters_.steal_failures.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  counters_.stolen.fetch_add(1, std::memory_order_relaxed);
  Run(std::move(task));
  return true;
}

void Runtime::ServeSteal(const net::ReplyTo& to, int thief) {
  bool given = false;
  {
    std::lock_guard lock(mutex_);
    if (!queue_.empty() && !stopping_) {
      // The oldest: the largest part of a recursion.
      exports_.push_back(Export{std::move(queue_.front()), to});
      queue_.pop_front();
      queued_.store(queue_.size(), std::memory_order_relaxed);
      given = true;
    } else {
      hungry_.insert(thief);
      any_hungry_.store(true, std::memory_order_relaxed);
    }
  }
  if (given) {
    exports_changed_.notify_one();
    return;
  }
  wire::Stolen none;
  none.set_victim_load(0);
  node_.Reply(to, none.SerializeAsString());
}

void Runtime::ExporterMain() {
  for (;;) {
    Export item;
    {
      std::unique_lock lock(mutex_);
      exports_changed_.wait(lock, [this] { return !exports_.empty() || stopping_; });
      if (exports_.empty()) return;
      item = std::move(exports_.front());
      exports_.pop_front();
    }
    Task& task = *item.task;
    bool released = false;
    bool recorded = false;
    try {
      // A steal is the spawn's release, made late: it covers all this node wrote before it.
      task.releases.push_back(
          sync::CurrentConsistencyHooks()->OnRelease({sync::ObjectKind::kTask, "spawn"}));
      released = true;
      recorded = LeavesNode(task);
      wire::Stolen reply;
      ToWire(task, *reply.mutable_task());
      reply.set_victim_load(Waiting());
      counters_.given.fetch_add(1, std::memory_order_relaxed);
      node_.Reply(item.to, reply.SerializeAsString(),
                  net::OwnedPayload(EncodeReleases(task.releases)));
    } catch (const std::exception& error) {
      // Not given: it runs here after all, as it was before it was offered.
      if (released) task.releases.pop_back();
      if (recorded) {
        ForgetOut(task.out_id);
        task.out_id = 0;
      }
      try {
        node_.ReplyError(item.to, LMDX_ERR_INTERNAL, error.what());
      } catch (const std::exception& unanswered) {
        DebugLine(std::string("tasks: a steal went unanswered: ") + unanswered.what());
      }
      Enqueue(std::move(item.task));
    }
  }
}

bool Runtime::LeavesNode(Task& task) {
  // A task that came from another node, or left this one before, has its number already.
  if (task.origin != node_.rank() || task.out_id != 0) return false;
  auto* group = reinterpret_cast<WaitGroup*>(task.group);
  group->any_left.store(true, std::memory_order_release);
  std::lock_guard lock(mutex_);
  task.out_id = next_out_id_++;
  out_[task.out_id] =
      internal::OutTask{task.group, task.args_address, task.write_back ? task.args.size() : 0};
  return true;
}

void Runtime::ForgetOut(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  out_.erase(id);
}

internal::OutTask Runtime::CameBack(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto out = out_.find(id);
  if (out == out_.end()) {
    internal::EndJob("a task of node " + std::to_string(node_.rank()) +
                     " came back with a number no task of it has");
  }
  internal::OutTask record = out->second;
  out_.erase(out);
  return record;
}

void Runtime::ToWire(const Task& task, wire::Task& out) const {
  threads::PortableFunction where = threads::Describe(reinterpret_cast<const void*>(task.fn));
  out.set_object(where.object);
  out.set_offset(where.offset);
  out.set_args(task.args.data(), task.args.size());
  out.set_origin(task.origin);
  out.set_id(task.out_id);
  out.set_write_back(task.write_back);
  out.set_spawner(internal::SpawnerOf(task, node_.rank()));
}

std::unique_ptr<internal::Task> Runtime::FromWire(const wire::Task& in,
                                                  const std::string& releases) const {
  if (in.origin() < 0 || in.origin() >= node_.size()) {
    throw Error(LMDX_ERR_INTERNAL, "a task names node " + std::to_string(in.origin()) +
                                       " as its origin, in a job of " +
                                       std::to_string(node_.size()));
  }
  auto task = std::make_unique<Task>();
  // The same executable runs everywhere, so a function that is not found here is a job that
  // mixes executables: nothing could run the task.
  task->fn = reinterpret_cast<TaskFunction>(threads::Locate({in.object(), in.offset()}));
  task->args.Assign(in.args().data(), in.args().size());
  task->origin = in.origin();
  task->group = 0;  // kept at the origin, under the task's number
  task->args_address = 0;
  task->write_back = in.write_back();
  task->out_id = in.id();
  task->spawner_fn = nullptr;
  if (task->out_id == 0) throw Error(LMDX_ERR_INTERNAL, "a task that left its node has no number");
  task->releases = DecodeReleases(releases);
  task->spawner = in.spawner();
  return task;
}

int Runtime::PushTarget() {
  std::unique_lock lock(mutex_);
  const std::uint64_t here = queue_.size();
  // Each scheduler keeps what this node's runners can take next, and places the rest.
  if (here < static_cast<std::uint64_t>(options_.runners)) return node_.rank();
  switch (scheduling()) {
    case Scheduling::kShare: {
      next_push_ = (next_push_ + 1) % node_.size();
      if (next_push_ == node_.rank()) next_push_ = (next_push_ + 1) % node_.size();
      return next_push_;
    }
    case Scheduling::kLeastLoaded: {
      int best = node_.rank();
      std::uint64_t best_load = here;
      for (int step = 1; step < node_.size(); ++step) {
        int rank = (node_.rank() + step) % node_.size();
        if (loads_[rank] < best_load) {
          best = rank;
          best_load = loads_[rank];
        }
      }
      // Counted at once, so that a burst of spawns spreads before the next report comes back.
      if (best != node_.rank()) ++loads_[best];
      return best;
    }
    case Scheduling::kUser: {
      if (user_place_ == nullptr) return node_.rank();
      std::vector<std::uint64_t> loads = loads_;
      loads[node_.rank()] = here;
      UserPlacement place = user_place_;
      void* state = user_state_;
      lock.unlock();  // the program's code may take its time
      int chosen = place(state, node_.rank(), node_.size(), loads.data());
      if (chosen < -1 || chosen >= node_.size()) {
        throw Error(LMDX_ERR_INVALID_ARGUMENT,
                    "the task scheduler chose node " + std::to_string(chosen) +
                        ", which is not in this job of " + std::to_string(node_.size()) +
                        " nodes (-1 keeps the task here)");
      }
      return chosen < 0 ? node_.rank() : chosen;
    }
    case Scheduling::kSteal: break;
  }
  return node_.rank();
}

void Runtime::Push(int node, std::unique_ptr<Task> task) {
  bool recorded = false;
  try {
    task->releases.push_back(
        sync::CurrentConsistencyHooks()->OnRelease({sync::ObjectKind::kTask, "spawn"}));
    recorded = LeavesNode(*task);
    wire::Task message;
    ToWire(*task, message);
    message.set_sender_load(Waiting());
    node_.Send(node, kTaskPush, message.SerializeAsString(),
               net::OwnedPayload(EncodeReleases(task->releases)));
    counters_.pushed.fetch_add(1, std::memory_order_relaxed);
  } catch (const Error& error) {
    DebugLine("tasks: a task could not go to node " + std::to_string(node) +
              ", it runs here: " + error.what());
    if (recorded) {
      ForgetOut(task->out_id);
      task->out_id = 0;
    }
    task->releases.clear();
    Enqueue(std::move(task));
  }
}

void Runtime::OnTask(net::InboundMessage& message) {
  wire::Task in;
  int source = message.header.source;
  // Its spawner waits for it: a task that cannot run here would leave that wait hanging.
  if (!in.ParseFromString(message.body)) {
    internal::EndJob("a malformed task from node " + std::to_string(source));
  }
  std::unique_ptr<Task> task;
  try {
    task = FromWire(in, net::PayloadText(message));
  } catch (const Error& error) {
    internal::EndJob("a task from node " + std::to_string(source) +
                     " cannot run here: " + error.what());
  }
  {
    std::lock_guard lock(mutex_);
    loads_[message.header.source] = in.sender_load();
  }
  counters_.received.fetch_add(1, std::memory_order_relaxed);
  EnsureStarted();
  Enqueue(std::move(task));
}

void Runtime::EndElsewhere(Task& task) {
  // Its end is a release, acquired by the wait that covers it on the spawner's node.
  std::string release =
      sync::CurrentConsistencyHooks()->OnRelease({sync::ObjectKind::kTask, "end"});
  wire::Done done;
  done.set_id(task.out_id);
  // No copy goes back when nobody waits for it (lmdx_spawn_copy).
  if (task.write_back) done.set_args(task.args.data(), task.args.size());
  done.set_sender_load(Waiting());
  node_.Send(task.origin, kTaskDone, done.SerializeAsString(),
             net::OwnedPayload(std::move(release)));
}

void Runtime::OnDone(net::InboundMessage& message) {
  wire::Done done;
  int source = message.header.source;
  if (!done.ParseFromString(message.body)) {
    LogLine("tasks: a malformed task ending from node " + std::to_string(source));
    return;
  }
  internal::OutTask record;
  {
    std::lock_guard lock(mutex_);
    loads_[source] = done.sender_load();
    auto out = out_.find(done.id());
    if (out == out_.end()) {
      LogLine("tasks: node " + std::to_string(source) +
              " reported the end of a task that no wait here expects");
      return;
    }
    record = out->second;
    if (done.args().size() != record.args_size) {
      LogLine("tasks: node " + std::to_string(source) + " sent back " +
              std::to_string(done.args().size()) + " bytes of a task's arguments where " +
              std::to_string(record.args_size) + " left; they are not written back");
      record.args_address = 0;
    }
    out_.erase(out);
  }
  auto* group = reinterpret_cast<WaitGroup*>(record.group);
  {
    std::lock_guard lock(group->mutex);
    group->ended_elsewhere.push_back(
        internal::EndedElsewhere{record.args_address, done.args(), net::PayloadText(message)});
  }
  CountDown(*group);
}

}  // namespace lmdx::tasks

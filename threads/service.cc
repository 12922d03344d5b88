#include "threads/service.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <boost/context/fiber.hpp>

#include "base/crash_note.h"
#include "base/error.h"
#include "base/hex.h"
#include "base/log.h"
#include "net/wait_board.h"
#include "sync/consistency_hooks.h"
#include "sync/service.h"
#include "threads/function_address.h"
#include "threads/threads.pb.h"

namespace lmdx::threads {
namespace {

constexpr net::MessageType TypeOf(int offset) noexcept {
  return static_cast<net::MessageType>(static_cast<int>(net::MessageType::kFirstThreads) + offset);
}
constexpr net::MessageType kThreadStart = TypeOf(0);
constexpr net::MessageType kThreadJoin = TypeOf(1);
constexpr net::MessageType kThreadKill = TypeOf(2);
constexpr net::MessageType kThreadLoad = TypeOf(3);
// One-way, from a joiner's node whose joiner was killed while it waited: the join is withdrawn.
constexpr net::MessageType kThreadUnjoin = TypeOf(4);

constexpr int kNumberBits = 40;

// Ends an LMDX thread from inside (lmdx_exit_thread, or a kill seen at a blocking call): thrown,
// and caught by the thread's outermost frame, so every C++ destructor on the way runs.
struct ThreadExit {
  void* result;
};

std::string Id(std::uint64_t id) {
  return "thread " + std::to_string(Service::NodeOf(id)) + ":" +
         std::to_string(id & ((std::uint64_t{1} << kNumberBits) - 1));
}

template <typename Message>
Message Parse(const std::string& body, const char* what) {
  Message parsed;
  if (!parsed.ParseFromString(body))
    throw Error(LMDX_ERR_INTERNAL, std::string("a malformed ") + what);
  return parsed;
}

// Runtime waits on an LMDX thread park it and run another thread of its worker.
class FiberParking final : public net::Parking {
 public:
  void* Current() override { return Scheduler::Current(); }
  void Park() override { Scheduler::Park(); }
  void ParkUntil(std::chrono::steady_clock::time_point deadline) override {
    Scheduler::ParkUntil(deadline);
  }
  bool Interrupted() override {
    Service* service = threads::Current();
    return service != nullptr && service->CallerKilled();
  }
  void Wake(void* thread) override { Scheduler::Wake(static_cast<UserThread*>(thread)); }
};

FiberParking fiber_parking;

std::mutex current_mutex;
// The node's service lives as long as the process: at exit its workers may still run a thread
// that is finishing (its join reply sent, the job ended by the joiner meanwhile), and a service
// destroyed among the static objects destroyed its user-level threads under them: a fiber still
// in use was unwound from the exiting thread, which aborted the process.
std::shared_ptr<Service>& CurrentService() {
  static std::shared_ptr<Service>* const holder =
      std::make_unique<std::shared_ptr<Service>>().release();
  return *holder;
}
}  // namespace

Service::Service(net::Node& node, Options options)
    : node_(node),
      options_(options),
      scheduler_(options.scheduler),
      next_node_((node.rank() + 1) % node.size()) {
  AddCrashNoteWriter(&Service::WriteCrashNote);
}

Service::~Service() { scheduler_.Abandon(); }

void Service::EndJobForException(std::uint64_t id, ThreadFunction fn, const char* what) {
  std::string name;
  try {
    name = SymbolName(Describe(reinterpret_cast<const void*>(fn)));
  } catch (const Error&) {
  }
  LogLine("an exception escaped the LMDX thread " + (name.empty() ? "" : name + " (") + Id(id) +
          (name.empty() ? "" : ")") + ": " + what +
          "; the job ends (catch exceptions inside the thread's function)");
  std::fflush(nullptr);
  std::abort();
}

void Service::WriteCrashNote(const CrashSite& site) {
  const auto* thread = static_cast<const CrashNoteOfThread*>(Scheduler::CurrentTag());
  if (thread == nullptr) return;
  std::string name;
  try {
    name = SymbolName(Describe(reinterpret_cast<const void*>(thread->fn)));
  } catch (const Error&) {
  }
  int rank = thread->rank;
  std::string here = "lmdx: rank " + std::to_string(rank) + ": ";
  std::string text = here + "the LMDX thread " + (name.empty() ? "" : name + " (") +
                     Id(thread->id) + ", started by node " + std::to_string(thread->started_by) +
                     " with argument " + AddressText(thread->argument) + (name.empty() ? "" : ")") +
                     " crashed (" + ::strsignal(site.signal) + ")\n";
  if (thread->started_by != rank && thread->argument != nullptr &&
      !InSharedRange(thread->argument)) {
    text += here + "its argument " + AddressText(thread->argument) +
            " does not point into shared memory: node " + std::to_string(thread->started_by) +
            "'s private memory (its stack, a global not declared LMDX_shared, its malloc) does " +
            "not exist on this node; a thread started on another node must be given a pointer " +
            "into shared memory (an LMDX_shared variable, lmdx_malloc)\n";
  }
  ssize_t written = ::write(STDERR_FILENO, text.data(), text.size());
  static_cast<void>(written);
}

void Service::RegisterHandlers() {
  net::SetMessageTypeName(kThreadStart, "thread-start");
  net::SetMessageTypeName(kThreadJoin, "thread-join");
  net::SetMessageTypeName(kThreadKill, "thread-kill");
  net::SetMessageTypeName(kThreadLoad, "thread-load");
  net::SetMessageTypeName(kThreadUnjoin, "thread-unjoin");
  node_.Handle(kThreadUnjoin, [this](net::InboundMessage& message, const net::ReplyTo*) {
    std::uint64_t id = Parse<wire::ThreadId>(message.body, "thread unjoin").id();
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;  // it ended and answered already
    auto& joiners = it->second.remote_joiners;
    int source = message.header.source;
    auto joiner = std::find_if(joiners.begin(), joiners.end(),
                               [source](const net::ReplyTo& to) { return to.dest == source; });
    if (joiner == joiners.end()) return;
    joiners.erase(joiner);
    it->second.joined = false;  // another thread may join it now
  });
  node_.Handle(kThreadLoad, [this](net::InboundMessage&, const net::ReplyTo* to) {
    if (to == nullptr) return;
    wire::Result load;
    load.set_value(running());
    node_.Reply(*to, load.SerializeAsString());
  });
  node_.Handle(kThreadStart, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    auto start = Parse<wire::Start>(message.body, "thread start");
    std::string consistency = net::PayloadText(message);
    wire::ThreadId reply;
    try {
      auto* fn = reinterpret_cast<ThreadFunction>(Locate({start.object(), start.offset()}));
      reply.set_id(StartHere(fn, reinterpret_cast<void*>(start.argument()), start.detached(),
                             message.header.source, std::move(consistency)));
    } catch (const Error& error) {
      node_.ReplyError(*to, error.code(), error.what());
      return;
    }
    node_.Reply(*to, reply.SerializeAsString());
  });
  node_.Handle(kThreadJoin, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    std::uint64_t id = Parse<wire::ThreadId>(message.body, "thread join").id();
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.detached || it->second.joined) {
      node_.ReplyError(*to, LMDX_ERR_MISUSE,
                       Id(id) + (it == entries_.end()  ? " does not exist (or was joined)"
                                 : it->second.detached ? " is detached"
                                                       : " is joined by another thread"));
      return;
    }
    it->second.joined = true;
    if (it->second.finished) {
      wire::Result result;
      result.set_value(it->second.result);
      net::Payload consistency = net::OwnedPayload(std::move(it->second.consistency));
      entries_.erase(it);
      node_.Reply(*to, result.SerializeAsString(), std::move(consistency));
      return;
    }
    it->second.remote_joiners.push_back(*to);  // answered when it ends
  });
  node_.Handle(kThreadKill, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    std::uint64_t id = Parse<wire::ThreadId>(message.body, "thread kill").id();
    if (!KillHere(id)) {
      node_.ReplyError(*to, LMDX_ERR_MISUSE, Id(id) + " does not exist (or has ended)");
      return;
    }
    node_.Reply(*to, {});
  });
}

int Service::ChooseNode() {
  if (options_.placement == Placement::kLeastLoaded) {
    // Every node's count of running threads, asked in parallel; the fewest wins, the nodes after
    // this one first on a tie (as round-robin would go).
    std::vector<std::unique_ptr<net::Node::PendingRequest>> asked(node_.size());
    for (int rank = 0; rank < node_.size(); ++rank) {
      if (rank != node_.rank()) asked[rank] = node_.StartRequest(rank, kThreadLoad, {});
    }
    std::vector<std::uint64_t> load(node_.size(), 0);
    std::optional<Error> failure;
    for (int rank = 0; rank < node_.size(); ++rank) {
      if (rank == node_.rank()) {
        load[rank] = running();
        continue;
      }
      try {
        load[rank] = Parse<wire::Result>(node_.Await(*asked[rank]).body, "thread load").value();
      } catch (const Error& error) {
        if (!failure) failure = error;
      }
    }
    if (failure) throw *failure;
    int best = -1;
    for (int step = 1; step <= node_.size(); ++step) {
      int rank = (node_.rank() + step) % node_.size();
      if (best < 0 || load[rank] < load[best]) best = rank;
    }
    return best;
  }
  // Round-robin from the node after this one, so threads started by rank 0's main spread over
  // every node in rank order.
  int node = next_node_.fetch_add(1, std::memory_order_relaxed);
  return ((node % node_.size()) + node_.size()) % node_.size();
}

std::uint64_t Service::Start(ThreadFunction fn, void* argument, int node, bool detached) {
  if (fn == nullptr) throw Error(LMDX_ERR_INVALID_ARGUMENT, "the thread function is NULL");
  if (node >= node_.size() || node < -1) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "there is no node " + std::to_string(node) +
                                               " in a job of " + std::to_string(node_.size()));
  }
  if (node < 0) node = ChooseNode();
  if (node == node_.rank()) return StartHere(fn, argument, detached, node_.rank());
  PortableFunction where = Describe(reinterpret_cast<const void*>(fn));
  wire::Start start;
  start.set_object(where.object);
  start.set_offset(where.offset);
  start.set_argument(reinterpret_cast<std::uintptr_t>(argument));
  start.set_detached(detached);
  // A start is a release: the new thread sees what its starter wrote (docs/protocols.md).
  net::Payload consistency = net::OwnedPayload(
      sync::CurrentConsistencyHooks()->OnRelease({sync::ObjectKind::kThread, "start"}));
  auto reply = node_.Request(node, kThreadStart, start.SerializeAsString(), std::move(consistency));
  return Parse<wire::ThreadId>(reply.body, "thread id").id();
}

std::uint64_t Service::StartHere(ThreadFunction fn, void* argument, bool detached, int started_by,
                                 std::optional<std::string> start_payload) {
  std::lock_guard lock(mutex_);
  std::uint64_t id = (static_cast<std::uint64_t>(node_.rank()) << kNumberBits) | next_number_++;
  Entry& entry = entries_[id];
  entry.detached = detached;
  entry.thread = scheduler_.Spawn([this, id, fn, argument, started_by,
                                   start_payload = std::move(start_payload)] {
    // What a crash of this thread says (WriteCrashNote), readable with no lock: the starter
    // may still hold the table when the thread faults at once.
    const CrashNoteOfThread note{id, fn, argument, started_by, node_.rank()};
    Scheduler::SetCurrentTag(&note);
    WaitUntilOpen();
    void* result = nullptr;
    try {
      if (start_payload) {
        sync::CurrentConsistencyHooks()->OnAcquire(
            {sync::ObjectKind::kThread, "start"}, std::span<const std::string>(&*start_payload, 1));
      }
      result = fn(argument);
    } catch (const ThreadExit& exit) {
      result = exit.result;
    } catch (const std::exception& error) {
      // As std::thread's terminate, but said: a joiner on another node would otherwise wait for
      // an end that never comes.
      EndJobForException(id, fn, error.what());
    } catch (const boost::context::detail::forced_unwind&) {
      throw;  // a parked thread unwound at shutdown (threads/scheduler.cc)
    } catch (...) {
      EndJobForException(id, fn, "an exception of a type not derived from std::exception");
    }
    // A killed thread may have been stopped while it held locks; nobody else could free them.
    if (CallerKilled()) ReleaseLocks();
    // Its end is a release, for a joiner on another node (threads of one node share its copy).
    std::string released;
    try {
      released = sync::CurrentConsistencyHooks()->OnRelease({sync::ObjectKind::kThread, "end"});
    } catch (const Error& error) {
      DebugLine(std::string("threads: a thread's writes could not be released at its end: ") +
                error.what());
    }
    Finished(id, reinterpret_cast<std::uintptr_t>(result), std::move(released));
  });
  ids_[entry.thread.get()] = id;
  return id;
}

void Service::Open() {
  {
    std::lock_guard lock(open_mutex_);
    open_.store(true, std::memory_order_release);
  }
  opened_.notify_all();
}

// Blocks the worker itself, not just the fiber: until the node is open no LMDX thread of it may
// run, and a wait here lasts only while lmdx_init finishes.
void Service::WaitUntilOpen() {
  if (open_.load(std::memory_order_acquire)) return;
  std::unique_lock lock(open_mutex_);
  opened_.wait(lock, [this] { return open_.load(std::memory_order_acquire); });
}

void Service::Finished(std::uint64_t id, std::uint64_t result, std::string consistency) {
  std::vector<net::ReplyTo> joiners;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    ids_.erase(it->second.thread.get());
    it->second.finished = true;
    it->second.result = result;
    it->second.consistency = consistency;
    joiners.swap(it->second.remote_joiners);
    if (it->second.detached || !joiners.empty()) entries_.erase(it);
  }
  wire::Result reply;
  reply.set_value(result);
  net::Payload payload = net::OwnedPayload(std::move(consistency));
  for (const net::ReplyTo& to : joiners) node_.Reply(to, reply.SerializeAsString(), payload);
}

void* Service::Join(std::uint64_t id) {
  if (id == Self()) throw Error(LMDX_ERR_MISUSE, Id(id) + " cannot join itself");
  if (NodeOf(id) == node_.rank()) return reinterpret_cast<void*>(JoinHere(id));
  if (NodeOf(id) < 0 || NodeOf(id) >= node_.size()) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, Id(id) + " names no node of this job");
  }
  wire::ThreadId request;
  request.set_id(id);
  // A joiner killed while it waits withdraws its join; a result that comes anyway is dropped.
  auto reply =
      node_.RequestUnlessInterrupted(NodeOf(id), kThreadJoin, request.SerializeAsString(), nullptr);
  if (!reply) {
    try {
      node_.Send(NodeOf(id), kThreadUnjoin, request.SerializeAsString());
    } catch (const Error& error) {
      DebugLine(std::string("threads: a join was not withdrawn: ") + error.what());
    }
    throw ThreadExit{kKilledResult};
  }
  auto result = Parse<wire::Result>(reply->body, "thread result");
  // A join is an acquire: the joiner sees what the thread wrote.
  std::string consistency = net::PayloadText(*reply);
  sync::CurrentConsistencyHooks()->OnAcquire({sync::ObjectKind::kThread, "end"},
                                             std::span<const std::string>(&consistency, 1));
  return reinterpret_cast<void*>(result.value());
}

std::uint64_t Service::JoinHere(std::uint64_t id) {
  std::shared_ptr<UserThread> thread;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.detached || it->second.joined) {
      throw Error(LMDX_ERR_MISUSE,
                  Id(id) + (it == entries_.end()  ? " does not exist (or was joined)"
                            : it->second.detached ? " is detached"
                                                  : " is joined by another thread"));
    }
    it->second.joined = true;
    thread = it->second.thread;
  }
  // A wait in LMDX like any other, for the hang report (its reason names the thread joined).
  std::string joined = Id(id);
  net::WaitReason reason{"lmdx_join_thread of", joined};
  std::optional<net::wait_board::Waiting> waiting(std::in_place, &reason);
  bool ended = thread->JoinUnless([this] { return CallerKilled(); });
  waiting.reset();
  if (!ended) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it != entries_.end()) it->second.joined = false;  // another thread may join it still
    throw ThreadExit{kKilledResult};
  }
  ExitIfKilled();
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  std::uint64_t result = it->second.result;
  entries_.erase(it);
  return result;
}

void Service::Kill(std::uint64_t id) {
  if (NodeOf(id) != node_.rank()) {
    wire::ThreadId request;
    request.set_id(id);
    node_.Request(NodeOf(id), kThreadKill, request.SerializeAsString());
    return;
  }
  if (!KillHere(id)) throw Error(LMDX_ERR_MISUSE, Id(id) + " does not exist (or has ended)");
}

bool Service::KillHere(std::uint64_t id) {
  std::shared_ptr<UserThread> thread;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return false;
    it->second.killed = true;
    any_killed_.store(true, std::memory_order_release);
    if (!it->second.finished) thread = it->second.thread;
  }
  // A thread parked in a wait stops waiting (net::Completion::WaitUnlessInterrupted) and ends.
  if (thread) Scheduler::Wake(thread.get());
  return true;
}

void Service::ReleaseLocks() {
  try {
    sync::Current().ReleaseLocksOfCaller();
  } catch (const Error& error) {
    DebugLine(std::string("threads: a killed thread's locks: ") + error.what());
  }
}

void Service::Exit(void* result) {
  if (Scheduler::Current() == nullptr) {
    throw Error(LMDX_ERR_MISUSE, "lmdx_exit_thread is for LMDX threads; main ends by returning");
  }
  throw ThreadExit{result};
}

std::uint64_t Service::Self() const {
  const UserThread* current = Scheduler::Current();
  std::lock_guard lock(mutex_);
  auto it = current != nullptr ? ids_.find(current) : ids_.end();
  if (it != ids_.end()) return it->second;
  return static_cast<std::uint64_t>(node_.rank()) << kNumberBits;
}

bool Service::CallerKilled() const {
  if (!any_killed_.load(std::memory_order_acquire)) return false;
  const UserThread* current = Scheduler::Current();
  if (current == nullptr) return false;
  std::lock_guard lock(mutex_);
  auto id = ids_.find(current);
  if (id == ids_.end()) return false;
  auto entry = entries_.find(id->second);
  return entry != entries_.end() && entry->second.killed;
}

void Service::ExitKilled() { throw ThreadExit{kKilledResult}; }

std::size_t Service::running() const { return scheduler_.live(); }

std::string Service::NameOf(std::uint64_t thread_key) {
  std::lock_guard lock(mutex_);
  auto it = ids_.find(reinterpret_cast<UserThread*>(static_cast<std::uintptr_t>(thread_key)));
  return it == ids_.end() ? "" : Id(it->second);
}

void Attach(net::Node& node, const Service::Options& options) {
  // The hang report counts and names this node's LMDX threads through whichever service is
  // current (never destroyed while the process runs threads).
  static const bool counted = [] {
    net::wait_board::SetUserThreads(
        [] {
          Service* service = Current();
          return service != nullptr ? service->running() : std::size_t{0};
        },
        [](std::uint64_t key) {
          Service* service = Current();
          return service != nullptr ? service->NameOf(key) : std::string();
        });
    return true;
  }();
  static_cast<void>(counted);
  auto service = std::make_shared<Service>(node, options);
  service->RegisterHandlers();
  net::Completion::SetParking(&fiber_parking);
  std::lock_guard lock(current_mutex);
  CurrentService() = std::move(service);
  current_service_pointer.store(CurrentService().get(), std::memory_order_release);
}

}  // namespace lmdx::threads

// The execution manager of one node (blueprint section 8): starts LMDX threads on any node of the
// job as user-level threads of that node's scheduler, and joins, kills and ends them from any
// node. A thread id is global: the node that runs the thread in its top 24 bits, a number of that
// node below.
#ifndef LMDX_THREADS_SERVICE_H_
#define LMDX_THREADS_SERVICE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/crash_note.h"
#include "net/node.h"
#include "threads/scheduler.h"

namespace lmdx::threads {

using ThreadFunction = void* (*)(void*);

// How a thread started without a node is placed.
enum class Placement { kRoundRobin, kLeastLoaded };

class Service {
 public:
  struct Options {
    Scheduler::Options scheduler;
    Placement placement = Placement::kRoundRobin;
  };

  Service(net::Node& node, Options options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  void RegisterHandlers();
  // Lets threads run. A node takes start requests as soon as it has joined the job, before
  // lmdx_init has finished setting it up (the API's node pointer, the program's shared
  // variables); threads started until then wait here before running any user code.
  void Open();

  // Starts fn(argument) on node (-1: where the placement policy says); returns the thread's id.
  std::uint64_t Start(ThreadFunction fn, void* argument, int node, bool detached);
  // Waits until the thread ends and returns its result. A detached thread, a thread already
  // joined and an unknown id are LMDX_ERR_MISUSE.
  void* Join(std::uint64_t id);
  // Marks the thread killed: it ends at its next blocking runtime call, with LMDX_KILLED as its
  // result (a thread that never calls the runtime runs to its end, as a deferred pthread_cancel).
  void Kill(std::uint64_t id);
  // From an LMDX thread: ends it with result. From any other thread: LMDX_ERR_MISUSE.
  [[noreturn]] void Exit(void* result);
  // The calling LMDX thread's id; a node's own OS threads (main) get the node's id 0 number.
  std::uint64_t Self() const;
  // Throws the thread's exit when the calling LMDX thread was killed (the runtime's blocking
  // calls check this when they return).
  void ExitIfKilled() const {
    if (any_killed_.load(std::memory_order_acquire) && CallerKilled()) ExitKilled();
  }
  // True when the calling LMDX thread was killed.
  bool CallerKilled() const;
  [[noreturn]] static void ExitKilled();

  static int NodeOf(std::uint64_t id) { return static_cast<int>(id >> 40); }
  // Threads of this node started and not yet ended.
  std::size_t running() const;
  // "thread 1:4" for the net::CurrentThreadKey() of one of this node's LMDX threads, else "".
  std::string NameOf(std::uint64_t thread_key);

 private:
  struct Entry {
    std::shared_ptr<UserThread> thread;
    bool finished = false;
    bool detached = false;
    bool joined = false;  // a join was claimed
    bool killed = false;
    std::uint64_t result = 0;
    std::string consistency;  // what its end released, for a joiner on another node
    std::vector<net::ReplyTo> remote_joiners;
  };

  // start_payload: the consistency payload of a starter on another node, acquired by the new
  // thread before it runs.
  std::uint64_t StartHere(ThreadFunction fn, void* argument, bool detached, int started_by,
                          std::optional<std::string> start_payload = std::nullopt);
  // The crash note of an LMDX thread of this node: its function, its starter and its argument,
  // and whether that argument could mean anything here (base/crash_note.h).
  static void WriteCrashNote(const CrashSite& site);
  // What a thread runs, on its own stack for its life, for the line a crash of it writes.
  struct CrashNoteOfThread {
    std::uint64_t id;
    ThreadFunction fn;
    void* argument;
    int started_by;
    int rank;
  };
  [[noreturn]] static void EndJobForException(std::uint64_t id, ThreadFunction fn,
                                              const char* what);
  void WaitUntilOpen();
  void ReleaseLocks();
  // Marks a thread of this node killed and wakes it; false when there is no such thread.
  bool KillHere(std::uint64_t id);
  void Finished(std::uint64_t id, std::uint64_t result, std::string consistency);
  std::uint64_t JoinHere(std::uint64_t id);
  int ChooseNode();

  net::Node& node_;
  Options options_;
  Scheduler scheduler_;
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, Entry> entries_;
  std::unordered_map<const UserThread*, std::uint64_t> ids_;
  std::uint64_t next_number_ = 1;
  std::atomic<bool> any_killed_{false};  // spares every call the table lookup until a kill
  std::atomic<int> next_node_;
  std::mutex open_mutex_;
  std::condition_variable opened_;
  std::atomic<bool> open_{false};
};

// The result of a killed thread.
inline void* const kKilledResult = reinterpret_cast<void*>(static_cast<std::intptr_t>(-1));

void Attach(net::Node& node, const Service::Options& options);
// Set by Attach; read inline, as every call into LMDX asks it (api::Guard).
inline std::atomic<Service*> current_service_pointer{nullptr};
inline Service* Current() { return current_service_pointer.load(std::memory_order_acquire); }

}  // namespace lmdx::threads

#endif  // LMDX_THREADS_SERVICE_H_

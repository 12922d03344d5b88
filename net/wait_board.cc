#include "net/wait_board.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "base/clock.h"
#include "base/forked_child.h"
#include "net/completion.h"

namespace lmdx::net {

std::string WaitReason::Text() const {
  std::string text = kind;
  if (!name.empty()) text += " \"" + std::string(name) + "\"";
  if (rank >= 0) text += " from rank " + std::to_string(rank);
  return text;
}

namespace wait_board {
namespace {

struct Board {
  // Held shared while the layers' callbacks run, so that StopAsking can wait them out.
  std::shared_mutex callbacks_mutex;
  std::mutex mutex;
  Waiting* first = nullptr;  // the waits entered, newest first
  std::size_t waiting = 0;
  std::function<std::size_t()> user_threads;
  std::function<std::string(std::uint64_t)> user_thread_name;
  std::vector<std::function<void(std::vector<std::string>&)>> describers;
  std::atomic<std::size_t> os_program_threads{0};
  std::atomic<std::int64_t> last_change_ns{CoarseMonotonicNs()};
  std::atomic<std::int64_t> last_traffic_ns{0};
  std::unordered_map<std::uint64_t, int> os_threads;  // program OS threads: key -> thread id
};

// Never destroyed: threads still running at exit may end waits on it.
Board& TheBoard() {
  alignas(Board) static unsigned char storage[sizeof(Board)];
  static Board* board = ::new (storage) Board();
  return *board;
}

// Counts the calling OS thread as a program thread while it lives (program_thread_counted says
// whether it does).
struct ProgramThreadMark {
  int os_thread = 0;
  std::uint64_t key = 0;
  void Uncount() {
    // Run at a thread's exit, also in a child of fork(), where the board's lock may be held for
    // ever by a thread that was in a wait at the fork: the child's board is never read anyway.
    if (!program_thread_counted || InForkedChild()) return;
    program_thread_counted = false;
    Board& board = TheBoard();
    board.os_program_threads.fetch_sub(1, std::memory_order_relaxed);
    // A change like a wait's: the others' quiet starts again from here.
    board.last_change_ns.store(CoarseMonotonicNs(), std::memory_order_relaxed);
    std::lock_guard lock(board.mutex);
    board.os_threads.erase(key);
  }
  ~ProgramThreadMark() { Uncount(); }
};
thread_local ProgramThreadMark program_thread_mark;

bool OnUserLevelThread() {
  Parking* parking = Completion::parking();
  return parking != nullptr && parking->Current() != nullptr;
}

// Holds the callbacks' lock shared, once per thread: a describer asks ThreadName under Take, and a
// second shared lock by the same thread could wait behind StopAsking's exclusive one for ever.
class CallbacksInUse {
 public:
  CallbacksInUse() {
    if (depth_++ == 0) TheBoard().callbacks_mutex.lock_shared();
  }
  ~CallbacksInUse() {
    if (--depth_ == 0) TheBoard().callbacks_mutex.unlock_shared();
  }
  CallbacksInUse(const CallbacksInUse&) = delete;
  CallbacksInUse& operator=(const CallbacksInUse&) = delete;

 private:
  static inline thread_local int depth_ = 0;
};

}  // namespace

Waiting::Waiting(const WaitReason* reason) : reason_(reason) {
  bool user_level = OnUserLevelThread();
  if (!user_level && !program_thread_counted) return;
  thread_ = CurrentThreadKey();
  since_ns_ = CoarseMonotonicNs();
  Board& board = TheBoard();
  std::lock_guard lock(board.mutex);
  next_ = board.first;
  if (next_ != nullptr) next_->prev_ = this;
  board.first = this;
  ++board.waiting;
  board.last_change_ns.store(since_ns_, std::memory_order_relaxed);
  entered_ = true;
}

Waiting::~Waiting() {
  if (!entered_) return;
  Board& board = TheBoard();
  std::lock_guard lock(board.mutex);
  (prev_ != nullptr ? prev_->next_ : board.first) = next_;
  if (next_ != nullptr) next_->prev_ = prev_;
  --board.waiting;
  board.last_change_ns.store(CoarseMonotonicNs(), std::memory_order_relaxed);
}

void NoteProgramThreadSlowly() {
  if (program_thread_counted || OnUserLevelThread()) return;
  ProgramThreadMark& mark = program_thread_mark;
  program_thread_counted = true;
  mark.os_thread = static_cast<int>(::gettid());
  mark.key = CurrentThreadKey();
  Board& board = TheBoard();
  board.os_program_threads.fetch_add(1, std::memory_order_relaxed);
  board.last_change_ns.store(CoarseMonotonicNs(), std::memory_order_relaxed);
  std::lock_guard lock(board.mutex);
  board.os_threads[mark.key] = mark.os_thread;
}

void NotAProgramThread() { program_thread_mark.Uncount(); }

void StopAsking() {
  Board& board = TheBoard();
  std::unique_lock callbacks(board.callbacks_mutex);
  std::lock_guard lock(board.mutex);
  board.user_threads = nullptr;
  board.user_thread_name = nullptr;
  board.describers.clear();
}

std::string ThreadName(std::uint64_t key) {
  Board& board = TheBoard();
  CallbacksInUse callbacks;
  std::function<std::string(std::uint64_t)> user_thread_name;
  {
    std::lock_guard lock(board.mutex);
    auto os = board.os_threads.find(key);
    if (os != board.os_threads.end()) {
      return os->second == ::getpid() ? "main thread" : "OS thread " + std::to_string(os->second);
    }
    user_thread_name = board.user_thread_name;
  }
  // Asked outside the board's lock: the namer takes the threads layer's own.
  std::string name = user_thread_name ? user_thread_name(key) : "";
  return name.empty() ? "a thread" : name;
}

void SetUserThreads(std::function<std::size_t()> count,
                    std::function<std::string(std::uint64_t)> name) {
  Board& board = TheBoard();
  std::lock_guard lock(board.mutex);
  board.user_threads = std::move(count);
  board.user_thread_name = std::move(name);
}

void AddDescriber(std::function<void(std::vector<std::string>& lines)> describe) {
  Board& board = TheBoard();
  std::lock_guard lock(board.mutex);
  board.describers.push_back(std::move(describe));
}

// Stored only when the coarse clock has moved on (every few milliseconds): a store on every frame
// cost a small message's receiver up to a fifth of its half round trip, waiting for the line.
void NoteTraffic() {
  std::atomic<std::int64_t>& last = TheBoard().last_traffic_ns;
  std::int64_t now = CoarseMonotonicNs();
  if (last.load(std::memory_order_relaxed) != now) last.store(now, std::memory_order_relaxed);
}

Snapshot Take() {
  Board& board = TheBoard();
  CallbacksInUse callbacks;
  Snapshot snapshot;
  std::function<std::size_t()> user_threads;
  std::vector<std::function<void(std::vector<std::string>&)>> describers;
  struct Seen {
    std::uint64_t thread;
    std::string what;
    std::int64_t since_ns;
  };
  std::vector<Seen> seen;
  {
    std::lock_guard lock(board.mutex);
    snapshot.waiting = board.waiting;
    for (const Waiting* w = board.first; w != nullptr; w = w->next_) {
      // Formatted under the lock: the reason lives only as long as its wait.
      std::string what = w->reason_ != nullptr ? w->reason_->Text() : WaitReason{}.Text();
      seen.push_back({w->thread_, std::move(what), w->since_ns_});
    }
    user_threads = board.user_threads;
    describers = board.describers;
  }
  std::int64_t now = CoarseMonotonicNs();
  snapshot.program_threads = board.os_program_threads.load(std::memory_order_relaxed) +
                             (user_threads ? user_threads() : 0);
  // Oldest wait first reads best.
  for (auto it = seen.rbegin(); it != seen.rend(); ++it) {
    snapshot.lines.push_back(ThreadName(it->thread) + ": " + it->what + " for " +
                             SecondsText(std::chrono::nanoseconds(now - it->since_ns)));
  }
  for (const auto& describe : describers) describe(snapshot.lines);
  if (snapshot.waiting >= snapshot.program_threads) {
    std::int64_t last = std::max(board.last_change_ns.load(std::memory_order_relaxed),
                                 board.last_traffic_ns.load(std::memory_order_relaxed));
    snapshot.quiet = std::chrono::milliseconds((now - last) / 1000000);
  }
  return snapshot;
}

}  // namespace wait_board
}  // namespace lmdx::net

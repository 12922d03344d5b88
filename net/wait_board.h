// What every thread of the program waits for in LMDX, so that a job whose threads all wait with
// nothing moving can say so (net/hang_watch.h), naming each wait, instead of hanging silently.
//
// A "program thread" is one that runs the program's code: an LMDX user-level thread, or an OS
// thread that called the C API (main, or a pthread of the program). Every untimed wait in
// net::Completion is entered here with the reason the layer that waits gave (a WaitReason on the
// waiting thread's stack). A node is quiet when each of its program threads waits and nothing
// arrived from the network for a while.
#ifndef LMDX_NET_WAIT_BOARD_H_
#define LMDX_NET_WAIT_BOARD_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace lmdx::net {

// Why a thread waits, for the report: `lock "L"`, `barrier "B"`, `a reply to "dsm-fetch" from
// rank 2`. Given to the wait by the layer that knows; it and the name it views live on the
// waiting thread's stack for the whole wait.
struct WaitReason {
  const char* kind = "a wait in LMDX";
  std::string_view name;  // quoted in the text when not empty
  int rank = -1;          // "from rank N" when not negative
  std::string Text() const;
};

// Process-wide, since a process is one node.
namespace wait_board {

struct Snapshot;

// An untimed wait of the calling thread, from construction to destruction (net::Completion).
// Only a program thread's wait is entered; reason may be null.
class Waiting {
 public:
  explicit Waiting(const WaitReason* reason);
  ~Waiting();
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

 private:
  friend Snapshot Take();
  bool entered_ = false;
  const WaitReason* reason_;
  std::uint64_t thread_ = 0;  // net::CurrentThreadKey()
  std::int64_t since_ns_ = 0;
  Waiting* prev_ = nullptr;
  Waiting* next_ = nullptr;
};

// The calling OS thread runs the program's code (it called the C API). Counted until it exits,
// or until NotAProgramThread. A user-level thread is counted by the threads layer instead.
void NoteProgramThreadSlowly();
// Whether the calling OS thread is counted already: a plain flag (no guard, no destructor), so the
// check on every call into LMDX stays a load.
inline thread_local bool program_thread_counted = false;
inline void NoteProgramThread() {
  if (!program_thread_counted) NoteProgramThreadSlowly();
}
// The calling OS thread serves the node rather than running the program (a threads-style node
// other than rank 0, once lmdx_init handed it to the node).
void NotAProgramThread();

// The threads layer says how many user-level threads are alive, and what to call a waiting
// thread by its net::CurrentThreadKey() ("thread 1:4"); empty when it is not one of its own.
void SetUserThreads(std::function<std::size_t()> count,
                    std::function<std::string(std::uint64_t)> name);
// A layer adds lines about the state of what it manages (`barrier "B": 2 of 3 arrived`) to
// every report. Describers must not block.
void AddDescriber(std::function<void(std::vector<std::string>& lines)> describe);

// "main thread", "OS thread 1234" or the threads layer's name ("thread 1:4") of a thread key.
std::string ThreadName(std::uint64_t key);

// Forgets the layers' counters, namers and describers, waiting for any call under way: from an
// exit handler, before the static objects they refer to are destroyed.
void StopAsking();

// A frame arrived (other than the watch's own): the job is not quiet.
void NoteTraffic();

struct Snapshot {
  std::size_t program_threads = 0;
  std::size_t waiting = 0;
  // How long every program thread has waited with no frame arriving; zero when one runs.
  std::chrono::milliseconds quiet{0};
  // One line per waiting program thread (`main thread: barrier "B" for 12.0 s`), then the
  // describers' lines.
  std::vector<std::string> lines;
};
Snapshot Take();

}  // namespace wait_board
}  // namespace lmdx::net

#endif  // LMDX_NET_WAIT_BOARD_H_

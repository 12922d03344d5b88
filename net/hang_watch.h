// A job whose threads all wait for each other says so instead of hanging silently.
//
// Rank 0 looks at its own wait board (net/wait_board.h) a few times per period, sleeping in
// between. Once its node has been quiet (every program thread waiting in LMDX, no frame arriving)
// for the period, it asks every node for its report; when all are quiet for the period too, it
// prints what each thread waits for and the state the layers keep (`barrier "B": 2 of 3 arrived`)
// and ends the job, or only warns. SIGQUIT (Ctrl-\ under `lmdx run`) prints the same report at
// any time without ending anything. Docs: docs/architecture.md, "Hangs that explain themselves".
#ifndef LMDX_NET_HANG_WATCH_H_
#define LMDX_NET_HANG_WATCH_H_

#include <chrono>
#include <memory>
#include <string>

#include "base/fd.h"

namespace lmdx::net {

class Node;

class HangWatch {
 public:
  struct Options {
    // How long everything must have been quiet; zero: never (SIGQUIT still reports).
    std::chrono::milliseconds after{std::chrono::seconds(60)};
    bool end_job = true;  // false: warn once per quiet spell and go on waiting
    // LMDX_DEADLOCK_AFTER (seconds, 0 for never) and LMDX_DEADLOCK_ACTION (end or warn). Throws
    // lmdx::Error naming the variable when a value is not understood.
    static Options FromEnvironment();
  };

  // Every node answers the watch's question; called before the node joins the job.
  static void RegisterHandler(Node& node);
  // Rank 0 only: starts the watch's thread and takes SIGQUIT (unless the program handles it).
  HangWatch(Node& node, Options options);
  ~HangWatch();
  HangWatch(const HangWatch&) = delete;
  HangWatch& operator=(const HangWatch&) = delete;

  // Ends the thread; its question under way fails with the node's stop.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// A line a deadlock report ends with, that may explain it: the program's own choice made for it
// (lmdxpp's threads style). Set before the node starts.
void SetDeadlockHint(std::string hint);

// Other ranks: SIGQUIT is rank 0's to answer, and must not end this node with a core dump.
void IgnoreSigquitUnlessHandled();

}  // namespace lmdx::net

#endif  // LMDX_NET_HANG_WATCH_H_

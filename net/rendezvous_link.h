#ifndef LMDX_NET_RENDEZVOUS_LINK_H_
#define LMDX_NET_RENDEZVOUS_LINK_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/fd.h"
#include "net/bootstrap.h"
#include "net/heartbeat.h"
#include "net/progress_engine.h"
#include "net/wire.h"

namespace lmdx::net {

// A node's connection to the rendezvous once the job has started: its lifeline to whoever
// started it, and one end of the heartbeat (net/heartbeat.h). It ends this node, with a line
// saying why, when:
// - the connection closes: the launcher is gone and nothing will end this node in order;
// - the rendezvous reports that the job cannot go on (a node that hangs);
// - the rendezvous has sent nothing for the heartbeat's timeout.
// Nothing ends the node while `ending` says the job ends in order.
class RendezvousLink {
 public:
  RendezvousLink(ProgressEngine& engine, Fd fd, const BootstrapInfo& info,
                 std::function<bool()> ending);
  RendezvousLink(const RendezvousLink&) = delete;
  RendezvousLink& operator=(const RendezvousLink&) = delete;

  // Watches the connection on the progress thread and starts the heartbeat. The heartbeat's frames
  // go out from a thread of their own, which sleeps between them: a progress thread busy for
  // seconds in one handler (a barrier that hands on 60 MiB of payloads under ASan) is no hang,
  // and must not read as one at the rendezvous.
  void Start();
  // Tells the rendezvous that this node ends in order (with its status when known), so that its
  // exit is not taken for a death and its silence from now on for a hang.
  void AnnounceLeaving(std::optional<int> status);

 private:
  void OnReadable();
  void Tick();
  void SendHeartbeats(std::stop_token stop);
  void Write(MessageType type, const std::string& body);
  [[noreturn]] void EndThisNode(const std::string& why);

  ProgressEngine& engine_;
  Fd fd_;
  const BootstrapInfo& info_;
  std::function<bool()> ending_;
  HeartbeatSettings settings_;
  SilenceWatch silence_;              // one peer: the rendezvous; progress thread only
  std::string input_;                 // bytes of frames not yet whole; progress thread only
  std::atomic<bool> closed_ = false;  // set by the progress thread; read by the heartbeat's too
  std::mutex write_mutex_;            // the heartbeat's thread and a leave (any thread) both write
  std::mutex sleep_mutex_;
  std::condition_variable_any sleep_;
  std::jthread heartbeat_;  // last: stopped and joined before the members it uses go
};

}  // namespace lmdx::net

#endif  // LMDX_NET_RENDEZVOUS_LINK_H_

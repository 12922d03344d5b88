#ifndef LMDX_NET_RENDEZVOUS_LINK_H_
#define LMDX_NET_RENDEZVOUS_LINK_H_

#include <functional>
#include <mutex>
#include <optional>
#include <string>

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

  // Watches the connection on the progress thread and starts the heartbeat.
  void Start();
  // Tells the rendezvous that this node ends in order (with its status when known), so that its
  // exit is not taken for a death and its silence from now on for a hang.
  void AnnounceLeaving(std::optional<int> status);

 private:
  void OnReadable();
  void Tick();
  void Write(MessageType type, const std::string& body);
  [[noreturn]] void EndThisNode(const std::string& why);

  ProgressEngine& engine_;
  Fd fd_;
  const BootstrapInfo& info_;
  std::function<bool()> ending_;
  HeartbeatSettings settings_;
  SilenceWatch silence_;    // one peer: the rendezvous; progress thread only
  std::string input_;       // bytes of frames not yet whole; progress thread only
  bool closed_ = false;     // progress thread only
  std::mutex write_mutex_;  // the heartbeat (progress thread) and a leave (any thread) both write
};

}  // namespace lmdx::net

#endif  // LMDX_NET_RENDEZVOUS_LINK_H_

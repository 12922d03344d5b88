#ifndef LMDX_NET_HEARTBEAT_H_
#define LMDX_NET_HEARTBEAT_H_

// The rendezvous connection stays open for the job's life; it doubles as a heartbeat. Each node
// and the rendezvous (hosted by `lmdx run`'s launcher, or by rank 0 of a job that mpirun or srun
// started) send each other a frame every period. Two cases end with a message:
// - a node whose process still exists but has sent nothing for the timeout (stopped, stuck in
//   the kernel, or on a host that fell off the network) ends the job, named;
// - a node that hears nothing from the rendezvous for the timeout ends itself.
// A death is found sooner, by the connection closing; this is for the hangs a close never shows.
#include <cstdint>
#include <vector>

namespace lmdx::net {

struct HeartbeatSettings {
  int period_ms = 1000;
  int timeout_ms = 6000;  // 0: no heartbeat; multiplied on crowded hosts (net/crowding.h)
  bool on() const { return timeout_ms > 0; }
  // LMDX_HEARTBEAT: the seconds of silence after which a peer is taken for hung (default 6; at
  // least 2; 0 turns the heartbeat off, for a debugger that stops a node). Throws lmdx::Error
  // (LMDX_ERR_INVALID_ARGUMENT) naming the variable and its text.
  static HeartbeatSettings FromEnvironment();
};

// How long each of several peers has been silent. Time this process itself did not run (the
// whole job stopped with Ctrl-Z, a suspended virtual machine) is not the peers' silence: a tick
// that comes much later than the period starts every peer's silence again.
class SilenceWatch {
 public:
  SilenceWatch(int peers, HeartbeatSettings settings, std::int64_t now_ms);

  void Heard(int peer, std::int64_t now_ms);
  // Starts watching peer (from now), or stops: a peer that left or whose connection closed.
  void Watch(int peer, bool watched, std::int64_t now_ms);
  // Call every period: the watched peers silent for the timeout, each reported once.
  std::vector<int> Tick(std::int64_t now_ms);
  std::int64_t SilentForMs(int peer, std::int64_t now_ms) const;

 private:
  struct Peer {
    bool watched = false;
    bool reported = false;
    std::int64_t last_heard_ms = 0;
  };
  HeartbeatSettings settings_;
  std::vector<Peer> peers_;
  std::int64_t last_tick_ms_;
};

}  // namespace lmdx::net

#endif  // LMDX_NET_HEARTBEAT_H_

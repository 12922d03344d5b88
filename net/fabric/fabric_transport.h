#ifndef LMDX_NET_FABRIC_FABRIC_TRANSPORT_H_
#define LMDX_NET_FABRIC_FABRIC_TRANSPORT_H_

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"
#include "net/job_secret.h"
#include "net/progress_engine.h"
#include "net/transport.h"

namespace lmdx::net {
namespace internal {
class UcxWorker;
struct UcxLibrary;
}  // namespace internal

// The fabric transport: frames as UCX active messages (net/fabric/internal/ucx_am_header.h), over
// whatever UCX finds or UCX_TLS names (InfiniBand, RoCE, TCP, shared memory). One UCX context and
// worker per node; an endpoint to each peer is made when the job table comes (SetJobTable says
// why), from the worker address the peer advertised through the rendezvous.
//
// Threads. Every UCX call is made under one mutex (ucx_mutex_) and the worker is in UCX's
// serialized mode: Send may come from any thread, and a thread that waits for the network polls
// the worker itself (this transport is a ProgressEngine::Poller), so a reply reaches it without
// waking the progress thread. UCX's callbacks only record what happened; the frames, on_sent
// calls and lost peers they record are handed to the node after the mutex is released, on the
// dispatching thread. So the node's handlers, which may send, never run inside UCX, and a node
// lock held by a sender is never waited for under the UCX mutex.
//
// Order. Each ordered pair of ranks numbers its frames; the receiver hands them over in that
// order. A rendezvous message's data is fetched (into the memory the receiver named, when it
// named some) before the frames after it are handed over, and active messages that UCX delivers
// out of order (several lanes) are put back in order.
//
// Trust. The rendezvous that hands out worker addresses is authenticated, but anyone may send to
// a UCX worker. Every message carries a 64-bit token derived from the job secret for its ordered
// pair of ranks (PairToken); anything else is dropped unread, with a rate-limited log line.
//
// Sleeping. The worker's event descriptor is in the progress engine's epoll set; before the
// progress thread sleeps the worker is progressed until it has nothing and then armed (a busy
// worker is progressed again), so an idle node does not spin.
class FabricTransport : public Transport, private ProgressEngine::Poller {
 public:
  // Throws lmdx::Error when UCX cannot start here (the node then goes without fabric).
  // peers_on_this_host: the job runs on this host alone (its nodes listen on loopback).
  FabricTransport(ProgressEngine& engine, TransportHost& host, const JobSecret& secret, int rank,
                  int size, bool peers_on_this_host);
  ~FabricTransport() override;

  const char* name() const override { return "fabric"; }
  wire::Endpoint LocalEndpoint() const override;
  void SetJobTable(const wire::JobTable& table) override;
  // UCX queues what it cannot send at once and never blocks, so may_block changes nothing; the
  // frame's memory is kept until UCX is done with it and on_sent runs then.
  void Send(int dest, OutgoingMessage message, bool may_block) override;
  // Small frames only, when UCX can send them within the call (see the definition).
  bool SendNow(int dest, OutgoingMessage& message) override;
  // Small raw messages within the call as SendNow's frames, with a short header of their own
  // (internal/ucx_am_header.h).
  bool SendRawNow(const SmallRaw& raw) override;
  void Close() override;
  void DropPeer(int rank, const std::string& why) override;

  // One-sided reads (Transport): over UCX's remote memory access, ucp_get_nbx. The key is UCX's
  // packed remote key. The home-based DSM protocols read pages with them (dsm/home_access.h).
  std::optional<std::string> Expose(void* base, std::size_t size) override;
  bool Read(int dest, std::uint64_t remote_address, const std::string& key, void* local,
            std::size_t size, std::function<void(bool ok)> on_done) override;

  // How long a large raw message's data waits at its sender for its receive to be posted
  // (RendezvousTarget); 2 ms unless changed. Tests lengthen it to see which event ends a wait,
  // while the progress thread may read it.
  void SetWaitForReceiveMs(int ms) { wait_for_receive_ms_.store(ms, std::memory_order_relaxed); }

 private:
  struct SendOp;
  struct GetOp;
  struct Inbound;
  struct QuickFrame;
  struct Peer;

  // UCX's callbacks (they run inside ucp_worker_progress, under ucx_mutex_).
  static ucs_status_t OnActiveMessage(void* arg, const void* header, std::size_t header_length,
                                      void* data, std::size_t length,
                                      const ucp_am_recv_param_t* param);
  static void OnSendDone(void* request, ucs_status_t status, void* user_data);
  static void OnGetDone(void* request, ucs_status_t status, void* user_data);
  // Destroys peer's unpacked keys (before its endpoint goes); caller holds ucx_mutex_.
  static void DestroyKeysLocked(Peer& peer);
  static void OnFetched(void* request, ucs_status_t status, std::size_t length, void* user_data);
  static void OnEndpointError(void* arg, ucp_ep_h endpoint, ucs_status_t status);

  ucs_status_t Arrived(const void* header, std::size_t header_length, void* data,
                       std::size_t length, const ucp_am_recv_param_t* param);
  void Refuse(const std::string& why);
  // Records the peer lost (once) for Deliver to report; caller holds ucx_mutex_.
  void LoseLocked(Peer& peer, const std::string& why);
  ucp_ep_h EndpointLocked(Peer& peer);
  // SendNow's and SendRawNow's send: header (its prefix filled in here: a frame's, with flags, or
  // with AmHeader::kSmallRaw a small raw message's) and data within this call, or nothing sent
  // and false. A small raw message's header leads its data: header points there, and
  // header_size, UCX's header, is 0.
  bool SendWithinCall(int dest, std::uint32_t flags, std::uint8_t* header, std::size_t header_size,
                      const void* data, std::size_t length);
  // The endpoint, or nullptr when the transport closes or the peer is lost.
  ucp_ep_h UsableEndpointLocked(Peer& peer);
  // Progresses the worker until it has nothing left; caller holds ucx_mutex_.
  bool ProgressLocked();
  void CloseFailedEndpointsLocked();
  // Hands what the callbacks recorded to the node; on the dispatching thread only.
  bool Deliver();
  // The callbacks recorded something Deliver hands over; caller holds ucx_mutex_.
  bool HasRecordsLocked() const {
    return !finished_sends_.empty() || !peers_with_arrivals_.empty() || !lost_.empty() ||
           !quick_frames_.empty();
  }
  // Hands the quick frames over (they come before any frame their peers still have queued);
  // on the dispatching thread only, with frames taken from quick_frames_. True if there were any.
  bool HandOverQuickFrames(std::vector<QuickFrame>& frames);
  // Moves peer's frames along in order: places, fetches, hands over. True if any moved.
  bool AdvancePeer(Peer& peer);
  // Where a rendezvous frame's payload goes: memory the node names, or (once waiting for that
  // is over) a buffer of the frame's own; nullptr while the frame waits for its receive.
  // *error is set when no buffer could be had.
  void* RendezvousTarget(Peer& peer, Inbound& inbound, std::string* error);
  // On the progress thread when a frame's wait for its receive may be over.
  void OnPlacementDeadline();
  // On the dispatching thread while frames are queued in UCX (sends_in_flight_) and nobody polls
  // for them: progresses the worker, and comes back at once while the queue moves, later while it
  // does not. UCX sends a queued frame only when its worker is progressed, and a sender that does
  // not wait (a node's handlers) never polls, while an armed worker hears no event of its own
  // sends. Started by a Send whose sender does not poll, and by Arm.
  void KeepSendsMoving();
  // Marks the watch started with its first look first_delay_ms away; false when it runs already.
  // The caller, holding ucx_mutex_, schedules that look once it has let go.
  bool StartKeepingSendsMovingLocked(int first_delay_ms);
  void ScheduleKeepSendsMoving(int delay_ms);

  // ProgressEngine::Poller.
  bool Poll() override;
  bool Arm() override;
  void Disarm() override;
  // Lazy after every receive. Over UCX's shared memory a sender signals an armed worker through
  // a socket (a system call on each side per frame), and arming is itself two or three system
  // calls: between two frames of a conversation they cost more than the frames (21 us against 2
  // to 4 for 8 B here). Over UCX's tcp an armed worker costs its senders nothing, but after a
  // large message the next one's first bytes woke the progress thread, which then waited for
  // the locks of the thread moving it (ProgressEngine::ConversationGoesOn).
  Laziness ArmsLazily() const override { return Laziness::kAfterReceives; }
  void OnEventFd();

  ProgressEngine& engine_;
  TransportHost& host_;
  JobSecret secret_;
  int rank_;
  int size_;
  std::unique_ptr<internal::UcxWorker> worker_;
  // Held here for the calls made on every poll and send: Ucx() checks the library each time.
  const internal::UcxLibrary& ucx_;
  ucp_worker_h ucp_worker_;
  std::size_t body_in_header_limit_;
  bool registered_ = false;  // the event descriptor and poller are with the engine
  std::atomic<std::int64_t> wait_for_receive_ms_{2};
  LogLimiter refusals_{"refused fabric messages"};

  std::mutex ucx_mutex_;                      // held around every UCX call; guards everything below
  std::vector<std::unique_ptr<Peer>> peers_;  // by rank, once the job table is known
  std::set<SendOp*> sends_in_flight_;
  bool keeping_sends_moving_ = false;  // a KeepSendsMoving is posted or running
  int keep_moving_delay_ms_ = 0;       // until its next look, while the queue does not move
  std::set<GetOp*> gets_in_flight_;
  std::vector<ucp_mem_h> exposed_;  // memory peers may read, until Close
  std::vector<std::pair<std::function<void(bool)>, bool>> finished_sends_;
  std::vector<std::pair<int, std::string>> lost_;
  std::set<int> peers_with_arrivals_;
  // Small frames that came next in their pair's order (Arrived's quick lane), copied out of
  // UCX's memory, for the dispatching thread to hand over in arrival order.
  std::vector<QuickFrame> quick_frames_;
  // Peers whose next frame waits for its receive to be posted (RendezvousTarget): every Deliver
  // looks again, but they do not keep the progress thread from sleeping as arrivals do.
  std::set<int> peers_waiting_for_receives_;
  std::vector<ucp_ep_h> failed_endpoints_;  // closed by force outside UCX's callbacks
  bool closing_ = false;
  // The dispatching thread's: storage of the last quick frames handed over, swapped in for the
  // next ones so that the quick lane allocates nothing once warm.
  std::vector<QuickFrame> quick_spare_;
};

}  // namespace lmdx::net

#endif  // LMDX_NET_FABRIC_FABRIC_TRANSPORT_H_

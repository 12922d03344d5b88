#ifndef LMDX_NET_NODE_H_
#define LMDX_NET_NODE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "base/fd.h"
#include "net/bootstrap.h"
#include "net/completion.h"
#include "net/hang_watch.h"
#include "net/mailbox.h"
#include "net/message.h"
#include "net/progress_engine.h"
#include "net/rendezvous_link.h"
#include "net/transport.h"
#include "net/transport_choice.h"

namespace lmdx::net {

// Where to send the reply to a request. Copyable: a handler may keep it and answer much later
// (a lock manager answers when the lock is free, a barrier when the last node arrives).
struct ReplyTo {
  int dest = -1;
  std::uint64_t request_id = 0;
  MessageType type = MessageType::kInvalid;
};

// The node runtime: joins the job through the rendezvous, runs the progress engine and the
// transports, dispatches frames to handlers by message type, and matches replies to requests.
// Every layer above (sync, dsm, threads, ports) registers its handlers here.
class Node : public TransportHost {
 public:
  // A request under way: StartRequest sends it, Await collects its reply. Several requests may be
  // under way at once (a DSM write fault invalidates every copy of a page in parallel). Every
  // started request must be awaited before it is destroyed: the node refers to it until then.
  struct PendingRequest {
    std::uint64_t id;
    int dest;
    MessageType type;
    std::uint8_t* reply_buffer;
    std::size_t reply_capacity;
    InboundMessage reply;
    lmdx_error error = LMDX_OK;
    std::string error_text;
    Completion done;
  };
  // Frames and bytes (body and payload) sent and received, by message type.
  struct TypeCounters {
    std::atomic<std::uint64_t> sent_frames{0};
    std::atomic<std::uint64_t> sent_bytes{0};
    std::atomic<std::uint64_t> received_frames{0};
    std::atomic<std::uint64_t> received_bytes{0};
  };

  // Called on the progress thread for a frame of the handler's type. `reply_to` is null unless
  // the frame is a request. Handlers must not block.
  using Handler = std::function<void(InboundMessage& message, const ReplyTo* reply_to)>;
  // What to do when a peer vanishes outside an orderly end of the job.
  using PeerLostHook = std::function<void(int rank, const std::string& why)>;

  // Runs inside the constructor before the node joins the job: layers above register their
  // handlers there, so that no peer can send them a frame before they are in place.
  using Setup = std::function<void(Node& node)>;

  // Joins the job described by info; throws lmdx::Error (LMDX_ERR_BOOTSTRAP or _NETWORK).
  explicit Node(const BootstrapInfo& info, const Setup& before_join = {});
  ~Node() override;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  int rank() const { return info_.rank; }
  int size() const { return info_.size; }
  const BootstrapInfo& info() const { return info_; }
  // Every node's host and endpoints, as the rendezvous gave them.
  const wire::JobTable& job_table() const { return job_table_; }
  ProgressEngine& engine() { return engine_; }
  Mailbox& mailbox() { return mailbox_; }

  void Handle(MessageType type, Handler handler);
  // Where the payload of a frame of a layer's type should land: memory the layer names (the
  // buffer of a call already waiting for it), or nullptr for a buffer of the frame's own. Runs on
  // the dispatching thread once header and body are in, before the payload is read; must not
  // block. The layer's handler then sees payload_placed. Set before the node joins.
  using Placer = std::function<std::uint8_t*(const FrameHeader& header, const std::string& body)>;
  void Place(MessageType type, Placer placer);
  void SetPeerLostHook(PeerLostHook hook);
  // Layers that park waiters of their own (sync, later dsm) learn of a lost peer here, before
  // the hook above ends the process or leaves the job to fail call by call. Called on the
  // dispatching thread; must not block.
  void AddPeerLostObserver(PeerLostHook observer);
  // Fails every pending request whose type lies in [first, last] (a layer's own range): after a
  // peer is lost, an answer that depended on it may never come.
  void FailRequests(MessageType first, MessageType last, lmdx_error code, const std::string& why);

  // Sends a one-way frame. A payload without an owner is borrowed: from an application thread
  // Send returns once it is in the kernel; the progress thread may only send owned payloads.
  // Throws lmdx::Error(LMDX_ERR_PEER_LOST) if dest is gone.
  void Send(int dest, MessageType type, std::string body, Payload payload = {});
  // Sends a raw message (lmdx_send): payload as above, with a tag and the frame's number among the
  // raw frames to dest, so that dest's mailbox keeps their order whatever network carried each.
  // network ("tcp", "shm", ...; empty: the pair's own) is a hint: a network the pair shares
  // carries the frame; for any other the pair's own does, and hint_fallbacks() counts it. To this
  // node itself the hint is ignored. A small one goes on the network's express lane when it has
  // one and can take it at once (Transport::SendRawNow).
  void SendRaw(int dest, std::int32_t tag, Payload payload, std::string_view network = {});
  // SendRaw that returns at once (lmdx_isend): the payload, borrowed or owned, must stay valid
  // until on_sent(true or false) runs, once, on whichever thread finished the write (at once when
  // a small one went out whole, or for this node itself).
  void SendRawAsync(int dest, std::int32_t tag, Payload payload, std::string_view network,
                    std::function<void(bool sent)> on_sent);
  // Starts a one-way frame and returns at once, never waiting for socket or ring space. The
  // payload, borrowed or owned, must stay valid until on_sent(true or false) runs (once, on
  // whichever thread finished the write; at once for this node itself).
  void SendAsync(int dest, MessageType type, std::string body, Payload payload,
                 std::function<void(bool sent)> on_sent);

  // Sends a request and waits for its reply. A reply payload lands in reply_buffer when one is
  // given and large enough. Throws lmdx::Error when dest is lost or answers with an error.
  InboundMessage Request(int dest, MessageType type, std::string body, Payload payload = {},
                         std::uint8_t* reply_buffer = nullptr, std::size_t reply_capacity = 0);
  std::unique_ptr<PendingRequest> StartRequest(int dest, MessageType type, std::string body,
                                               Payload payload = {},
                                               std::uint8_t* reply_buffer = nullptr,
                                               std::size_t reply_capacity = 0);
  InboundMessage Await(PendingRequest& request);
  // Request, except that an LMDX thread killed while it waits stops waiting and gets nothing.
  // A reply that comes after that goes to on_late_reply, on the progress thread (it must not
  // block): the caller's way to give back what the request obtained (a semaphore's unit).
  // A reply that came before the kill is returned as usual.
  using LateReply = std::function<void(InboundMessage& reply)>;
  // reason names the wait in a hang report (default: a reply to the type from dest).
  std::optional<InboundMessage> RequestUnlessInterrupted(int dest, MessageType type,
                                                         std::string body, LateReply on_late_reply,
                                                         const WaitReason* reason = nullptr);

  // One-sided access over the pair's own network, where it has it (net/transport.h). Expose
  // registers [base, base + size) for access by peer (once per network and range) and returns
  // the key to send it; nullopt when the pair's network has no remote access.
  std::optional<std::string> Expose(int peer, void* base, std::size_t size);
  struct RemoteSpan {
    std::uint64_t address;  // in the peer's memory, inside what it exposed
    void* local;
    std::size_t size;
  };
  // Reads every span from peer's memory exposed with key and waits for all of them. False when
  // the pair's network has no remote reads or a read failed: the caller then asks the peer.
  bool ReadRemote(int peer, const std::string& key, std::span<const RemoteSpan> spans);
  // Writes every piece into peer's memory exposed with key; returns once all are there. False
  // when a write failed, nullopt when the pair's network has no remote writes: either way the
  // caller then asks the peer.
  std::optional<bool> WriteRemote(int peer, const std::string& key,
                                  std::span<const Transport::WritePiece> pieces);
  // Maps memory peer exposed with key, backed by its descriptor `file` (Transport::Map); an
  // empty Mapping when the pair's network cannot.
  Mapping MapRemote(int peer, const std::string& key, int file, std::size_t size);

  // Traffic of this node by message type (self-sends included), for statistics.
  const TypeCounters& counters(MessageType type) const {
    return type_counters_[static_cast<std::size_t>(type)];
  }

  // Answers a request, now or later, from any thread.
  void Reply(const ReplyTo& to, std::string body, Payload payload = {},
             std::function<void(bool)> on_sent = {});
  void ReplyError(const ReplyTo& to, lmdx_error code, const std::string& message);

  // Threads style, ranks other than 0: serve until rank 0 ends the job; returns its status.
  int ServeUntilShutdown();
  // Waits until the connection with rank has closed (the process is gone), at most timeout.
  // Threads style: the other ranks leave after rank 0, so a launcher sees rank 0's status first.
  bool WaitUntilPeerGone(int rank, std::chrono::milliseconds timeout);
  // Threads style, rank 0: tell every node the job ended with status, wait for them briefly.
  void EndJob(int status);
  // SPMD style: collective; returns when every rank has called it. The node keeps serving while it
  // waits, so LMDX threads placed on it run on until the job's finalize completes.
  void AwaitFinalize();
  // SPMD style, after AwaitFinalize: leave the job in order and stop.
  void Finalize();
  // Tells the launcher (through the rendezvous) that this node ends in order, with status when
  // known, so that its exit is not taken for a death.
  void AnnounceLeaving(std::optional<int> status);
  // Stops the transports and the progress engine; later sends fail.
  void Stop();

  // The network frames to rank take ("shm", "tcp"; "self" for this node).
  std::string NetworkTo(int rank) const;
  // Frames received from rank over each network, and hints that fell back, for tests and
  // LMDX_TRANSPORT_STATS=1.
  std::string TrafficSummary() const;
  // Frames whose network hint named a network the pair does not share (they took the pair's own).
  std::uint64_t hint_fallbacks() const { return hint_fallbacks_.load(std::memory_order_relaxed); }

  // True once the job is ending in order: lost peers are expected then.
  bool ending() const { return ending_.load(std::memory_order_acquire); }

  // TransportHost.
  std::uint8_t* PlacePayload(const FrameHeader& header, const std::string& body) override;
  bool MayPlaceLater(const FrameHeader& header) override {
    return header.type == MessageType::kRaw;
  }
  // The mailbox's posted hook wakes the progress thread, which polls every transport.
  void WakeOnNextReceive() override { mailbox_.NoticeNextPost(); }
  void OnMessage(InboundMessage&& message) override;
  void OnRawMessage(const SmallRaw& raw) override;
  bool TakeRawForThisThread(const SmallRaw& raw) override;
  void OnPeerLost(int rank, const std::string& why) override;

 private:
  void JoinThroughRendezvous();
  void ChooseDriveBudget();
  void ChooseNetworks();
  void StartTransports();
  // network: an index of kNetworkPreference, or kPairNetwork for the pair's own.
  static constexpr int kPairNetwork = -1;
  // Numbers a raw message to dest and sends it on the network's express lane when it is small and
  // the lane takes it at once (nothing is returned then); otherwise returns its frame to send.
  std::optional<OutgoingMessage> NumberedRaw(int dest, std::int32_t tag, Payload& payload,
                                             int network);
  void SendBlocking(int dest, OutgoingMessage&& message, int network);
  // The transport that may send to dest at once over network, or nullptr when anything is
  // unusual (a bad rank, this node, routes not known yet, a hinted network the pair lacks).
  // The network index a raw message to dest takes for the hint network (kPairNetwork for none);
  // throws for a rank or a network that does not exist.
  int RawNetworkIndex(int dest, std::string_view network) const;
  Transport* ReadyRoute(int dest, int network);
  bool SendNow(int dest, OutgoingMessage& message, int network);
  void CountSent(const OutgoingMessage& message);
  void CountSent(MessageType type, std::uint64_t bytes);
  // A frame (or small raw message) arrived: the counters, and the hang watch's traffic (but for
  // its own frames). On the dispatching thread.
  void CountReceived(MessageType type, std::uint64_t bytes);
  void SendFrame(int dest, OutgoingMessage message, int network = kPairNetwork,
                 bool may_block = true);
  Transport* HintedRoute(int dest, int network);
  void DeliverToSelf(OutgoingMessage message);
  void CompleteRequest(InboundMessage message);
  void Dispatch(InboundMessage& message);
  void RegisterBuiltinHandlers();

  BootstrapInfo info_;
  std::unique_ptr<HangWatch> hang_watch_;  // rank 0 only
  ProgressEngine engine_;
  Mailbox mailbox_;
  // A transport and the frames it delivered per source rank.
  struct Network {
    std::unique_ptr<TransportHost> counter;
    std::unique_ptr<Transport> transport;
    std::vector<std::uint64_t> Received() const;
  };
  std::vector<Network> networks_;
  std::vector<Transport*> route_;  // by rank, fixed once the job table is known
  // By rank and network (kNetworkPreference's order): the transport of each network the pair
  // shares, or nullptr. For network hints; fixed with route_.
  std::vector<std::array<Transport*, kNetworkPreference.size()>> shared_routes_;
  std::atomic<std::uint64_t> hint_fallbacks_{0};
  // By rank: the number the next raw frame to it carries.
  std::unique_ptr<std::atomic<std::uint64_t>[]> raw_sequence_;
  TransportPolicy policy_;
  std::atomic<bool> routes_ready_{false};
  std::mutex early_mutex_;  // frames sent before route_ was known, sent once it is
  struct EarlyFrame {
    int dest;
    int network;
    OutgoingMessage message;
  };
  std::vector<EarlyFrame> early_frames_;
  Fd rendezvous_fd_;  // until the job table came; then the link owns the connection
  std::unique_ptr<RendezvousLink> rendezvous_link_;
  wire::JobTable job_table_;

  std::mutex handlers_mutex_;
  std::array<Handler, static_cast<std::size_t>(MessageType::kLimit)> handlers_;
  std::array<Placer, static_cast<std::size_t>(MessageType::kLimit)> placers_;
  std::mutex hook_mutex_;
  PeerLostHook peer_lost_hook_;
  std::vector<PeerLostHook> peer_lost_observers_;

  std::array<TypeCounters, static_cast<std::size_t>(MessageType::kLimit)> type_counters_;

  std::mutex requests_mutex_;
  std::unordered_map<std::uint64_t, PendingRequest*> requests_;
  // Requests whose waiter was killed, by id: what to do with their reply (guarded by
  // requests_mutex_).
  std::unordered_map<std::uint64_t, LateReply> late_replies_;
  std::atomic<std::uint64_t> next_request_id_{1};

  // The pair's own network, for one-sided access; nullptr for this node or before the routes.
  Transport* OneSidedRoute(int peer) const;
  // Keys of the memory this node exposed, by network and range.
  std::mutex exposed_mutex_;
  std::map<std::tuple<Transport*, void*, std::size_t>, std::optional<std::string>> exposed_;

  std::mutex lost_mutex_;
  std::condition_variable lost_changed_;
  std::vector<bool> lost_;  // by rank

  std::atomic<bool> ending_{false};
  std::atomic<bool> stopped_{false};
  Completion shutdown_received_;
  std::atomic<int> shutdown_status_{0};
  std::mutex finalize_mutex_;
  std::vector<ReplyTo> finalize_arrivals_;
};

}  // namespace lmdx::net

#endif  // LMDX_NET_NODE_H_

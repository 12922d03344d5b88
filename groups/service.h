// The groups layer of one node (P-RIO's groups): named sets of ranks, a send that reaches every
// other member, and broadcast, gather and all-to-all over a group. Collectives run over binomial
// trees and pairwise exchange, never as N sends from one node; docs/groups.md has the algorithms
// and their message counts.
//
// Blocking calls block only the calling thread, in net::Completion. Failures throw lmdx::Error;
// misuse (LMDX_ERR_MISUSE) names the group and the rank.
#ifndef LMDX_GROUPS_SERVICE_H_
#define LMDX_GROUPS_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "net/node.h"

namespace lmdx::groups {

// A group as this node knows it. Handles given to the C API point to these; they live as long as
// the node's service. Opaque outside the service, as are a collective call under way (Op) and a
// waiting lmdx_group_recv (PostedReceive).
struct Group;
struct Op;
struct PostedReceive;

// The kinds of group traffic, each with its own message type (and so its own traffic counters).
enum class Kind { kCreate, kSend, kBcast, kGather, kAlltoall };

// This node's traffic of one kind, from net::Node's per-type counters.
struct Traffic {
  std::uint64_t sent_frames = 0;
  std::uint64_t sent_bytes = 0;
  std::uint64_t received_frames = 0;
  std::uint64_t received_bytes = 0;
};

// What lmdx_group_recv received.
struct Received {
  int source = -1;  // the sender's rank
  std::size_t length = 0;
};

class Service {
 public:
  explicit Service(net::Node& node);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Installs the message handlers and payload placers; called before the node joins the job.
  void RegisterHandlers();

  // Every member calls it with the same ranks (in the same order: a member's position is its
  // index). Returns when every member has called it. A non-member may call it too and gets a
  // handle whose index is -1. Ranks out of range or listed twice are LMDX_ERR_INVALID_ARGUMENT;
  // a list that differs from another caller's is LMDX_ERR_MISUSE for every caller of the name.
  Group* Create(std::string_view name, std::span<const int> ranks);
  static int Size(const Group& group);
  static int Index(const Group& group);  // this node's index, -1 when it is not a member
  static const std::string& Name(const Group& group);

  // To every other member, over a binomial tree rooted at this node.
  void Send(Group& group, const void* buffer, std::size_t length);
  // The next message of another member's Send (FIFO per sender). A message longer than capacity
  // is LMDX_ERR_TRUNCATED and stays queued.
  Received Receive(Group& group, void* buffer, std::size_t capacity);
  void Bcast(Group& group, int root, void* buffer, std::size_t length);
  // recv: at the root, length * size bytes in group-index order; ignored elsewhere.
  void Gather(Group& group, int root, const void* send, std::size_t length, void* recv);
  // send and recv: length * size bytes each; block j of send goes to member j, block j of recv
  // comes from member j.
  void Alltoall(Group& group, const void* send, std::size_t length, void* recv);

  Traffic TrafficOf(Kind kind) const;

  // A peer was lost: every waiting call fails with LMDX_ERR_PEER_LOST, and so does every later
  // call, since what it waits for may have been the lost node's to send or forward.
  void OnPeerLost(int rank, const std::string& why);

 private:
  struct Actions;
  struct Managed;

  // All run under mutex_ and only collect what to send and whom to wake.
  Group& GroupLocked(std::uint64_t id);
  std::uint8_t* Place(Kind kind, const net::FrameHeader& header, const std::string& body);
  void OnFrame(Kind kind, net::InboundMessage& message);
  void AcceptLocked(Group& group, const std::shared_ptr<Op>& op, net::InboundMessage& message,
                    Actions& actions);
  void CastLocked(Group& group, net::InboundMessage& message, Actions& actions);
  void CompleteLocked(Group& group, const std::shared_ptr<Op>& op, Actions& actions);
  void FailLocked(const std::shared_ptr<Op>& op, lmdx_error code, std::string text,
                  Actions& actions);
  void FinishLocked(const std::shared_ptr<Op>& op, Actions& actions);
  void OnCreate(int source, const std::string& body, const net::ReplyTo& reply_to);
  void CheckMemberLocked(const Group& group, const char* call) const;
  void ThrowIfLostLocked() const;
  // Posts op as collective number seq of group; frames that came before it are taken now.
  std::uint64_t PostLocked(Group& group, const std::shared_ptr<Op>& op, Actions& actions);
  void Await(Group& group, std::uint64_t seq, const std::shared_ptr<Op>& op);
  void Run(Actions& actions);

  net::Node& node_;
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Group>> groups_;   // by id
  std::unordered_map<std::string, std::unique_ptr<Managed>> managed_;  // names this node manages
  std::string lost_;  // why a peer was lost; empty while all are there
};

// Creates this node's groups service and registers its handlers (part of a net::Node::Setup).
void Attach(net::Node& node);
// The service of the current node; throws LMDX_ERR_NOT_INITIALIZED when there is none.
Service& Current();

}  // namespace lmdx::groups

#endif  // LMDX_GROUPS_SERVICE_H_

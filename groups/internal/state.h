// What the groups service keeps and shares among its files: a call under way (Op), a waiting
// group receive, a group as this node knows it, the manager's record of a name, the actions
// collected under the lock and run after it, and the small helpers of the wire and the texts.
// Only groups/ includes it.
#ifndef LMDX_GROUPS_INTERNAL_STATE_H_
#define LMDX_GROUPS_INTERNAL_STATE_H_

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "groups/groups.pb.h"
#include "groups/service.h"
#include "net/completion.h"

namespace lmdx::groups {
namespace internal {

// Message types: groups own 550..599, the upper half of the ports range 500..599. Offsets are the
// Kind values. Bodies (groups/groups.proto):
//   kCreate    member -> manager, request: Create. Answered once every member has asked.
//   kSend      parent -> child, one-way: Frame (root = the sender), payload: the message.
//   kBcast     parent -> child, one-way: Frame, payload: the root's buffer.
//   kGather    child -> parent, one-way: Frame, payload: the child's subtree, in relative order.
//   kAlltoall  member -> member, one-way: Frame, payload: the block for the receiver.
inline constexpr int kFirstGroups = static_cast<int>(net::MessageType::kFirstPorts) + 50;

inline net::MessageType TypeOf(Kind kind) {
  return static_cast<net::MessageType>(kFirstGroups + static_cast<int>(kind));
}

inline const char* CallOf(Kind kind) {
  switch (kind) {
    case Kind::kCreate: return "lmdx_group_create";
    case Kind::kSend: return "lmdx_group_send";
    case Kind::kBcast: return "lmdx_bcast";
    case Kind::kGather: return "lmdx_gather";
    case Kind::kAlltoall: return "lmdx_alltoall";
  }
  return "a group call";
}

// FNV-1a, 64 bits: stable across processes and builds (std::hash is not). The group's id on the
// wire, and (modulo the job size) the node that checks the member lists.
constexpr std::uint64_t HashName(std::string_view name) {
  std::uint64_t hash = 14695981039346656037ull;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

inline std::string Rank(int rank) { return "rank " + std::to_string(rank); }

inline std::string Quoted(const std::string& name) { return "group \"" + name + "\""; }

inline std::string ListText(std::span<const int> ranks) {
  std::string text = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(ranks[i]);
  }
  return text + "]";
}

// A shared pointer to memory the caller lends to the sends of one call; when the last send has
// released it (written or failed), `released` is signaled, and the caller may reuse the memory.
inline std::shared_ptr<const void> Lease(const void* memory, net::Completion& released) {
  net::Completion* signal = &released;
  return {memory, [signal](const void*) { signal->Signal(); }};
}

inline net::Payload Lent(const std::shared_ptr<const void>& lease, const void* data,
                         std::size_t size) {
  if (size == 0) return {};
  return net::Payload{data, size, std::shared_ptr<const void>(lease, data)};
}

}  // namespace internal

// A collective call of this node under way.
struct Op {
  Kind kind = Kind::kBcast;
  std::uint64_t seq = 0;
  int root = 0;                       // group index
  std::size_t length = 0;             // bcast: bytes; gather and all-to-all: bytes per member
  std::uint8_t* target = nullptr;     // where frames land: bcast buffer, gather root's recv, ...
  const std::uint8_t* own = nullptr;  // gather and all-to-all: the caller's send buffer
  std::shared_ptr<std::uint8_t[]> subtree;  // gather, inner nodes: own block, then the children's
  std::size_t subtree_bytes = 0;
  int expected = 0;            // frames still to come
  std::multiset<int> placing;  // ranks whose frames are being read into target now
  bool finished = false;       // complete or failed: takes no more frames
  bool woken = false;
  lmdx_error code = LMDX_OK;
  std::string text;
  net::Completion released;
  net::Completion done;
  // The caller's buffers, lent to sends; its release signals `released`, so it is declared after
  // it (destroyed first).
  std::shared_ptr<const void> lease;
};

// A thread waiting in lmdx_group_recv.
struct PostedReceive {
  std::uint8_t* buffer = nullptr;
  std::size_t capacity = 0;
  int claimed_by = -1;  // the rank whose frame is being read into buffer
  Received result;
  lmdx_error code = LMDX_OK;
  std::string text;
  net::Completion released;
  net::Completion done;
  std::shared_ptr<const void> lease;  // buffer, lent to the forwarding of a placed message
};

struct Group {
  enum class State {
    kNamedByFrames,  // only frames named it so far (this node has not called create)
    kCreating,       // this node called create; the member list is known
    kReady,
    kFailed,
  };
  std::string name;
  std::uint64_t id = 0;
  State state = State::kNamedByFrames;
  std::vector<int> members;   // ranks, by group index
  std::vector<int> index_of;  // group index by rank, -1 for other ranks
  int me = -1;                // this node's index
  std::shared_ptr<net::Completion> created;
  lmdx_error failure_code = LMDX_OK;
  std::string failure_text;

  // Collectives: numbered per group in call order; frames wait in their slot until the call.
  std::uint64_t next_seq = 0;
  struct Slot {
    std::shared_ptr<Op> op;
    std::deque<net::InboundMessage> early;
  };
  std::map<std::uint64_t, Slot> slots;

  // Group sends: frames that came before the member list, messages waiting for a receive, and
  // receives waiting for a message.
  std::deque<net::InboundMessage> held;
  struct Message {
    int source;
    std::shared_ptr<std::uint8_t[]> data;
    std::size_t length;
  };
  std::deque<Message> inbox;
  std::list<std::shared_ptr<PostedReceive>> posted;

  bool known() const { return state == State::kCreating || state == State::kReady; }
  int size() const { return static_cast<int>(members.size()); }
  int IndexOfRank(int rank) const {
    return rank >= 0 && rank < static_cast<int>(index_of.size())
               ? index_of[static_cast<std::size_t>(rank)]
               : -1;
  }
  int RankOf(int index) const { return members[static_cast<std::size_t>(index)]; }
};

// The manager's record of a group name: the first member list it heard, and who has asked.
struct Service::Managed {
  std::vector<int> members;
  int first = -1;  // the rank whose list came first
  std::set<int> joined;
  std::vector<net::ReplyTo> waiting;
  bool complete = false;
  std::string broken;  // why every create of this name fails; empty while none does
};

struct Service::Actions {
  struct Out {
    int dest;
    Kind kind;
    std::string body;
    net::Payload payload;
  };
  struct Err {
    net::ReplyTo to;
    lmdx_error code;
    std::string text;
  };
  std::vector<Out> sends;
  std::vector<net::ReplyTo> replies;
  std::vector<Err> errors;
  std::vector<std::shared_ptr<Op>> wakes;
  std::vector<std::shared_ptr<PostedReceive>> receives;
};

namespace internal {

inline std::string FrameBody(const Group& group, std::uint64_t seq, int root, std::size_t length) {
  wire::Frame frame;
  frame.set_group(group.id);
  frame.set_seq(seq);
  frame.set_root(root);
  frame.set_length(length);
  return frame.SerializeAsString();
}

// The payload of an arrived frame as a shared buffer, for forwarding and keeping without a copy.
inline std::shared_ptr<std::uint8_t[]> TakePayload(net::InboundMessage& message) {
  return std::shared_ptr<std::uint8_t[]>(std::move(message.owned_payload));
}

}  // namespace internal
}  // namespace lmdx::groups

#endif  // LMDX_GROUPS_INTERNAL_STATE_H_

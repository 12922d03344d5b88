#include "groups/service.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <set>
#include <utility>

#include "base/error.h"
#include "base/log.h"
#include "groups/groups.pb.h"
#include "groups/tree.h"
#include "net/completion.h"

namespace lmdx::groups {
namespace {

// Message types: groups own 550..599, the upper half of the ports range 500..599. Offsets are the
// Kind values. Bodies (groups/groups.proto):
//   kCreate    member -> manager, request: Create. Answered once every member has asked.
//   kSend      parent -> child, one-way: Frame (root = the sender), payload: the message.
//   kBcast     parent -> child, one-way: Frame, payload: the root's buffer.
//   kGather    child -> parent, one-way: Frame, payload: the child's subtree, in relative order.
//   kAlltoall  member -> member, one-way: Frame, payload: the block for the receiver.
constexpr int kFirstGroups = static_cast<int>(net::MessageType::kFirstPorts) + 50;

net::MessageType TypeOf(Kind kind) {
  return static_cast<net::MessageType>(kFirstGroups + static_cast<int>(kind));
}

const char* CallOf(Kind kind) {
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

std::string Rank(int rank) { return "rank " + std::to_string(rank); }

std::string Quoted(const std::string& name) { return "group \"" + name + "\""; }

std::string ListText(std::span<const int> ranks) {
  std::string text = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(ranks[i]);
  }
  return text + "]";
}

// A shared pointer to memory the caller lends to the sends of one call; when the last send has
// released it (written or failed), `released` is signaled, and the caller may reuse the memory.
std::shared_ptr<const void> Lease(const void* memory, net::Completion& released) {
  net::Completion* signal = &released;
  return {memory, [signal](const void*) { signal->Signal(); }};
}

net::Payload Lent(const std::shared_ptr<const void>& lease, const void* data, std::size_t size) {
  if (size == 0) return {};
  return net::Payload{data, size, std::shared_ptr<const void>(lease, data)};
}

std::mutex current_mutex;
std::shared_ptr<Service> current_service;
std::atomic<Service*> current_pointer{nullptr};

}  // namespace

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

namespace {

std::string FrameBody(const Group& group, std::uint64_t seq, int root, std::size_t length) {
  wire::Frame frame;
  frame.set_group(group.id);
  frame.set_seq(seq);
  frame.set_root(root);
  frame.set_length(length);
  return frame.SerializeAsString();
}

// The payload of an arrived frame as a shared buffer, for forwarding and keeping without a copy.
std::shared_ptr<std::uint8_t[]> TakePayload(net::InboundMessage& message) {
  return std::shared_ptr<std::uint8_t[]>(std::move(message.owned_payload));
}

}  // namespace

Service::Service(net::Node& node) : node_(node) {}

Service::~Service() = default;

int Service::Size(const Group& group) { return group.size(); }
int Service::Index(const Group& group) { return group.me; }
const std::string& Service::Name(const Group& group) { return group.name; }

Traffic Service::TrafficOf(Kind kind) const {
  const net::Node::TypeCounters& counters = node_.counters(TypeOf(kind));
  Traffic traffic;
  traffic.sent_frames = counters.sent_frames.load(std::memory_order_relaxed);
  traffic.sent_bytes = counters.sent_bytes.load(std::memory_order_relaxed);
  traffic.received_frames = counters.received_frames.load(std::memory_order_relaxed);
  traffic.received_bytes = counters.received_bytes.load(std::memory_order_relaxed);
  return traffic;
}

void Service::Run(Actions& actions) {
  for (auto& out : actions.sends) {
    try {
      node_.Send(out.dest, TypeOf(out.kind), std::move(out.body), std::move(out.payload));
    } catch (const Error& error) {
      // The peer is gone: the node's lost-peer handling ends the job or fails the calls.
      DebugLine(std::string("groups: a frame was not sent: ") + error.what());
    }
  }
  actions.sends.clear();
  for (const auto& to : actions.replies) {
    try {
      node_.Reply(to, {});
    } catch (const Error& error) {
      DebugLine(std::string("groups: a reply was not sent: ") + error.what());
    }
  }
  for (const auto& error : actions.errors) {
    try {
      node_.ReplyError(error.to, error.code, error.text);
    } catch (const Error& e) {
      DebugLine(std::string("groups: an error reply was not sent: ") + e.what());
    }
  }
  for (const auto& op : actions.wakes) op->done.Signal();
  for (const auto& receive : actions.receives) receive->done.Signal();
}

void Service::ThrowIfLostLocked() const {
  if (!lost_.empty()) throw Error(LMDX_ERR_PEER_LOST, lost_);
}

void Service::CheckMemberLocked(const Group& group, const char*) const {
  if (group.me < 0) {
    throw Error(LMDX_ERR_MISUSE, Rank(node_.rank()) + " is not a member of " + Quoted(group.name) +
                                     " " + ListText(group.members));
  }
}

Group& Service::GroupLocked(std::uint64_t id) {
  auto it = groups_.find(id);
  if (it == groups_.end()) {
    auto group = std::make_unique<Group>();
    group->id = id;
    it = groups_.emplace(id, std::move(group)).first;
  }
  return *it->second;
}

// ---- Creation ----------------------------------------------------------------------------------

Group* Service::Create(std::string_view name, std::span<const int> ranks) {
  if (name.empty()) throw Error(LMDX_ERR_INVALID_ARGUMENT, "the group name is empty");
  std::string quoted = Quoted(std::string(name));
  if (ranks.empty()) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, quoted + " must have at least one member");
  }
  std::vector<int> index_of(static_cast<std::size_t>(node_.size()), -1);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    int rank = ranks[i];
    if (rank < 0 || rank >= node_.size()) {
      throw Error(LMDX_ERR_INVALID_ARGUMENT, quoted + ": member " + std::to_string(rank) +
                                                 " is not a rank of this job (0 to " +
                                                 std::to_string(node_.size() - 1) + ")");
    }
    int& index = index_of[static_cast<std::size_t>(rank)];
    if (index >= 0) {
      throw Error(LMDX_ERR_INVALID_ARGUMENT,
                  quoted + ": " + Rank(rank) + " is listed twice (indices " +
                      std::to_string(index) + " and " + std::to_string(i) + ")");
    }
    index = static_cast<int>(i);
  }
  std::vector<int> members(ranks.begin(), ranks.end());
  const std::uint64_t id = HashName(name);

  std::shared_ptr<net::Completion> created;
  Group* group = nullptr;
  bool ask = false;
  {
    std::lock_guard guard(mutex_);
    ThrowIfLostLocked();
    group = &GroupLocked(id);
    if (!group->name.empty() && group->name != name) {
      throw Error(LMDX_ERR_INVALID_ARGUMENT, quoted + " and " + Quoted(group->name) +
                                                 " have the same hash; rename one of them");
    }
    switch (group->state) {
      case Group::State::kFailed: throw Error(group->failure_code, group->failure_text);
      case Group::State::kReady:
      case Group::State::kCreating:
        if (group->members != members) {
          throw Error(LMDX_ERR_MISUSE, quoted + " was created on " + Rank(node_.rank()) +
                                           " with the members " + ListText(group->members) +
                                           "; this call passes " + ListText(members));
        }
        if (group->state == Group::State::kReady) return group;
        created = group->created;
        break;
      case Group::State::kNamedByFrames:
        group->name = std::string(name);
        group->members = members;
        group->index_of = std::move(index_of);
        group->me = group->IndexOfRank(node_.rank());
        group->state = Group::State::kCreating;
        group->created = std::make_shared<net::Completion>();
        created = group->created;
        ask = true;
        break;
    }
  }
  if (!ask) {
    created->Wait();
    std::lock_guard guard(mutex_);
    if (group->state == Group::State::kFailed) {
      throw Error(group->failure_code, group->failure_text);
    }
    return group;
  }

  wire::Create request;
  request.set_name(std::string(name));
  for (int rank : members) request.add_members(rank);
  int manager = static_cast<int>(id % static_cast<std::uint64_t>(node_.size()));
  std::optional<Error> failure;
  try {
    node_.Request(manager, TypeOf(Kind::kCreate), request.SerializeAsString());
  } catch (const Error& error) {
    failure = error;
  }
  Actions actions;
  {
    std::lock_guard guard(mutex_);
    if (failure) {
      group->state = Group::State::kFailed;
      group->failure_code = failure->code();
      group->failure_text = failure->what();
    } else {
      group->state = Group::State::kReady;
    }
    // Group sends that came before this node knew the members, in their order.
    std::deque<net::InboundMessage> held = std::move(group->held);
    group->held.clear();
    if (!failure) {
      for (auto& message : held) CastLocked(*group, message, actions);
    }
  }
  Run(actions);
  created->Signal();
  if (failure) throw *failure;
  return group;
}

// Manager side: the first list heard for a name is the reference; a member is answered once every
// member of that list has asked, a non-member at once. Another list breaks the name for good:
// every caller waiting now and every later one gets the same error, so nobody waits for ever.
void Service::OnCreate(int source, const std::string& body, const net::ReplyTo& reply_to) {
  wire::Create request;
  Actions actions;
  if (!request.ParseFromString(body)) {
    actions.errors.push_back({reply_to, LMDX_ERR_INTERNAL, "a malformed group creation request"});
    Run(actions);
    return;
  }
  std::vector<int> members(request.members().begin(), request.members().end());
  {
    std::lock_guard guard(mutex_);
    auto& slot = managed_[request.name()];
    if (!slot) slot = std::make_unique<Managed>();
    Managed& managed = *slot;
    if (managed.first < 0) {
      managed.members = members;
      managed.first = source;
    }
    if (managed.broken.empty() && members != managed.members) {
      managed.broken = Quoted(request.name()) + ": " + Rank(source) + " passes the members " +
                       ListText(members) + ", but " + Rank(managed.first) + " passed " +
                       ListText(managed.members);
      for (const auto& to : managed.waiting) {
        actions.errors.push_back({to, LMDX_ERR_MISUSE, managed.broken});
      }
      managed.waiting.clear();
    }
    if (!managed.broken.empty()) {
      actions.errors.push_back({reply_to, LMDX_ERR_MISUSE, managed.broken});
    } else if (managed.complete ||
               std::find(members.begin(), members.end(), source) == members.end()) {
      actions.replies.push_back(reply_to);
    } else {
      managed.joined.insert(source);
      managed.waiting.push_back(reply_to);
      if (managed.joined.size() == managed.members.size()) {
        managed.complete = true;
        for (const auto& to : managed.waiting) actions.replies.push_back(to);
        managed.waiting.clear();
      }
    }
  }
  Run(actions);
}

// ---- Frames ------------------------------------------------------------------------------------

// Where an arriving frame's payload goes: straight into the buffer of the call waiting for it
// (a bcast buffer, the root's gather buffer, a receive), so a large payload is copied once per
// hop, by the transport. Frames whose call has not come yet get a buffer of their own.
std::uint8_t* Service::Place(Kind kind, const net::FrameHeader& header, const std::string& body) {
  wire::Frame frame;
  if (!frame.ParseFromString(body)) return nullptr;
  std::lock_guard guard(mutex_);
  auto it = groups_.find(frame.group());
  if (it == groups_.end() || !it->second->known()) return nullptr;
  Group& group = *it->second;
  const int from = group.IndexOfRank(header.source);
  if (from < 0 || group.me < 0) return nullptr;
  const std::uint64_t length = header.payload_length;
  if (kind == Kind::kSend) {
    if (!group.inbox.empty()) return nullptr;
    for (auto& posted : group.posted) {
      if (posted->claimed_by >= 0) continue;
      if (length > posted->capacity) return nullptr;  // reported as truncated when it arrives
      posted->claimed_by = header.source;
      return posted->buffer;
    }
    return nullptr;
  }
  auto slot = group.slots.find(frame.seq());
  if (slot == group.slots.end() || !slot->second.op) return nullptr;
  Op& op = *slot->second.op;
  if (op.finished || op.kind != kind || frame.root() != op.root || frame.length() != op.length) {
    return nullptr;
  }
  const int n = group.size();
  std::uint8_t* where = nullptr;
  switch (kind) {
    case Kind::kBcast:
      if (length == op.length &&
          Parent(Relative(group.me, op.root, n)) == Relative(from, op.root, n)) {
        where = op.target;
      }
      break;
    case Kind::kGather: {
      const int mine = Relative(group.me, op.root, n);
      const int child = Relative(from, op.root, n);
      if (child == 0 || Parent(child) != mine) break;
      const auto count = static_cast<std::size_t>(SubtreeSize(child, n));
      if (length != count * op.length) break;
      if (mine == 0) {
        // At the root the blocks go in group-index order; a subtree that wraps past the last
        // index is copied in two parts instead.
        const int first = Absolute(child, op.root, n);
        if (static_cast<std::size_t>(first) + count <= static_cast<std::size_t>(n)) {
          where = op.target + static_cast<std::size_t>(first) * op.length;
        }
      } else {
        where = op.subtree.get() + static_cast<std::size_t>(child - mine) * op.length;
      }
      break;
    }
    case Kind::kAlltoall:
      if (length == op.length && from != group.me) {
        where = op.target + static_cast<std::size_t>(from) * op.length;
      }
      break;
    default: break;
  }
  if (where != nullptr) op.placing.insert(header.source);
  return where;
}

void Service::OnFrame(Kind kind, net::InboundMessage& message) {
  wire::Frame frame;
  if (!frame.ParseFromString(message.body)) {
    LogLine("groups: a malformed frame from " + Rank(message.header.source) + "; dropped");
    return;
  }
  Actions actions;
  {
    std::lock_guard guard(mutex_);
    Group& group = GroupLocked(frame.group());
    if (group.state == Group::State::kFailed) return;
    if (kind == Kind::kSend) {
      if (group.known()) {
        CastLocked(group, message, actions);
      } else {
        group.held.push_back(std::move(message));
      }
    } else {
      auto it = group.slots.find(frame.seq());
      if (it != group.slots.end() && it->second.op) {
        AcceptLocked(group, it->second.op, message, actions);
      } else if (it == group.slots.end() && group.known() && frame.seq() < group.next_seq) {
        // That collective has ended here: the members disagree about it (another root, or a
        // call that was not a collective of the same kind).
        LogLine(Quoted(group.name) + ": a frame of collective " + std::to_string(frame.seq()) +
                " (" + CallOf(kind) + ") from " + Rank(message.header.source) +
                " came after that collective ended on " + Rank(node_.rank()) +
                " (the members called different collectives or roots); dropped");
      } else {
        group.slots[frame.seq()].early.push_back(std::move(message));
      }
    }
  }
  Run(actions);
}

void Service::FinishLocked(const std::shared_ptr<Op>& op, Actions& actions) {
  op->finished = true;
  // A frame still being read into the caller's memory must end before the caller may go on.
  if (op->placing.empty() && !op->woken) {
    op->woken = true;
    actions.wakes.push_back(op);
  }
}

void Service::FailLocked(const std::shared_ptr<Op>& op, lmdx_error code, std::string text,
                         Actions& actions) {
  if (op->finished) return;
  op->code = code;
  op->text = std::move(text);
  FinishLocked(op, actions);
}

// Every frame of this node's part has come: a gather sends its subtree up; then the call ends.
void Service::CompleteLocked(Group& group, const std::shared_ptr<Op>& op, Actions& actions) {
  const int n = group.size();
  const int mine = Relative(group.me, op->root, n);
  if (op->kind == Kind::kGather && mine != 0) {
    const int parent = group.RankOf(Absolute(Parent(mine), op->root, n));
    // An inner node sends its subtree's buffer, a leaf the caller's own block.
    net::Payload payload;
    if (!op->subtree) {
      payload = Lent(op->lease, op->own, op->length);
    } else if (op->subtree_bytes > 0) {
      payload = net::Payload{op->subtree.get(), op->subtree_bytes,
                             std::shared_ptr<const void>(op->subtree, op->subtree.get())};
    }
    actions.sends.push_back(
        {parent, Kind::kGather, FrameBody(group, op->seq, op->root, op->length), payload});
  }
  FinishLocked(op, actions);
}

void Service::AcceptLocked(Group& group, const std::shared_ptr<Op>& op,
                           net::InboundMessage& message, Actions& actions) {
  const int source = message.header.source;
  const bool placed = message.payload_placed;
  if (placed) {
    auto it = op->placing.find(source);
    if (it != op->placing.end()) op->placing.erase(it);
  }
  if (op->finished) {
    if (op->placing.empty() && !op->woken) FinishLocked(op, actions);
    return;
  }
  wire::Frame frame;
  frame.ParseFromString(message.body);
  const Kind kind = static_cast<Kind>(static_cast<int>(message.header.type) - kFirstGroups);
  const int n = group.size();
  const int from = group.IndexOfRank(source);
  const std::string where = Quoted(group.name) + ": collective " + std::to_string(op->seq);
  const std::string here = Rank(node_.rank());
  if (kind != op->kind) {
    FailLocked(op, LMDX_ERR_MISUSE,
               where + " is " + CallOf(op->kind) + " on " + here + " but " + CallOf(kind) + " on " +
                   Rank(source),
               actions);
    return;
  }
  if (frame.root() != op->root) {
    FailLocked(op, LMDX_ERR_MISUSE,
               where + " (" + CallOf(kind) + ") has root index " + std::to_string(op->root) +
                   " on " + here + " but " + std::to_string(frame.root()) + " on " + Rank(source),
               actions);
    return;
  }
  const std::size_t length = message.header.payload_length;
  const int mine = Relative(group.me, op->root, n);
  switch (op->kind) {
    case Kind::kBcast: {
      // Passed on first, from where it landed, even to a caller that disagrees on the length:
      // every member then hears of the mismatch rather than waiting.
      net::Payload payload;
      if (length > 0) {
        payload = placed ? Lent(op->lease, op->target, length) : [&] {
          auto data = TakePayload(message);
          return net::Payload{data.get(), length, std::shared_ptr<const void>(data, data.get())};
        }();
      }
      for (int child : Children(mine, n)) {
        actions.sends.push_back(
            {group.RankOf(Absolute(child, op->root, n)), Kind::kBcast, message.body, payload});
      }
      if (length != op->length) {
        FailLocked(op, LMDX_ERR_MISUSE,
                   where + ": lmdx_bcast has " + std::to_string(op->length) + " bytes on " + here +
                       " but " + std::to_string(length) + " on the root, " +
                       Rank(group.RankOf(op->root)),
                   actions);
        return;
      }
      if (!placed && length > 0) std::memcpy(op->target, payload.data, length);
      break;
    }
    case Kind::kGather: {
      const int child = Relative(from, op->root, n);
      if (from < 0 || child == 0 || Parent(child) != mine) {
        FailLocked(op, LMDX_ERR_INTERNAL,
                   where + ": a gather frame from " + Rank(source) + ", which is no child of " +
                       here + " in the tree",
                   actions);
        return;
      }
      if (frame.length() != op->length) {
        FailLocked(op, LMDX_ERR_MISUSE,
                   where + ": lmdx_gather gives " + std::to_string(op->length) +
                       " bytes per member on " + here + " but " + std::to_string(frame.length()) +
                       " on " + Rank(source),
                   actions);
        return;
      }
      const auto count = static_cast<std::size_t>(SubtreeSize(child, n));
      if (length != count * op->length) {
        FailLocked(op, LMDX_ERR_INTERNAL,
                   where + ": a gather frame from " + Rank(source) + " has " +
                       std::to_string(length) + " bytes, not " + std::to_string(count * op->length),
                   actions);
        return;
      }
      if (!placed && length > 0) {
        if (mine == 0) {
          // Blocks in group-index order; the subtree may wrap past the last index.
          const auto first = static_cast<std::size_t>(Absolute(child, op->root, n));
          const std::size_t before_end = std::min(count, static_cast<std::size_t>(n) - first);
          std::memcpy(op->target + first * op->length, message.payload, before_end * op->length);
          std::memcpy(op->target, message.payload + before_end * op->length,
                      (count - before_end) * op->length);
        } else {
          std::memcpy(op->subtree.get() + static_cast<std::size_t>(child - mine) * op->length,
                      message.payload, length);
        }
      }
      break;
    }
    case Kind::kAlltoall: {
      if (from < 0 || from == group.me) {
        FailLocked(op, LMDX_ERR_INTERNAL,
                   where + ": an all-to-all frame from " + Rank(source) + ", not another member",
                   actions);
        return;
      }
      if (frame.length() != op->length || length != op->length) {
        FailLocked(op, LMDX_ERR_MISUSE,
                   where + ": lmdx_alltoall gives " + std::to_string(op->length) +
                       " bytes per member on " + here + " but " + std::to_string(frame.length()) +
                       " on " + Rank(source),
                   actions);
        return;
      }
      if (!placed && length > 0) {
        std::memcpy(op->target + static_cast<std::size_t>(from) * op->length, message.payload,
                    length);
      }
      break;
    }
    default: break;
  }
  if (--op->expected == 0) CompleteLocked(group, op, actions);
}

// A group send arrived (from the sender or a member on its way): passed on down the sender's
// tree, then given to a waiting receive or queued.
void Service::CastLocked(Group& group, net::InboundMessage& message, Actions& actions) {
  wire::Frame frame;
  frame.ParseFromString(message.body);
  const int source = message.header.source;
  const int n = group.size();
  const int origin = frame.root();
  std::shared_ptr<PostedReceive> claimed;
  if (message.payload_placed) {
    for (auto it = group.posted.begin(); it != group.posted.end(); ++it) {
      if ((*it)->claimed_by == source) {
        claimed = *it;
        group.posted.erase(it);
        break;
      }
    }
  }
  if (origin < 0 || origin >= n || group.me < 0 || group.IndexOfRank(source) < 0 ||
      (message.payload_placed && !claimed)) {
    LogLine(Quoted(group.name) + ": a group message from " + Rank(source) +
            " that this node cannot place; dropped");
    return;
  }
  const std::size_t length = message.header.payload_length;
  const int sender = group.RankOf(origin);
  std::shared_ptr<std::uint8_t[]> data;
  net::Payload payload;
  if (length > 0) {
    if (claimed) {
      payload = Lent(claimed->lease, claimed->buffer, length);
    } else {
      data = TakePayload(message);
      payload = net::Payload{data.get(), length, std::shared_ptr<const void>(data, data.get())};
    }
  }
  for (int child : Children(Relative(group.me, origin, n), n)) {
    actions.sends.push_back(
        {group.RankOf(Absolute(child, origin, n)), Kind::kSend, message.body, payload});
  }
  if (claimed) {
    claimed->result = Received{sender, length};
    actions.receives.push_back(std::move(claimed));
    return;
  }
  // FIFO: a receive takes the oldest message, so one goes straight to a receive only when none
  // is queued. Waiting receives too small for it fail in turn; the first large enough gets it,
  // else it stays queued.
  if (group.inbox.empty()) {
    for (auto it = group.posted.begin(); it != group.posted.end();) {
      std::shared_ptr<PostedReceive> posted = *it;
      if (posted->claimed_by >= 0) {
        ++it;
        continue;
      }
      it = group.posted.erase(it);
      if (length > posted->capacity) {
        posted->code = LMDX_ERR_TRUNCATED;
        posted->text = "the message from " + Rank(sender) + " to " + Quoted(group.name) + " is " +
                       std::to_string(length) + " bytes, longer than the receive buffer of " +
                       std::to_string(posted->capacity) + " bytes; it stays queued";
        actions.receives.push_back(std::move(posted));
        continue;
      }
      if (length > 0) std::memcpy(posted->buffer, data.get(), length);
      posted->result = Received{sender, length};
      actions.receives.push_back(std::move(posted));
      return;
    }
  }
  group.inbox.push_back(Group::Message{sender, std::move(data), length});
}

// ---- Calls -------------------------------------------------------------------------------------

std::uint64_t Service::PostLocked(Group& group, const std::shared_ptr<Op>& op, Actions& actions) {
  const std::uint64_t seq = group.next_seq++;
  op->seq = seq;
  Group::Slot& slot = group.slots[seq];
  std::deque<net::InboundMessage> early = std::move(slot.early);
  slot.early.clear();
  slot.op = op;
  for (auto& message : early) AcceptLocked(group, op, message, actions);
  return seq;
}

void Service::Await(Group& group, std::uint64_t seq, const std::shared_ptr<Op>& op) {
  net::WaitReason reason{"a collective of group", group.name};
  op->done.Wait(&reason);
  {
    std::lock_guard guard(mutex_);
    auto it = group.slots.find(seq);
    if (it != group.slots.end() && it->second.op == op) group.slots.erase(it);
  }
  // The caller's memory may still be on its way to other members: the call returns once every
  // send that borrowed it is done.
  op->lease.reset();
  op->released.Wait();
  if (op->code != LMDX_OK) throw Error(op->code, op->text);
}

namespace {

void CheckRoot(const Group& group, int root, const std::string& name) {
  if (root < 0 || root >= group.size()) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "root index " + std::to_string(root) +
                                               " is not an index of " + Quoted(name) + " (0 to " +
                                               std::to_string(group.size() - 1) + ")");
  }
}

}  // namespace

void Service::Bcast(Group& group, int root, void* buffer, std::size_t length) {
  auto op = std::make_shared<Op>();
  op->kind = Kind::kBcast;
  op->root = root;
  op->length = length;
  op->target = static_cast<std::uint8_t*>(buffer);
  op->lease = Lease(buffer, op->released);
  Actions actions;
  std::uint64_t seq = 0;
  {
    std::lock_guard guard(mutex_);
    ThrowIfLostLocked();
    CheckMemberLocked(group, "lmdx_bcast");
    CheckRoot(group, root, group.name);
    const int n = group.size();
    const int mine = Relative(group.me, root, n);
    op->expected = mine == 0 ? 0 : 1;
    seq = PostLocked(group, op, actions);
    if (mine == 0) {
      std::string body = FrameBody(group, seq, root, length);
      for (int child : Children(0, n)) {
        actions.sends.push_back({group.RankOf(Absolute(child, root, n)), Kind::kBcast, body,
                                 Lent(op->lease, buffer, length)});
      }
      CompleteLocked(group, op, actions);
    }
  }
  Run(actions);
  Await(group, seq, op);
}

void Service::Gather(Group& group, int root, const void* send, std::size_t length, void* recv) {
  auto op = std::make_shared<Op>();
  op->kind = Kind::kGather;
  op->root = root;
  op->length = length;
  op->own = static_cast<const std::uint8_t*>(send);
  op->lease = Lease(send, op->released);
  Actions actions;
  std::uint64_t seq = 0;
  {
    std::lock_guard guard(mutex_);
    ThrowIfLostLocked();
    CheckMemberLocked(group, "lmdx_gather");
    CheckRoot(group, root, group.name);
    const int n = group.size();
    const int mine = Relative(group.me, root, n);
    const auto children = static_cast<int>(Children(mine, n).size());
    if (mine == 0) {
      op->target = static_cast<std::uint8_t*>(recv);
      if (length > 0) {
        std::memcpy(op->target + static_cast<std::size_t>(group.me) * length, send, length);
      }
    } else if (children > 0) {
      // An inner node: its own block first, then each child's subtree where it belongs.
      op->subtree_bytes = static_cast<std::size_t>(SubtreeSize(mine, n)) * length;
      op->subtree = std::make_shared_for_overwrite<std::uint8_t[]>(
          std::max<std::size_t>(op->subtree_bytes, 1));
      if (length > 0) std::memcpy(op->subtree.get(), send, length);
    }
    op->expected = children;
    seq = PostLocked(group, op, actions);
    if (children == 0) CompleteLocked(group, op, actions);
  }
  Run(actions);
  Await(group, seq, op);
}

void Service::Alltoall(Group& group, const void* send, std::size_t length, void* recv) {
  auto op = std::make_shared<Op>();
  op->kind = Kind::kAlltoall;
  op->length = length;
  op->target = static_cast<std::uint8_t*>(recv);
  op->own = static_cast<const std::uint8_t*>(send);
  op->lease = Lease(send, op->released);
  Actions actions;
  std::uint64_t seq = 0;
  {
    std::lock_guard guard(mutex_);
    ThrowIfLostLocked();
    CheckMemberLocked(group, "lmdx_alltoall");
    const int n = group.size();
    const auto me = static_cast<std::size_t>(group.me);
    if (length > 0) std::memcpy(op->target + me * length, op->own + me * length, length);
    op->expected = n - 1;
    seq = PostLocked(group, op, actions);
    // Pairwise exchange: round r sends one block to this round's partner. The sends go out in
    // round order; blocks of later rounds that come early land in place all the same.
    std::string body = FrameBody(group, seq, 0, length);
    for (int round = 1; round < n; ++round) {
      const int partner = SendPartner(group.me, round, n);
      const std::uint8_t* block = op->own + static_cast<std::size_t>(partner) * length;
      actions.sends.push_back(
          {group.RankOf(partner), Kind::kAlltoall, body, Lent(op->lease, block, length)});
    }
    if (n == 1) CompleteLocked(group, op, actions);
  }
  Run(actions);
  Await(group, seq, op);
}

void Service::Send(Group& group, const void* buffer, std::size_t length) {
  net::Completion released;
  std::shared_ptr<const void> lease = Lease(buffer, released);
  Actions actions;
  {
    std::lock_guard guard(mutex_);
    ThrowIfLostLocked();
    CheckMemberLocked(group, "lmdx_group_send");
    const int n = group.size();
    std::string body = FrameBody(group, 0, group.me, length);
    for (int child : Children(0, n)) {
      actions.sends.push_back({group.RankOf(Absolute(child, group.me, n)), Kind::kSend, body,
                               Lent(lease, buffer, length)});
    }
  }
  Run(actions);
  lease.reset();
  released.Wait();
}

Received Service::Receive(Group& group, void* buffer, std::size_t capacity) {
  auto posted = std::make_shared<PostedReceive>();
  posted->buffer = static_cast<std::uint8_t*>(buffer);
  posted->capacity = capacity;
  {
    std::lock_guard guard(mutex_);
    ThrowIfLostLocked();
    CheckMemberLocked(group, "lmdx_group_recv");
    if (!group.inbox.empty()) {
      Group::Message& message = group.inbox.front();
      if (message.length > capacity) {
        throw Error(LMDX_ERR_TRUNCATED, "the message from " + Rank(message.source) + " to " +
                                            Quoted(group.name) + " is " +
                                            std::to_string(message.length) +
                                            " bytes, longer than the receive buffer of " +
                                            std::to_string(capacity) + " bytes; it stays queued");
      }
      if (message.length > 0) std::memcpy(buffer, message.data.get(), message.length);
      Received result{message.source, message.length};
      group.inbox.pop_front();
      return result;
    }
    posted->lease = Lease(buffer, posted->released);
    group.posted.push_back(posted);
  }
  net::WaitReason reason{"lmdx_group_recv on group", group.name};
  posted->done.Wait(&reason);
  posted->lease.reset();
  posted->released.Wait();
  if (posted->code != LMDX_OK) throw Error(posted->code, posted->text);
  return posted->result;
}

// ---- Lost peers --------------------------------------------------------------------------------

void Service::OnPeerLost(int rank, const std::string& why) {
  Actions actions;
  {
    std::lock_guard guard(mutex_);
    if (lost_.empty()) lost_ = why;
    for (auto& [id, group] : groups_) {
      for (auto& [seq, slot] : group->slots) {
        if (!slot.op) continue;
        slot.op->placing.erase(rank);  // the lost node's frame will never end
        if (slot.op->finished) {
          if (slot.op->placing.empty() && !slot.op->woken) FinishLocked(slot.op, actions);
        } else {
          FailLocked(slot.op, LMDX_ERR_PEER_LOST, why, actions);
        }
      }
      // A receive whose message is being read from a live node gets it; the others fail.
      for (auto it = group->posted.begin(); it != group->posted.end();) {
        std::shared_ptr<PostedReceive> posted = *it;
        if (posted->claimed_by >= 0 && posted->claimed_by != rank) {
          ++it;
          continue;
        }
        posted->code = LMDX_ERR_PEER_LOST;
        posted->text = why;
        actions.receives.push_back(std::move(posted));
        it = group->posted.erase(it);
      }
    }
  }
  node_.FailRequests(TypeOf(Kind::kCreate), TypeOf(Kind::kCreate), LMDX_ERR_PEER_LOST, why);
  Run(actions);
}

// ---- Registration ------------------------------------------------------------------------------

void Service::RegisterHandlers() {
  static constexpr const char* kTypeNames[] = {"group-create", "group-send", "group-bcast",
                                               "group-gather", "group-alltoall"};
  for (Kind kind : {Kind::kCreate, Kind::kSend, Kind::kBcast, Kind::kGather, Kind::kAlltoall}) {
    net::SetMessageTypeName(TypeOf(kind), kTypeNames[static_cast<int>(kind)]);
  }
  node_.Handle(TypeOf(Kind::kCreate),
               [this](net::InboundMessage& message, const net::ReplyTo* reply_to) {
                 if (reply_to != nullptr) OnCreate(message.header.source, message.body, *reply_to);
               });
  for (Kind kind : {Kind::kSend, Kind::kBcast, Kind::kGather, Kind::kAlltoall}) {
    node_.Handle(TypeOf(kind), [this, kind](net::InboundMessage& message, const net::ReplyTo*) {
      OnFrame(kind, message);
    });
    node_.Place(TypeOf(kind),
                [this, kind](const net::FrameHeader& header, const std::string& body) {
                  return Place(kind, header, body);
                });
  }
}

void Attach(net::Node& node) {
  auto service = std::make_shared<Service>(node);
  service->RegisterHandlers();
  node.AddPeerLostObserver(
      [service](int rank, const std::string& why) { service->OnPeerLost(rank, why); });
  std::lock_guard lock(current_mutex);
  current_service = service;
  current_pointer.store(service.get(), std::memory_order_release);
}

Service& Current() {
  Service* service = current_pointer.load(std::memory_order_acquire);
  if (service == nullptr) {
    throw Error(LMDX_ERR_NOT_INITIALIZED, "called before lmdx_init or lmdx_init_spmd");
  }
  return *service;
}

}  // namespace lmdx::groups

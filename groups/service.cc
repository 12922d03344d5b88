// The groups service: creating groups (each name checked by one manager node), the lock-held
// actions run after the lock, lost peers and the message handlers. Frames are frames.cc's, the
// calls collectives.cc's.
#include "groups/service.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <utility>

#include "base/error.h"
#include "base/log.h"
#include "groups/groups.pb.h"
#include "groups/internal/state.h"
#include "groups/tree.h"
#include "net/completion.h"

namespace lmdx::groups {

using namespace internal;  // NOLINT(google-build-using-namespace): this layer's own helpers

namespace {

std::mutex current_mutex;
std::shared_ptr<Service> current_service;
std::atomic<Service*> current_pointer{nullptr};

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

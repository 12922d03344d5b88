// Frames of the groups service as they arrive: placed straight into a call's buffer where one
// waits, forwarded down the tree, counted against their call, and the call completed.
#include "groups/service.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/error.h"
#include "base/log.h"
#include "groups/groups.pb.h"
#include "groups/internal/state.h"
#include "groups/tree.h"
#include "net/completion.h"

namespace lmdx::groups {

using namespace internal;  // NOLINT(google-build-using-namespace): this layer's own helpers

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

}  // namespace lmdx::groups

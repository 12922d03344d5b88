// The calls of the groups service: broadcast, gather, all-to-all, and a group's send and
// receive, each posted under the lock and awaited outside it.
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

}  // namespace lmdx::groups

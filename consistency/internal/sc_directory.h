// The home side of the sc protocol: for each page this node homes, who owns it, who holds copies,
// and the queue of requests waiting for the page's current transaction to end. Pure bookkeeping:
// sc_protocol.cc does the messages.
//
// One transaction per page at a time: a grant locks the page's entry until the requester says it
// has installed the page (kScDone). So whenever the directory decides, every node's copy of the
// page is in the state the directory believes, and no message about the page is in flight.
#ifndef LMDX_CONSISTENCY_INTERNAL_SC_DIRECTORY_H_
#define LMDX_CONSISTENCY_INTERNAL_SC_DIRECTORY_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "consistency/protocol.h"

namespace lmdx::consistency::internal {

enum class GrantData { kHaveCopy, kIncluded, kZero, kFetch };

struct ScGrantDecision {
  Access access = Access::kNone;  // what the requester may do once installed
  GrantData data = GrantData::kHaveCopy;
  int source = -1;                 // kFetch: the node to fetch from
  bool fetch_invalidates = false;  // kFetch: the source gives up its copy
  std::vector<int> invalidate;     // copies the requester must invalidate
  // The home's own copy must drop to this access before the answer leaves (the home serves
  // kIncluded from its own copy and invalidates or downgrades it inline).
  std::optional<Access> home_change;
  // Not empty: no grant. The page's only copy was on a node that was lost; the requester fails
  // with this text, and the page stays locked by nobody.
  std::string lost;
};

class ScDirectory {
 public:
  struct Request {
    int requester;
    Access wanted;
    bool first_touch;
  };
  // Runs a queued request once the page is free; the page is locked for it.
  using Resume = std::function<void(const ScGrantDecision&)>;
  using Resumption = std::pair<Resume, ScGrantDecision>;

  ScDirectory(int self, int size)
      : self_(self), size_(size), lost_(static_cast<std::size_t>(size), false) {}

  // Locks the page for request and decides, or queues resume when the page is locked.
  std::optional<ScGrantDecision> Acquire(PageId page, const Request& request, Resume resume);
  // The transaction on page is over. Returns the next queued requests, already decided, to run:
  // one that was granted, after any that were refused (see ScGrantDecision::lost).
  std::vector<Resumption> Release(PageId page);
  // The transaction on page failed before the requester installed the page (a node it had to
  // fetch from or invalidate was lost): the entry goes back to what it was before the grant, which
  // is what every node still holds (less the nodes that were lost), and the page is free for the
  // next request (returned, decided).
  std::vector<Resumption> Abort(PageId page);
  // Creates the entry of a page nobody has touched, owned by this node and locked; false if the
  // page already has an entry. Release it once the page is open.
  bool ClaimFresh(PageId page);
  // A node was lost: it leaves every copyset (now and in what an abort restores), its queued
  // requests go, a transaction it had been granted is aborted, and a page it owned passes to a
  // node that still holds a copy, or is marked lost when none does. Returns the requests that
  // may now run, decided.
  std::vector<Resumption> ForgetNode(int node);

 private:
  static constexpr int kLostOwner = -2;
  struct Entry {
    int owner = -1;             // -1: a first-touch page nobody touched; kLostOwner: see lost
    std::vector<bool> copyset;  // nodes holding a valid copy
    bool locked = false;
    int holder = -1;     // the requester of the transaction under way
    int lost_from = -1;  // kLostOwner: the node that held the only copy
    // Owner and copyset before the grant under way, for Abort.
    int owner_before = -1;
    std::vector<bool> copyset_before;
    std::deque<std::pair<Request, Resume>> queue;
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<PageId, Entry> entries;
  };

  Shard& ShardOf(PageId page) { return shards_[page % shards_.size()]; }
  Entry& EntryFor(Shard& shard, PageId page, bool first_touch);
  ScGrantDecision Decide(Entry& entry, const Request& request);
  // Unlocks the entry, or decides for queued requests until one is granted; the shard's mutex is
  // held.
  std::vector<Resumption> Next(Entry& entry);
  // Puts back the owner and copyset from before the grant under way, without lost nodes.
  void Restore(Entry& entry);
  // Drops lost nodes from the copyset; an owner that was lost passes to a copy holder.
  void LeaveOutLost(std::vector<bool>& copyset, int& owner, int& lost_from) const;

  int self_;
  int size_;
  std::vector<bool> lost_;  // by node; guarded by lost_mutex_
  mutable std::mutex lost_mutex_;
  std::array<Shard, 64> shards_;
};

}  // namespace lmdx::consistency::internal

#endif  // LMDX_CONSISTENCY_INTERNAL_SC_DIRECTORY_H_

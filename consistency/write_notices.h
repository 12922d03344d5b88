// Write notices and intervals for the lazy protocols (blueprint section 6).
//
// A node's execution is cut into intervals at its releases. Intervals are numbered by a Lamport
// clock: a node's next number exceeds every number it has received, so an interval that happened
// before another has the smaller number, which orders the diffs of several writers (lrc).
// A write notice (page, w, k) says that w wrote page in its interval k. An acquirer must drop its
// copy of every page some interval it now follows wrote, unless it has already seen that notice.
//
// Rather than a list of intervals, the log keeps for each (page, writer) only the newest interval
// in which that writer wrote the page: an acquirer that drops the page for the newest also covers
// every older one, so the log grows with the pages written between two barriers, not with the
// number of lock handoffs. Likewise an acquirer remembers per (page, writer) the newest interval
// it has acted on, rather than one vector time, so a notice is never skipped because some other
// path advanced a clock past it.
//
// A barrier that every node takes part in trims the log, but only of what every node had merged
// before it arrived: each arrival says what its sender had merged, and a node leaves the barrier
// knowing the smallest of those. The notices the barrier itself carries stay in the log until a
// later such barrier: a node that has left it may hand a lock to a thread of a node that has not
// yet taken the barrier's departure in, and that thread must still hear of them.
#ifndef LMDX_CONSISTENCY_WRITE_NOTICES_H_
#define LMDX_CONSISTENCY_WRITE_NOTICES_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "consistency/protocol.h"

namespace lmdx::consistency {

class WriteNoticeLog {
 public:
  WriteNoticeLog(int rank, int size) : rank_(rank), size_(size), newest_logged_(size, 0) {}

  // Starts a new interval of this node in which it wrote `pages`; returns its number. A release
  // that wrote nothing opens no interval.
  std::uint64_t Close(std::span<const PageId> pages);

  // The payload of a release: every notice the log holds; collect_diffs asks for an lrc garbage
  // collection; a barrier's arrival also says what this node has merged (with_knowledge).
  std::string Encode(bool collect_diffs = false, bool with_knowledge = false) const;

  struct Notice {
    PageId page;
    int writer;
    std::uint64_t interval;
  };
  struct Received {
    std::vector<PageId> pages;   // pages other nodes wrote that this node had not heard of
    std::vector<Notice> news;    // the notices behind them
    std::uint64_t notices = 0;   // notices that were news
    std::set<int> senders;       // the nodes whose payloads these were
    bool collect_diffs = false;  // some payload asked for a garbage collection (lrc)
  };
  // Takes the payloads an acquire brought: learns their notices (so it passes them on at its own
  // releases) and returns the pages to invalidate here. Throws lmdx::Error on a malformed payload.
  Received Merge(std::span<const std::string> payloads);

  // After a barrier whose payloads came from every node: drops the notices every node had merged
  // before it arrived (the smallest knowledge the payloads carry). Returns how many it dropped.
  std::size_t ForgetKnownEverywhere(std::span<const std::string> payloads);

  // One payload that carries every notice of `payloads` (the newest interval of each page and
  // writer), names all their senders and keeps the smallest of their knowledge: a barrier's
  // departure then carries one.
  static std::string MergeEncoded(std::span<const std::string> payloads, int size);

  // What this node knows, for a lock request: per writer the newest interval it has logged
  // (empty while it has logged none). A node that logged interval k of a writer has had all of
  // that writer's notices up to k (each came in a whole log from the writer's release of k, or
  // later); those it has since forgotten are known everywhere.
  std::string Knowledge() const;
  // payload (an Encode) without the notices that a node whose Knowledge() was knowledge has.
  // Throws lmdx::Error when either is malformed.
  static std::string Trim(const std::string& payload, const std::string& knowledge);
  // payload (an Encode, perhaps trimmed by this node's Knowledge()) with every notice of this log
  // added, the newest interval of each page and writer kept: a lock grant that this node passes
  // on untaken. The log holds every notice the trim left out (each was at most the newest
  // interval logged of its writer, so it is here or, forgotten at a barrier, known everywhere),
  // and whatever else it adds this node would send at any release of its own. Throws lmdx::Error
  // when payload is malformed.
  std::string Untrim(const std::string& payload) const;

  // The newest interval of writer that payloads name (0 if none).
  static std::uint64_t NewestOf(std::span<const std::string> payloads, int writer);

  int size() const { return size_; }
  std::size_t entries() const;

 private:
  using Key = std::pair<PageId, int>;  // page, writer
  int rank_;
  int size_;
  mutable std::mutex mutex_;
  std::uint64_t next_interval_ = 1;
  std::uint64_t newest_received_ = 0;         // the Lamport clock's input
  std::map<Key, std::uint64_t> log_;          // newest interval known of each (page, writer)
  std::map<Key, std::uint64_t> seen_;         // newest interval acted on here, for other writers
  std::vector<std::uint64_t> newest_logged_;  // by writer: never lowered (Knowledge)
};

}  // namespace lmdx::consistency

#endif  // LMDX_CONSISTENCY_WRITE_NOTICES_H_

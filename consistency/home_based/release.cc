// The release side of the home-based protocols: a release sends the node's writes so far.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "base/clock.h"
#include "base/error.h"
#include "consistency/home_based/home_based.pb.h"
#include "consistency/home_based/home_based_protocol.h"
#include "consistency/home_based/internal/message_types.h"

namespace lmdx::consistency {

using internal::kDiffs;
using internal::kInvalidate;
using internal::kUpdate;

namespace {

// Runs a function when the scope ends, however it ends.
template <typename Function>
class AtScopeExit {
 public:
  explicit AtScopeExit(Function function) : function_(std::move(function)) {}
  AtScopeExit(const AtScopeExit&) = delete;
  AtScopeExit& operator=(const AtScopeExit&) = delete;
  ~AtScopeExit() { function_(); }

 private:
  Function function_;
};

// Awaits every request, even after one failed (the node refers to them until answered), and
// throws the first failure.
std::map<int, std::string> AwaitAll(
    net::Node& node, std::map<int, std::unique_ptr<net::Node::PendingRequest>>& pending,
    std::optional<Error> failure) {
  std::map<int, std::string> replies;
  for (auto& [dest, request] : pending) {
    try {
      replies[dest] = node.Await(*request).body;
    } catch (const Error& error) {
      if (!failure) failure = error;
    }
  }
  if (failure) throw *failure;
  return replies;
}

}  // namespace

std::map<int, std::string> HomeBasedProtocol::SendDiffs(int type_offset,
                                                        const DiffBatches& batches) {
  std::map<int, std::unique_ptr<net::Node::PendingRequest>> pending;
  std::optional<Error> failure;
  if (type_offset == kDiffs) {
    // Numbered before they leave: a fetch answered meanwhile compares with the home's count.
    std::lock_guard state(state_mutex_);
    for (const auto& [home, diffs] : batches) {
      const std::uint64_t batch = ++batches_sent_[home];
      for (const auto& entry : diffs) entry.second->batch = batch;
    }
  }
  for (const auto& [dest, diffs] : batches) {
    // hlrc's homes need nothing but their copies' bytes: where the pair's network allows, the
    // diffs are written into them, and no home is asked to serve anything while it computes.
    if (type_offset == kDiffs && kind_ == HomeBasedKind::kHlrc && WriteDiffsAtHome(dest, diffs)) {
      continue;
    }
    wire::HbDiffs body;
    auto payload = std::make_shared<std::vector<std::uint8_t>>();
    for (const auto& [page, diff] : diffs) {
      body.add_pages(page);
      body.add_lengths(static_cast<std::uint32_t>(diff->bytes.size()));
      payload->insert(payload->end(), diff->bytes.begin(), diff->bytes.end());
    }
    if (type_offset == kDiffs && !diffs.empty()) body.set_batch(diffs.front().second->batch);
    try {
      pending[dest] = node_.StartRequest(dest, Type(type_offset), body.SerializeAsString(),
                                         net::Payload{payload->data(), payload->size(), payload});
    } catch (const Error& error) {
      if (!failure) failure = error;
    }
  }
  return AwaitAll(node_, pending, failure);
}

bool HomeBasedProtocol::WriteDiffsAtHome(
    int home, const std::vector<std::pair<PageId, std::shared_ptr<OwnDiff>>>& diffs) {
  std::vector<PageRun> runs;
  for (const auto& [page, diff] : diffs) {
    ForEachDiffRun(
        diff->bytes, memory_.page_bytes(),
        [&runs, page = page](std::size_t offset, std::size_t length, const std::uint8_t* bytes) {
          runs.push_back({page, offset, bytes, length});
        });
  }
  // Where writing many short runs costs more than the home's applying them from a message, the
  // memory declines them (PageMemory::WriteHomeCopies) and they go as one.
  if (!memory_.WriteHomeCopies(home, runs)) return false;
  Counters::Add(counters_.diffs_written_directly, diffs.size());
  std::uint64_t bytes = 0;
  for (const PageRun& run : runs) bytes += run.length;
  Counters::Add(counters_.bytes_written_directly, bytes);
  return true;
}

void HomeBasedProtocol::SendInvalidations(const Batches& batches) {
  std::map<int, std::unique_ptr<net::Node::PendingRequest>> pending;
  std::optional<Error> failure;
  for (const auto& [dest, pages] : batches) {
    wire::HbPages body;
    for (PageId page : pages) body.add_pages(page);
    try {
      pending[dest] = node_.StartRequest(dest, Type(kInvalidate), body.SerializeAsString());
    } catch (const Error& error) {
      if (!failure) failure = error;
    }
    Counters::Add(counters_.invalidations_sent, pages.size());
  }
  AwaitAll(node_, pending, failure);
}

HomeBasedProtocol::Flushed HomeBasedProtocol::Flush() {
  // Pages are held busy below; a fiber holding them must not park (see Obtain).
  net::NoParkingScope holding_pages;
  const std::size_t page_bytes = memory_.page_bytes();
  const int self = node_.rank();
  if (kind_ == HomeBasedKind::kHlrc) TakeRegisteredCopies(true);

  std::vector<PageId> dirty;
  {
    std::lock_guard state(state_mutex_);
    dirty.swap(dirty_);
  }
  std::sort(dirty.begin(), dirty.end());
  dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());

  // 1. Hold the written pages and take their write access, one protection change per run:
  //    writes after this fault and wait, so the diffs below miss none.
  std::vector<PageId> held;
  for (PageId page : dirty) {
    std::unique_lock lock(table_.StripeMutex(page));
    while (table_.busy(page)) table_.StripeChanged(page).wait(lock);
    // A page invalidated since its write kept that write in `saved`.
    if (table_.access(page) != Access::kWrite) continue;
    table_.set_busy(page, true);
    table_.set_access(page, Access::kRead);
    held.push_back(page);
  }
  ProtectPages(held, Access::kRead);

  // The writes kept by invalidations, taken after the pages above are held: a page invalidated
  // up to now has its writes here, a held one has them in its twin's diff below. From here until
  // their homes answer, a fetch of one of these pages applies them over the home's copy.
  AtScopeExit forget_in_flight([this] {
    std::lock_guard state(state_mutex_);
    in_flight_.clear();
  });
  std::map<PageId, OwnDiffs> saved;
  std::vector<PageId> kept;  // lrc: pages whose diffs this node keeps
  std::vector<PageId> written_at_home;
  const bool lazy = kind_ == HomeBasedKind::kLrc;
  {
    std::lock_guard state(state_mutex_);
    written_at_home.swap(home_rewritten_);
    for (auto& [page, copy] : states_) {
      if (copy.saved.empty()) continue;
      if (lazy) {
        for (const auto& diff : copy.saved) KeepDiff(page, std::move(diff->bytes));
        copy.saved.clear();
        kept.push_back(page);
        continue;
      }
      in_flight_[page] = copy.saved;
      saved[page] = std::move(copy.saved);
      copy.saved.clear();
    }
  }
  std::map<PageId, int> home_of;
  for (PageId page : held) home_of[page] = HomeOf(page);
  for (const auto& entry : saved) home_of[entry.first] = HomeOf(entry.first);

  // 2. Diff them; the saved diffs of a page go before its new one.
  DiffBatches to_homes;
  DiffBatches home_diffs;  // update: the home's own diffs, by page's copy holders below
  {
    // update: a home's writes to pages it served while writable, older than any diff below.
    std::lock_guard state(state_mutex_);
    for (auto& [page, diff] : home_pending_) home_diffs[-1].emplace_back(page, std::move(diff));
    home_pending_.clear();
  }
  for (auto& [page, diffs] : saved) {
    for (auto& diff : diffs) to_homes[home_of[page]].emplace_back(page, std::move(diff));
  }
  // A page written lately is likely written again soon (a boundary row of one of two grids that
  // alternate, a counter): it keeps a fresh twin and gets its write access back below, so its
  // next writes take no fault; each release diffs it anyway, and a page unchanged for a few
  // releases goes back to faulting.
  std::vector<PageId> kept_writable;
  std::vector<PageId> read_only;
  {
    std::lock_guard state(state_mutex_);
    for (PageId page : held) {
      int home = home_of[page];
      auto found = states_.find(page);
      Diff diff;
      if (found != states_.end() && found->second.twin) {
        AppendDiff(found->second.twin.get(), memory_.SystemView(page), page_bytes, diff);
        Counters::Add(counters_.diffs_made);
        Counters::Add(counters_.diff_bytes, diff.size());
        if (!diff.empty()) {
          std::memcpy(found->second.twin.get(), memory_.SystemView(page), page_bytes);
          found->second.quiet_releases = 0;
        } else if (++found->second.quiet_releases > kQuietReleasesKept) {
          found->second.twin.reset();
        }
      }
      bool keep = found != states_.end() && found->second.twin;
      (keep ? kept_writable : read_only).push_back(page);
      // A home page held here was writable in the interval: another node may have copied it
      // meanwhile (a fetch the home served, or a one-sided read of its memory) with a write that
      // a later write of the home took back, which no diff against the twin shows. Under the
      // protocols that tell copies by notices or invalidations it counts as written, whatever its
      // diff (update's copies hear of such writes when the page is served: ServeFetch).
      if (diff.empty() && home == self && kind_ != HomeBasedKind::kUpdate) {
        written_at_home.push_back(page);
        continue;
      }
      if (diff.empty()) continue;
      auto own = std::make_shared<OwnDiff>(OwnDiff{0, std::move(diff)});
      if (home == self) {
        written_at_home.push_back(page);
        if (kind_ == HomeBasedKind::kUpdate) home_diffs[-1].emplace_back(page, std::move(own));
      } else if (lazy) {
        KeepDiff(page, std::move(own->bytes));
        kept.push_back(page);
      } else {
        in_flight_[page].push_back(own);
        to_homes[home].emplace_back(page, std::move(own));
      }
    }
    dirty_.insert(dirty_.end(), kept_writable.begin(), kept_writable.end());
  }
  ProtectPages(kept_writable, Access::kWrite);
  for (PageId page : read_only) {
    std::lock_guard lock(table_.StripeMutex(page));
    EndTransition(page, Access::kRead);
  }
  for (PageId page : kept_writable) {
    std::lock_guard lock(table_.StripeMutex(page));
    EndTransition(page, Access::kWrite);
  }

  Flushed flushed;
  for (const auto& [home, diffs] : to_homes) {
    for (const auto& entry : diffs) flushed.written.push_back(entry.first);
  }
  flushed.written.insert(flushed.written.end(), written_at_home.begin(), written_at_home.end());
  // lrc sends nothing: its diffs wait here for the faults that want them.
  if (lazy) {
    flushed.written.insert(flushed.written.end(), kept.begin(), kept.end());
    return flushed;
  }

  // 3. The diffs to their homes, one message per home; every home has applied them when this
  //    returns, so a node that later fetches a page from its home sees these writes.
  std::map<int, std::string> answers = SendDiffs(kDiffs, to_homes);
  if (kind_ == HomeBasedKind::kHlrc) return flushed;

  // 4. rc and update: the other copies hear of the writes before the release completes.
  Batches invalidations;
  DiffBatches updates;
  for (const auto& [home, body] : answers) {
    wire::HbCopyHolders holders;
    if (!holders.ParseFromString(body)) {
      throw Error(LMDX_ERR_INTERNAL,
                  "a malformed answer to diffs from rank " + std::to_string(home));
    }
    for (const auto& entry : holders.pages()) {
      for (int node : entry.nodes()) {
        if (node == self || node < 0 || node >= node_.size()) continue;
        if (kind_ == HomeBasedKind::kRc) {
          invalidations[node].push_back(entry.page());
        } else {
          for (const auto& [page, diff] : to_homes[home]) {
            if (page == entry.page()) updates[node].emplace_back(page, diff);
          }
        }
      }
    }
  }
  for (PageId page : written_at_home) {
    for (int node : directory_.OthersThan(page, self)) {
      if (kind_ == HomeBasedKind::kRc) invalidations[node].push_back(page);
    }
  }
  for (const auto& [unused, diffs] : home_diffs) {
    for (const auto& [page, diff] : diffs) {
      for (int node : directory_.OthersThan(page, self)) {
        updates[node].emplace_back(page, diff);
      }
    }
  }
  if (kind_ == HomeBasedKind::kRc) {
    for (auto& [node, pages] : invalidations) {
      std::sort(pages.begin(), pages.end());
      pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
    }
    SendInvalidations(invalidations);
  } else {
    // Every copy holder has applied the diffs before the release completes: updates of one page
    // from different writers then reach each holder in the order of the releases.
    for (const auto& [node, diffs] : updates) Counters::Add(counters_.updates_sent, diffs.size());
    SendDiffs(kUpdate, updates);
  }
  return flushed;
}

std::string HomeBasedProtocol::OnRelease(const sync::SyncObject& object) {
  std::uint64_t start = MonotonicNs();
  // The whole release, notices included, is one at a time: a sibling's release that finds its
  // writes already sent by this one must not encode its notices before this one has closed its
  // interval, or its acquirer would not hear of those writes.
  std::lock_guard one_release(flush_mutex_);
  Flushed flushed = Flush();
  std::string payload;
  if (kind_ == HomeBasedKind::kHlrc || kind_ == HomeBasedKind::kLrc) {
    std::sort(flushed.written.begin(), flushed.written.end());
    flushed.written.erase(std::unique(flushed.written.begin(), flushed.written.end()),
                          flushed.written.end());
    if (!flushed.written.empty()) {
      std::uint64_t interval = notices_.Close(flushed.written);
      if (kind_ == HomeBasedKind::kLrc) NumberKeptDiffs(interval);
    }
    bool collect = false;
    if (kind_ == HomeBasedKind::kLrc) {
      std::lock_guard state(state_mutex_);
      collect = kept_diff_bytes_ > settings_.lrc_diff_limit;
    }
    // A barrier's arrival says what this node has merged: what every node had merged before the
    // barrier can then leave the logs (WriteNoticeLog::ForgetKnownEverywhere).
    payload = notices_.Encode(collect, object.kind == sync::ObjectKind::kBarrier);
  }
  Counters::Add(counters_.release_ns, MonotonicNs() - start);
  return payload;
}

}  // namespace lmdx::consistency

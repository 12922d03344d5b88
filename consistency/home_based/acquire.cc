// The acquire side of the home-based protocols, and invalidation (hlrc's acquires, rc's messages).
#include <algorithm>

#include "base/clock.h"
#include "base/error.h"
#include "consistency/home_based/home_based.pb.h"
#include "consistency/home_based/home_based_protocol.h"

namespace lmdx::consistency {

std::vector<PageId> HomeBasedProtocol::Invalidate(const std::vector<PageId>& pages,
                                                  const std::shared_ptr<DeferredAck>& ack,
                                                  bool wait_for_holders) {
  // On the progress thread (rc's invalidations) it never waits for a page another thread holds:
  // the holder finds the mark, drops the page when it is done and then answers. An application
  // thread's acquire (hlrc) waits for the holder instead: its holders never wait for it, and the
  // acquire must not return while a copy fetched before the writes it learnt of is readable.
  std::vector<PageId> taken;
  std::vector<bool> was_writable;
  for (PageId page : pages) {
    std::unique_lock lock(table_.StripeMutex(page));
    if (wait_for_holders) {
      while (table_.busy(page)) table_.StripeChanged(page).wait(lock);
    }
    if (table_.busy(page)) {
      std::lock_guard state(state_mutex_);
      CopyState& copy = states_[page];
      copy.stale = true;
      if (ack) copy.acks.push_back(ack);
      continue;
    }
    Access now = table_.access(page);
    if (now == Access::kNone) continue;
    table_.set_busy(page, true);
    table_.set_access(page, Access::kNone);
    taken.push_back(page);
    was_writable.push_back(now == Access::kWrite);
  }
  std::vector<PageId> sorted = taken;
  std::sort(sorted.begin(), sorted.end());
  ProtectPages(sorted, Access::kNone);
  std::vector<PageId> in_use;
  for (std::size_t i = 0; i < taken.size(); ++i) {
    PageId page = taken[i];
    std::lock_guard lock(table_.StripeMutex(page));
    if (was_writable[i]) {
      // This node's writes to the page since its last release go with the next one.
      std::lock_guard state(state_mutex_);
      CopyState& copy = states_[page];
      if (copy.twin) {
        Diff diff;
        AppendDiff(copy.twin.get(), memory_.SystemView(page), memory_.page_bytes(), diff);
        Counters::Add(counters_.diffs_made);
        Counters::Add(counters_.diff_bytes, diff.size());
        if (!diff.empty())
          copy.saved.push_back(std::make_shared<OwnDiff>(OwnDiff{0, std::move(diff)}));
        copy.twin.reset();
      }
    }
    Counters::Add(counters_.invalidations_received);
    EndTransition(page, Access::kNone);
    std::lock_guard state(state_mutex_);
    auto credit = refetch_credit_.find(page);
    if (credit != refetch_credit_.end() && credit->second > 0) {
      --credit->second;
      in_use.push_back(page);
    }
  }
  std::sort(in_use.begin(), in_use.end());
  return in_use;
}

void HomeBasedProtocol::Refetch(const std::vector<PageId>& pages) {
  net::NoParkingScope holding_pages;
  Batches by_home;
  std::vector<std::pair<PageId, int>> homes;
  homes.reserve(pages.size());
  for (PageId page : pages) homes.emplace_back(page, HomeOf(page));
  for (const auto& [page, home] : homes) {
    std::lock_guard lock(table_.StripeMutex(page));
    if (table_.busy(page) || table_.access(page) != Access::kNone) continue;
    table_.set_busy(page, true);
    by_home[home].push_back(page);
  }
  std::uint64_t count = 0;
  for (const auto& entry : by_home) count += entry.second.size();
  Counters::Add(counters_.pages_refetched, count);
  FetchAndInstall(by_home);
}

void HomeBasedProtocol::DropHomeTwins(const std::vector<PageId>& pages) {
  // Another node's release may have written its diff of such a page straight into this node's
  // memory, which leaves the twin of a page this node keeps writable as it was: a write of this
  // node that then puts back a value the twin holds would make no diff and so no notice, and a
  // reader would keep the other node's value. So the twin goes, the page faults at its next
  // write for a fresh one, and the next release names the page.
  net::NoParkingScope holding_pages;
  std::vector<PageId> held;
  for (PageId page : pages) {
    std::unique_lock lock(table_.StripeMutex(page));
    while (table_.busy(page)) table_.StripeChanged(page).wait(lock);
    if (table_.access(page) != Access::kWrite) continue;
    {
      std::lock_guard state(state_mutex_);
      auto found = states_.find(page);
      if (found == states_.end() || !found->second.twin) continue;
    }
    table_.set_busy(page, true);
    table_.set_access(page, Access::kRead);
    held.push_back(page);
  }
  ProtectPages(held, Access::kRead);
  for (PageId page : held) {
    std::lock_guard lock(table_.StripeMutex(page));
    {
      std::lock_guard state(state_mutex_);
      CopyState& copy = states_[page];
      // Writable here means written in this interval (or kept writable after one), so the next
      // release names it, whatever the page holds then (release.cc says why).
      home_rewritten_.push_back(page);
      copy.twin.reset();
    }
    EndTransition(page, Access::kRead);
  }
}

std::string HomeBasedProtocol::Knowledge() {
  if (kind_ != HomeBasedKind::kHlrc && kind_ != HomeBasedKind::kLrc) return {};
  return notices_.Knowledge();
}

std::string HomeBasedProtocol::Trim(std::string payload, const std::string& knowledge) {
  if (kind_ != HomeBasedKind::kHlrc && kind_ != HomeBasedKind::kLrc) return payload;
  return WriteNoticeLog::Trim(payload, knowledge);
}

std::string HomeBasedProtocol::Untrim(std::string payload) {
  if (kind_ != HomeBasedKind::kHlrc && kind_ != HomeBasedKind::kLrc) return payload;
  return notices_.Untrim(payload);
}

std::optional<std::string> HomeBasedProtocol::MergePayloads(std::span<const std::string> payloads) {
  if (kind_ == HomeBasedKind::kHlrc || kind_ == HomeBasedKind::kLrc) {
    return WriteNoticeLog::MergeEncoded(payloads, node_.size());
  }
  return Protocol::MergePayloads(payloads);
}

void HomeBasedProtocol::OnAcquire(const sync::SyncObject& object,
                                  std::span<const std::string> payloads) {
  // rc and update act at the release.
  if (kind_ != HomeBasedKind::kHlrc && kind_ != HomeBasedKind::kLrc) return;
  const bool lazy = kind_ == HomeBasedKind::kLrc;
  std::uint64_t start = MonotonicNs();
  std::unique_lock one_acquire(acquire_mutex_);
  WriteNoticeLog::Received received = notices_.Merge(payloads);
  Counters::Add(counters_.write_notices, received.notices);
  if (lazy) LearnRequired(received);
  std::vector<PageId> to_drop;
  std::vector<PageId> at_home;       // lrc: this node's own pages that it uses, to bring up to date
  std::vector<PageId> home_written;  // hlrc: this node's own pages that others wrote
  for (PageId page : received.pages) {
    if (page >= table_.page_count()) continue;
    // A page this node never held needs no work (and no look-up of its home); under lrc its
    // home brings it up to date at the first touch. Both read under the page's lock: a fetch
    // ending between two unlocked reads would show "no access" and then "not busy", and its
    // copy, fetched before the writes this acquire learnt of, would stay readable.
    {
      std::lock_guard lock(table_.StripeMutex(page));
      if (table_.access(page) == Access::kNone && !table_.busy(page)) continue;
    }
    if (HomeOf(page) != node_.rank()) {
      to_drop.push_back(page);
    } else if (lazy) {
      at_home.push_back(page);
    } else {
      home_written.push_back(page);
    }
  }
  std::vector<PageId> were_in_use = Invalidate(to_drop, nullptr, /*wait_for_holders=*/true);
  DropHomeTwins(home_written);
  if (lazy) {
    net::NoParkingScope holding_pages;
    std::vector<PageId> held;
    for (PageId page : at_home) {
      std::unique_lock lock(table_.StripeMutex(page));
      while (table_.busy(page)) table_.StripeChanged(page).wait(lock);
      table_.set_busy(page, true);
      held.push_back(page);
    }
    BringHomePagesUpToDate(held);
  }
  const bool everyone = object.kind == sync::ObjectKind::kBarrier &&
                        received.senders.size() == static_cast<std::size_t>(notices_.size());
  if (everyone && lazy) {
    net::NoParkingScope holding_pages;
    CollectGarbageAtBarrier(object, payloads, received.collect_diffs);
  }
  // Only what every node had merged before it arrived: another node may hand a lock to a thread of
  // a node that has not yet taken this departure in, and the notices it carried must go with it.
  if (everyone) notices_.ForgetKnownEverywhere(payloads);
  one_acquire.unlock();
  if (settings_.refetch_at_acquire && !were_in_use.empty()) Refetch(were_in_use);
  Counters::Add(counters_.acquire_ns, MonotonicNs() - start);
}

}  // namespace lmdx::consistency

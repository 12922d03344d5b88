#include "consistency/internal/sc_directory.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace lmdx::consistency::internal {

ScDirectory::Entry& ScDirectory::EntryFor(Shard& shard, PageId page, bool first_touch) {
  auto [it, created] = shard.entries.try_emplace(page);
  if (created) {
    it->second.copyset.assign(static_cast<std::size_t>(size_), false);
    if (!first_touch) {
      // Untouched pages are zeros held by their home, which has not opened them yet.
      it->second.owner = self_;
      it->second.copyset[static_cast<std::size_t>(self_)] = true;
    }
  }
  return it->second;
}

std::optional<ScGrantDecision> ScDirectory::Acquire(PageId page, const Request& request,
                                                    Resume resume) {
  Shard& shard = ShardOf(page);
  std::lock_guard lock(shard.mutex);
  Entry& entry = EntryFor(shard, page, request.first_touch);
  if (entry.locked) {
    entry.queue.emplace_back(request, std::move(resume));
    return std::nullopt;
  }
  ScGrantDecision decision = Decide(entry, request);
  if (decision.lost.empty()) {
    entry.locked = true;
    entry.holder = request.requester;
  }
  return decision;
}

std::vector<ScDirectory::Resumption> ScDirectory::Release(PageId page) {
  Shard& shard = ShardOf(page);
  std::lock_guard lock(shard.mutex);
  auto it = shard.entries.find(page);
  if (it == shard.entries.end()) return {};
  return Next(it->second);
}

std::vector<ScDirectory::Resumption> ScDirectory::Abort(PageId page) {
  Shard& shard = ShardOf(page);
  std::lock_guard lock(shard.mutex);
  auto it = shard.entries.find(page);
  if (it == shard.entries.end() || !it->second.locked) return {};
  Restore(it->second);
  return Next(it->second);
}

void ScDirectory::Restore(Entry& entry) {
  entry.owner = entry.owner_before;
  entry.copyset = entry.copyset_before;
  LeaveOutLost(entry.copyset, entry.owner, entry.lost_from);
}

void ScDirectory::LeaveOutLost(std::vector<bool>& copyset, int& owner, int& lost_from) const {
  std::lock_guard lock(lost_mutex_);
  for (std::size_t node = 0; node < copyset.size(); ++node) {
    if (lost_[node]) copyset[node] = false;
  }
  if (owner < 0 || !lost_[static_cast<std::size_t>(owner)]) return;
  // The owner's copy is gone: another copy (read-only, but the same bytes) takes its place, the
  // home's first; without one, the page's contents are gone.
  lost_from = owner;
  owner = kLostOwner;
  if (copyset[static_cast<std::size_t>(self_)]) {
    owner = self_;
    return;
  }
  for (std::size_t node = 0; node < copyset.size(); ++node) {
    if (copyset[node]) {
      owner = static_cast<int>(node);
      return;
    }
  }
}

std::vector<ScDirectory::Resumption> ScDirectory::Next(Entry& entry) {
  std::vector<Resumption> ready;
  while (!entry.queue.empty()) {
    auto [request, resume] = std::move(entry.queue.front());
    entry.queue.pop_front();
    ScGrantDecision decision = Decide(entry, request);
    const bool granted = decision.lost.empty();
    ready.emplace_back(std::move(resume), std::move(decision));
    if (granted) {
      entry.holder = request.requester;
      return ready;
    }
  }
  entry.locked = false;
  entry.holder = -1;
  return ready;
}

std::vector<ScDirectory::Resumption> ScDirectory::ForgetNode(int node) {
  if (node < 0 || node >= size_) return {};
  {
    std::lock_guard lock(lost_mutex_);
    lost_[static_cast<std::size_t>(node)] = true;
  }
  std::vector<Resumption> ready;
  for (Shard& shard : shards_) {
    std::lock_guard lock(shard.mutex);
    for (auto& [page, entry] : shard.entries) {
      std::erase_if(entry.queue,
                    [node](const auto& queued) { return queued.first.requester == node; });
      if (entry.locked && entry.holder == node) {
        // Granted, never done: what the lost node was told changes nothing elsewhere.
        Restore(entry);
        std::vector<Resumption> next = Next(entry);
        std::move(next.begin(), next.end(), std::back_inserter(ready));
        continue;
      }
      LeaveOutLost(entry.copyset, entry.owner, entry.lost_from);
      int lost_before = -1;
      LeaveOutLost(entry.copyset_before, entry.owner_before, lost_before);
    }
  }
  return ready;
}

bool ScDirectory::ClaimFresh(PageId page) {
  Shard& shard = ShardOf(page);
  std::lock_guard lock(shard.mutex);
  if (shard.entries.contains(page)) return false;
  Entry& entry = EntryFor(shard, page, /*first_touch=*/false);
  entry.locked = true;
  entry.holder = self_;
  return true;
}

ScGrantDecision ScDirectory::Decide(Entry& entry, const Request& request) {
  ScGrantDecision grant;
  if (entry.owner == kLostOwner) {
    grant.lost =
        "its only copy was on rank " + std::to_string(entry.lost_from) + ", which was lost";
    return grant;
  }
  entry.owner_before = entry.owner;
  entry.copyset_before = entry.copyset;
  auto r = static_cast<std::size_t>(request.requester);
  auto self = static_cast<std::size_t>(self_);
  if (entry.owner < 0) {
    // First touch: the requester becomes the owner of a page that is still zeros everywhere.
    entry.owner = request.requester;
    entry.copyset[r] = true;
    grant.access = Access::kWrite;
    grant.data = GrantData::kZero;
    return grant;
  }
  bool requester_has_copy = entry.copyset[r];
  if (requester_has_copy) {
    grant.data = GrantData::kHaveCopy;
  } else if (entry.copyset[self]) {
    grant.data = GrantData::kIncluded;
  } else {
    grant.data = GrantData::kFetch;
    grant.source = entry.owner;
  }

  if (request.wanted == Access::kRead) {
    if (grant.data == GrantData::kIncluded && self != r) grant.home_change = Access::kRead;
    entry.copyset[r] = true;
    bool alone = std::count(entry.copyset.begin(), entry.copyset.end(), true) == 1;
    // A reader holding the only copy may as well write it: its first write then costs no fault.
    grant.access = alone ? Access::kWrite : Access::kRead;
    if (alone) entry.owner = request.requester;
    return grant;
  }

  grant.fetch_invalidates = grant.data == GrantData::kFetch;
  for (std::size_t node = 0; node < entry.copyset.size(); ++node) {
    if (!entry.copyset[node] || node == r || node == self) continue;
    if (grant.data == GrantData::kFetch && static_cast<int>(node) == grant.source) continue;
    grant.invalidate.push_back(static_cast<int>(node));
  }
  if (entry.copyset[self] && self != r) grant.home_change = Access::kNone;
  std::fill(entry.copyset.begin(), entry.copyset.end(), false);
  entry.copyset[r] = true;
  entry.owner = request.requester;
  grant.access = Access::kWrite;
  return grant;
}

}  // namespace lmdx::consistency::internal

#include "consistency/internal/sc_directory.h"

#include <algorithm>

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
  entry.locked = true;
  return Decide(entry, request);
}

std::optional<ScDirectory::Resumption> ScDirectory::Release(PageId page) {
  Shard& shard = ShardOf(page);
  std::lock_guard lock(shard.mutex);
  auto it = shard.entries.find(page);
  if (it == shard.entries.end()) return std::nullopt;
  return Next(it->second);
}

std::optional<ScDirectory::Resumption> ScDirectory::Abort(PageId page) {
  Shard& shard = ShardOf(page);
  std::lock_guard lock(shard.mutex);
  auto it = shard.entries.find(page);
  if (it == shard.entries.end() || !it->second.locked) return std::nullopt;
  Entry& entry = it->second;
  entry.owner = entry.owner_before;
  entry.copyset = entry.copyset_before;
  return Next(entry);
}

std::optional<ScDirectory::Resumption> ScDirectory::Next(Entry& entry) {
  if (entry.queue.empty()) {
    entry.locked = false;
    return std::nullopt;
  }
  auto [request, resume] = std::move(entry.queue.front());
  entry.queue.pop_front();
  return Resumption{std::move(resume), Decide(entry, request)};
}

bool ScDirectory::ClaimFresh(PageId page) {
  Shard& shard = ShardOf(page);
  std::lock_guard lock(shard.mutex);
  if (shard.entries.contains(page)) return false;
  Entry& entry = EntryFor(shard, page, /*first_touch=*/false);
  entry.locked = true;
  return true;
}

ScGrantDecision ScDirectory::Decide(Entry& entry, const Request& request) {
  entry.owner_before = entry.owner;
  entry.copyset_before = entry.copyset;
  ScGrantDecision grant;
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

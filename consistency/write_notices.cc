#include "consistency/write_notices.h"

#include <algorithm>

#include "base/error.h"
#include "consistency/write_notices.pb.h"

namespace lmdx::consistency {
namespace {

wire::WriteNotices Parse(const std::string& payload) {
  wire::WriteNotices notices;
  if (!notices.ParseFromString(payload) || notices.pages_size() != notices.writers_size() ||
      notices.pages_size() != notices.intervals_size()) {
    throw Error(LMDX_ERR_INTERNAL,
                "a malformed set of write notices (" + std::to_string(payload.size()) + " bytes)");
  }
  return notices;
}

// The smallest knowledge of a set of barrier arrivals, by writer; a payload that says nothing of a
// writer knows none of its intervals.
std::vector<std::uint64_t> LeastKnown(std::span<const std::string> payloads, int size) {
  std::vector<std::uint64_t> least;
  bool first = true;
  for (const std::string& payload : payloads) {
    if (payload.empty()) continue;
    wire::WriteNotices notices = Parse(payload);
    std::vector<std::uint64_t> known(static_cast<std::size_t>(size), 0);
    for (int i = 0; i < notices.known_size() && i < size; ++i) known[i] = notices.known(i);
    if (first) {
      least = std::move(known);
      first = false;
      continue;
    }
    for (std::size_t i = 0; i < least.size(); ++i) least[i] = std::min(least[i], known[i]);
  }
  return least;
}

}  // namespace

std::uint64_t WriteNoticeLog::Close(std::span<const PageId> pages) {
  std::lock_guard lock(mutex_);
  std::uint64_t interval = std::max(next_interval_, newest_received_ + 1);
  next_interval_ = interval + 1;
  for (PageId page : pages) log_[{page, rank_}] = interval;
  if (!pages.empty()) newest_logged_[static_cast<std::size_t>(rank_)] = interval;
  return interval;
}

std::string WriteNoticeLog::Encode(bool collect_diffs, bool with_knowledge) const {
  wire::WriteNotices notices;
  notices.set_sender(rank_);
  notices.set_collect_diffs(collect_diffs);
  std::lock_guard lock(mutex_);
  if (with_knowledge) notices.mutable_known()->Add(newest_logged_.begin(), newest_logged_.end());
  notices.mutable_pages()->Reserve(static_cast<int>(log_.size()));
  for (const auto& [key, interval] : log_) {
    notices.add_pages(key.first);
    notices.add_writers(key.second);
    notices.add_intervals(interval);
  }
  return notices.SerializeAsString();
}

WriteNoticeLog::Received WriteNoticeLog::Merge(std::span<const std::string> payloads) {
  Received received;
  std::lock_guard lock(mutex_);
  for (const std::string& payload : payloads) {
    if (payload.empty()) continue;  // a release before any protocol state (a semaphore's init)
    wire::WriteNotices notices = Parse(payload);
    if (notices.has_sender() && (notices.sender() < 0 || notices.sender() >= size_)) {
      throw Error(LMDX_ERR_INTERNAL, "write notices from rank " + std::to_string(notices.sender()) +
                                         " of a job of " + std::to_string(size_));
    }
    if (notices.has_sender()) received.senders.insert(notices.sender());
    received.collect_diffs = received.collect_diffs || notices.collect_diffs();
    for (int sender : notices.merged_senders()) {
      if (sender < 0 || sender >= size_) {
        throw Error(LMDX_ERR_INTERNAL, "write notices merged from rank " + std::to_string(sender));
      }
      received.senders.insert(sender);
    }
    for (int i = 0; i < notices.pages_size(); ++i) {
      int writer = notices.writers(i);
      if (writer < 0 || writer >= size_) {
        throw Error(LMDX_ERR_INTERNAL, "a write notice names rank " + std::to_string(writer));
      }
      Key key{notices.pages(i), writer};
      std::uint64_t interval = notices.intervals(i);
      newest_received_ = std::max(newest_received_, interval);
      std::uint64_t& logged = log_[key];
      logged = std::max(logged, interval);
      std::uint64_t& newest = newest_logged_[static_cast<std::size_t>(writer)];
      newest = std::max(newest, interval);
      if (writer == rank_) continue;  // this node's own writes are in its own copy
      std::uint64_t& seen = seen_[key];
      if (interval <= seen) continue;
      seen = interval;
      ++received.notices;
      received.pages.push_back(key.first);
      received.news.push_back({key.first, writer, interval});
    }
  }
  std::sort(received.pages.begin(), received.pages.end());
  received.pages.erase(std::unique(received.pages.begin(), received.pages.end()),
                       received.pages.end());
  return received;
}

std::string WriteNoticeLog::Knowledge() const {
  wire::WriterIntervals known;
  std::lock_guard lock(mutex_);
  if (std::all_of(newest_logged_.begin(), newest_logged_.end(),
                  [](std::uint64_t interval) { return interval == 0; })) {
    return {};
  }
  known.mutable_newest()->Add(newest_logged_.begin(), newest_logged_.end());
  return known.SerializeAsString();
}

std::string WriteNoticeLog::Trim(const std::string& payload, const std::string& knowledge) {
  if (payload.empty() || knowledge.empty()) return payload;
  wire::WriterIntervals known;
  if (!known.ParseFromString(knowledge)) {
    throw Error(LMDX_ERR_INTERNAL, "a malformed summary of write notices");
  }
  wire::WriteNotices kept = Parse(payload);
  // The notices move out, and those the acquirer lacks come back; sender and flags stay.
  google::protobuf::RepeatedField<std::uint64_t> pages;
  google::protobuf::RepeatedField<std::int32_t> writers;
  google::protobuf::RepeatedField<std::uint64_t> intervals;
  pages.Swap(kept.mutable_pages());
  writers.Swap(kept.mutable_writers());
  intervals.Swap(kept.mutable_intervals());
  for (int i = 0; i < pages.size(); ++i) {
    int writer = writers[i];
    if (writer >= 0 && writer < known.newest_size() && intervals[i] <= known.newest(writer)) {
      continue;
    }
    kept.add_pages(pages[i]);
    kept.add_writers(writer);
    kept.add_intervals(intervals[i]);
  }
  return kept.SerializeAsString();
}

std::string WriteNoticeLog::Untrim(const std::string& payload) const {
  if (payload.empty()) return payload;  // no payload, nothing trimmed
  wire::WriteNotices notices = Parse(payload);
  std::map<Key, std::uint64_t> merged;
  for (int i = 0; i < notices.pages_size(); ++i) {
    std::uint64_t& interval = merged[{notices.pages(i), notices.writers(i)}];
    interval = std::max(interval, notices.intervals(i));
  }
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, interval] : log_) {
      std::uint64_t& newest = merged[key];
      newest = std::max(newest, interval);
    }
  }
  // Sender, flags and knowledge stay: the payload is still the releaser's.
  notices.clear_pages();
  notices.clear_writers();
  notices.clear_intervals();
  notices.mutable_pages()->Reserve(static_cast<int>(merged.size()));
  for (const auto& [key, interval] : merged) {
    notices.add_pages(key.first);
    notices.add_writers(key.second);
    notices.add_intervals(interval);
  }
  return notices.SerializeAsString();
}

std::size_t WriteNoticeLog::ForgetKnownEverywhere(std::span<const std::string> payloads) {
  const std::vector<std::uint64_t> least = LeastKnown(payloads, size_);
  if (least.empty()) return 0;
  std::lock_guard lock(mutex_);
  std::size_t dropped = 0;
  for (auto entry = log_.begin(); entry != log_.end();) {
    if (entry->second <= least[static_cast<std::size_t>(entry->first.second)]) {
      entry = log_.erase(entry);
      ++dropped;
    } else {
      ++entry;
    }
  }
  return dropped;
}

std::string WriteNoticeLog::MergeEncoded(std::span<const std::string> payloads, int size) {
  std::map<Key, std::uint64_t> merged;
  std::set<int> senders;
  bool collect_diffs = false;
  for (const std::string& payload : payloads) {
    if (payload.empty()) continue;
    wire::WriteNotices notices = Parse(payload);
    if (notices.has_sender()) senders.insert(notices.sender());
    collect_diffs = collect_diffs || notices.collect_diffs();
    senders.insert(notices.merged_senders().begin(), notices.merged_senders().end());
    for (int i = 0; i < notices.pages_size(); ++i) {
      std::uint64_t& interval = merged[{notices.pages(i), notices.writers(i)}];
      interval = std::max(interval, notices.intervals(i));
    }
  }
  wire::WriteNotices out;
  out.set_collect_diffs(collect_diffs);
  const std::vector<std::uint64_t> least = LeastKnown(payloads, size);
  if (std::any_of(least.begin(), least.end(), [](std::uint64_t known) { return known != 0; })) {
    out.mutable_known()->Add(least.begin(), least.end());
  }
  for (int sender : senders) {
    if (sender < 0 || sender >= size) {
      throw Error(LMDX_ERR_INTERNAL, "write notices from rank " + std::to_string(sender));
    }
    out.add_merged_senders(sender);
  }
  for (const auto& [key, interval] : merged) {
    out.add_pages(key.first);
    out.add_writers(key.second);
    out.add_intervals(interval);
  }
  return out.SerializeAsString();
}

std::uint64_t WriteNoticeLog::NewestOf(std::span<const std::string> payloads, int writer) {
  std::uint64_t newest = 0;
  for (const std::string& payload : payloads) {
    if (payload.empty()) continue;
    wire::WriteNotices notices = Parse(payload);
    for (int i = 0; i < notices.pages_size(); ++i) {
      if (notices.writers(i) == writer) newest = std::max(newest, notices.intervals(i));
    }
  }
  return newest;
}

std::size_t WriteNoticeLog::entries() const {
  std::lock_guard lock(mutex_);
  return log_.size();
}

}  // namespace lmdx::consistency

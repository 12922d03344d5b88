// lrc: diffs kept by their writers, fetched at faults, gathered by the homes at a collection.
#include <algorithm>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "consistency/home_based/home_based.pb.h"
#include "consistency/home_based/home_based_protocol.h"
#include "consistency/home_based/internal/message_types.h"

namespace lmdx::consistency {

using internal::kDiffs;

namespace {

// This node's diffs whose release has not closed yet go after every numbered one.
constexpr std::uint64_t kUnnumbered = std::numeric_limits<std::uint64_t>::max();

// The bounds of one answer to a diff request: far below the wire's 16 MiB body.
constexpr int kMaxDiffsAnswered = 1 << 16;
constexpr std::size_t kMaxDiffBytesAnswered = std::size_t{4} << 20;

std::uint64_t HeldOf(const std::map<int, std::uint64_t>& version, int writer) {
  auto found = version.find(writer);
  return found == version.end() ? 0 : found->second;
}

}  // namespace

void HomeBasedProtocol::KeepDiff(PageId page, Diff diff) {
  kept_diff_bytes_ += diff.size();
  std::uint64_t peak = counters_.kept_diff_peak.load(std::memory_order_relaxed);
  if (kept_diff_bytes_ > peak) counters_.kept_diff_peak.store(kept_diff_bytes_);
  std::vector<KeptDiff>& diffs = kept_diffs_[page];
  if (diffs.empty() || diffs.back().interval != 0) unnumbered_.push_back(page);
  diffs.push_back({0, std::move(diff)});
}

void HomeBasedProtocol::NumberKeptDiffs(std::uint64_t interval) {
  std::lock_guard state(state_mutex_);
  for (PageId page : unnumbered_) {
    std::vector<KeptDiff>& diffs = kept_diffs_[page];
    for (auto it = diffs.rbegin(); it != diffs.rend() && it->interval == 0; ++it) {
      it->interval = interval;
    }
  }
  unnumbered_.clear();
}

void HomeBasedProtocol::AppendOwnDiffs(PageId page, const Version& version,
                                       std::vector<DiffToApply>& out) {
  const int self = node_.rank();
  const std::uint64_t held = HeldOf(version, self);
  if (auto kept = kept_diffs_.find(page); kept != kept_diffs_.end()) {
    for (const KeptDiff& diff : kept->second) {
      if (diff.interval != 0 && diff.interval <= held) continue;
      out.push_back({diff.interval == 0 ? kUnnumbered : diff.interval, self, diff.bytes});
    }
  }
  // Writes kept when the page was invalidated, not yet released: the newest of all.
  if (auto copy = states_.find(page); copy != states_.end()) {
    for (const auto& saved : copy->second.saved) {
      out.push_back({kUnnumbered, self, saved->bytes});
    }
  }
}

std::optional<std::map<PageId, std::vector<HomeBasedProtocol::DiffToApply>>>
HomeBasedProtocol::MissingDiffs(const std::map<PageId, Version>& versions,
                                std::map<PageId, Version>* covered) {
  const int self = node_.rank();
  std::map<PageId, int> home_of;
  for (const auto& entry : versions) home_of[entry.first] = HomeOf(entry.first);
  std::map<int, wire::LazyDiffsWanted> wanted;  // by writer
  {
    std::lock_guard state(state_mutex_);
    for (const auto& [page, version] : versions) {
      if (covered != nullptr) (*covered)[page] = version;
      auto required = required_.find(page);
      if (required == required_.end()) continue;
      for (const auto& [writer, newest] : required->second) {
        // The home's own writes are always in its copy.
        if (writer == self || writer == home_of[page]) continue;
        const std::uint64_t held = HeldOf(version, writer);
        if (newest <= held) continue;
        wire::LazyDiffsWanted& ask = wanted[writer];
        ask.add_pages(page);
        ask.add_after(held);
        ask.add_upto(newest);
        if (covered != nullptr) (*covered)[page][writer] = newest;
      }
    }
  }
  std::map<PageId, std::vector<DiffToApply>> missing;
  bool gone = false;
  // An answer's size is bounded: a writer that stopped early is asked again for the rest.
  while (!wanted.empty()) {
    std::map<int, std::unique_ptr<net::Node::PendingRequest>> pending;
    std::optional<Error> failure;
    for (const auto& [writer, ask] : wanted) {
      try {
        pending[writer] = node_.StartRequest(writer, Type(kDiffs), ask.SerializeAsString());
      } catch (const Error& error) {
        if (!failure) failure = error;
      }
    }
    std::map<int, wire::LazyDiffsWanted> rest;
    // Every request is awaited, even after one failed: the node refers to them until answered.
    for (auto& [writer, request] : pending) {
      try {
        net::InboundMessage reply = node_.Await(*request);
        const wire::LazyDiffsWanted& asked = wanted[writer];
        wire::LazyDiffs diffs;
        if (!diffs.ParseFromString(reply.body) || diffs.pages_size() != diffs.intervals_size() ||
            diffs.pages_size() != diffs.lengths_size() ||
            (diffs.truncated() && static_cast<int>(diffs.resume_at()) >= asked.pages_size())) {
          throw Error(LMDX_ERR_INTERNAL,
                      "a malformed answer to a diff request from rank " + std::to_string(writer));
        }
        gone = gone || diffs.gone();
        std::uint64_t at = 0;
        const std::uint64_t length = reply.header.payload_length;
        for (int i = 0; i < diffs.pages_size(); ++i) {
          if (versions.count(diffs.pages(i)) == 0 || diffs.lengths(i) > length - at) {
            throw Error(LMDX_ERR_INTERNAL, "rank " + std::to_string(writer) +
                                               " answered a diff request with diffs not asked for");
          }
          const std::uint8_t* bytes = reply.payload + at;
          missing[diffs.pages(i)].push_back(
              {diffs.intervals(i), writer,
               std::vector<std::uint8_t>(bytes, bytes + diffs.lengths(i))});
          at += diffs.lengths(i);
        }
        Counters::Add(counters_.diffs_fetched, static_cast<std::uint64_t>(diffs.pages_size()));
        if (diffs.truncated()) {
          wire::LazyDiffsWanted& again = rest[writer];
          for (int i = static_cast<int>(diffs.resume_at()); i < asked.pages_size(); ++i) {
            again.add_pages(asked.pages(i));
            again.add_after(i == static_cast<int>(diffs.resume_at()) ? diffs.resume_after()
                                                                     : asked.after(i));
            again.add_upto(asked.upto(i));
          }
        }
      } catch (const Error& error) {
        if (!failure) failure = error;
      }
    }
    if (failure) throw *failure;
    wanted = std::move(rest);
  }
  if (gone) return std::nullopt;
  std::lock_guard state(state_mutex_);
  for (const auto& [page, version] : versions) {
    std::vector<DiffToApply>& diffs = missing[page];
    AppendOwnDiffs(page, version, diffs);
    // Intervals are Lamport numbers: one that happened before another has the smaller number, so
    // of two diffs that touch the same bytes the later one lands last.
    std::stable_sort(diffs.begin(), diffs.end(), [](const DiffToApply& a, const DiffToApply& b) {
      return a.interval != b.interval ? a.interval < b.interval : a.writer < b.writer;
    });
    if (covered == nullptr) continue;
    for (const DiffToApply& diff : diffs) {
      if (diff.writer != self || diff.interval == kUnnumbered) continue;
      std::uint64_t& held = (*covered)[page][self];
      held = std::max(held, diff.interval);
    }
  }
  return missing;
}

void HomeBasedProtocol::BringHomePagesUpToDate(const std::vector<PageId>& pages) {
  if (pages.empty()) return;
  std::map<PageId, Version> versions;
  std::map<PageId, Version> asked;  // what the diffs fetched below cover at least
  {
    std::lock_guard state(state_mutex_);
    for (PageId page : pages) {
      versions[page] = home_version_[page];
      if (auto required = required_.find(page); required != required_.end()) {
        asked[page] = required->second;
      }
    }
  }
  std::optional<std::map<PageId, std::vector<DiffToApply>>> missing;
  try {
    missing = MissingDiffs(versions);
  } catch (...) {
    for (PageId page : pages) {
      std::lock_guard lock(table_.StripeMutex(page));
      EndTransition(page, table_.access(page));
    }
    throw;
  }
  if (!missing) {
    throw Error(LMDX_ERR_INTERNAL,
                "a writer discarded diffs that a home had not gathered (an lrc collection bug)");
  }
  for (PageId page : pages) {
    std::lock_guard lock(table_.StripeMutex(page));
    {
      std::lock_guard state(state_mutex_);
      Version& version = home_version_[page];
      for (const DiffToApply& diff : (*missing)[page]) {
        if (diff.writer == node_.rank()) continue;
        ApplyToCopy(page, diff.bytes);
        std::uint64_t& held = version[diff.writer];
        held = std::max(held, diff.interval);
      }
      for (const auto& [writer, newest] : asked[page]) {
        if (writer == node_.rank()) continue;
        std::uint64_t& held = version[writer];
        held = std::max(held, newest);
      }
    }
    EndTransition(page, table_.access(page));
  }
}

bool HomeBasedProtocol::HomeCopyLacksDiffs(PageId page) {
  std::lock_guard state(state_mutex_);
  auto required = required_.find(page);
  if (required == required_.end()) return false;
  const Version& version = home_version_[page];
  for (const auto& [writer, newest] : required->second) {
    if (writer != node_.rank() && newest > HeldOf(version, writer)) return true;
  }
  return false;
}

void HomeBasedProtocol::LearnRequired(const WriteNoticeLog::Received& received) {
  std::lock_guard state(state_mutex_);
  for (const WriteNoticeLog::Notice& notice : received.news) {
    if (notice.writer == node_.rank()) continue;
    std::uint64_t& newest = required_[notice.page][notice.writer];
    newest = std::max(newest, notice.interval);
  }
}

void HomeBasedProtocol::CollectGarbageAtBarrier(const sync::SyncObject& barrier,
                                                std::span<const std::string> payloads, bool asked) {
  const int self = node_.rank();
  // Several threads of this node may pass one round: the first acts for the node.
  auto handled = collected_round_.find(barrier.name);
  if (handled != collected_round_.end() && barrier.round <= handled->second) return;
  collected_round_[std::string(barrier.name)] = barrier.round;
  if (gathered_ && gathered_->barrier == barrier.name && barrier.round > gathered_->round) {
    // Every home gathered these diffs in that earlier round, before any of its threads could
    // arrive at this one.
    const std::uint64_t upto = gathered_->upto;
    gathered_.reset();
    std::lock_guard state(state_mutex_);
    for (auto it = kept_diffs_.begin(); it != kept_diffs_.end();) {
      std::vector<KeptDiff>& diffs = it->second;
      auto keep_from = std::find_if(diffs.begin(), diffs.end(), [upto](const KeptDiff& diff) {
        return diff.interval == 0 || diff.interval > upto;
      });
      for (auto gone = diffs.begin(); gone != keep_from; ++gone) {
        kept_diff_bytes_ -= gone->bytes.size();
        std::uint64_t& mark = discarded_upto_[it->first];
        mark = std::max(mark, gone->interval);
        Counters::Add(counters_.diffs_discarded);
      }
      diffs.erase(diffs.begin(), keep_from);
      it = diffs.empty() ? kept_diffs_.erase(it) : std::next(it);
    }
  }
  if (!asked) return;
  // Every home brings its pages up to date with every diff its notices name. This node's diffs
  // that every node has heard of by now (those of the intervals it closed before it arrived)
  // are then in their homes' copies, and go at the next barrier every node passes.
  std::vector<PageId> stale_at_home;
  {
    std::lock_guard state(state_mutex_);
    for (const auto& [page, required] : required_) {
      const Version& version = home_version_[page];
      for (const auto& [writer, newest] : required) {
        if (writer != self && newest > HeldOf(version, writer)) {
          stale_at_home.push_back(page);
          break;
        }
      }
    }
  }
  std::vector<PageId> held;
  for (PageId page : stale_at_home) {
    if (HomeOf(page) != self) continue;
    std::unique_lock lock(table_.StripeMutex(page));
    while (table_.busy(page)) table_.StripeChanged(page).wait(lock);
    table_.set_busy(page, true);
    held.push_back(page);
  }
  BringHomePagesUpToDate(held);
  gathered_ =
      Gathered{std::string(barrier.name), barrier.round, WriteNoticeLog::NewestOf(payloads, self)};
}

void HomeBasedProtocol::ServeLazyDiffs(net::InboundMessage& message, const net::ReplyTo& to) {
  wire::LazyDiffsWanted wanted;
  if (!wanted.ParseFromString(message.body) || wanted.pages_size() != wanted.after_size() ||
      wanted.pages_size() != wanted.upto_size()) {
    throw Error(LMDX_ERR_INTERNAL,
                "a malformed diff request from rank " + std::to_string(message.header.source));
  }
  wire::LazyDiffs answer;
  auto payload = std::make_shared<std::vector<std::uint8_t>>();
  {
    std::lock_guard state(state_mutex_);
    for (int i = 0; i < wanted.pages_size() && !answer.truncated(); ++i) {
      const PageId page = wanted.pages(i);
      if (auto mark = discarded_upto_.find(page);
          mark != discarded_upto_.end() && wanted.after(i) < mark->second) {
        answer.set_gone(true);
      }
      auto kept = kept_diffs_.find(page);
      if (kept == kept_diffs_.end()) continue;
      std::uint64_t last = wanted.after(i);
      for (const KeptDiff& diff : kept->second) {
        if (diff.interval == 0 || diff.interval <= wanted.after(i) ||
            diff.interval > wanted.upto(i)) {
          continue;
        }
        // A lock-only program keeps diffs without bound: the answer stops at its bound, and the
        // asker asks again from here.
        if (answer.pages_size() > 0 &&
            (answer.pages_size() >= kMaxDiffsAnswered ||
             payload->size() + diff.bytes.size() > kMaxDiffBytesAnswered)) {
          answer.set_truncated(true);
          answer.set_resume_at(static_cast<std::uint32_t>(i));
          answer.set_resume_after(last);
          break;
        }
        answer.add_pages(page);
        answer.add_intervals(diff.interval);
        answer.add_lengths(static_cast<std::uint32_t>(diff.bytes.size()));
        payload->insert(payload->end(), diff.bytes.begin(), diff.bytes.end());
        last = diff.interval;
      }
    }
  }
  node_.Reply(to, answer.SerializeAsString(),
              net::Payload{payload->data(), payload->size(), payload});
}

}  // namespace lmdx::consistency

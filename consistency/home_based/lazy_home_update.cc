// lrc without barriers: a node that fetched a page whose home copy lacked many diffs tells the home
// what the copy holds once they are applied, so that the home's copy keeps up and later fetches
// gather few diffs. Without it, a program that synchronises with locks only (never a barrier,
// so never a garbage collection) would have every fetch of a page its home never touches gather
// every diff since the job began.
#include <algorithm>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "consistency/home_based/home_based.pb.h"
#include "consistency/home_based/home_based_protocol.h"
#include "consistency/home_based/internal/message_types.h"

namespace lmdx::consistency {
namespace {

using internal::kHomeUpdate;

void ToWire(const std::map<int, std::uint64_t>& version, wire::HbFetched::Version& out) {
  for (const auto& [writer, interval] : version) {
    if (interval == 0) continue;
    out.add_writers(writer);
    out.add_intervals(interval);
  }
}

std::map<int, std::uint64_t> FromWire(const wire::HbFetched::Version& version) {
  std::map<int, std::uint64_t> out;
  for (int i = 0; i < version.writers_size() && i < version.intervals_size(); ++i) {
    if (version.intervals(i) != 0) out[version.writers(i)] = version.intervals(i);
  }
  return out;
}

std::map<int, std::uint64_t> WithoutZeros(const std::map<int, std::uint64_t>& version) {
  std::map<int, std::uint64_t> out;
  for (const auto& [writer, interval] : version) {
    if (interval != 0) out[writer] = interval;
  }
  return out;
}

}  // namespace

void HomeBasedProtocol::UpdateHomes(const std::map<PageId, std::vector<std::byte>>& served,
                                    const std::map<PageId, Version>& served_versions,
                                    const std::map<PageId, std::vector<DiffToApply>>& applied,
                                    const std::map<PageId, Version>& covered) {
  const std::size_t page_bytes = memory_.page_bytes();
  struct ToHome {
    wire::LazyHomeUpdate body;
    std::shared_ptr<std::vector<std::uint8_t>> payload =
        std::make_shared<std::vector<std::uint8_t>>();
  };
  std::map<int, ToHome> by_home;
  std::vector<std::byte> now(page_bytes);
  for (const auto& [page, image] : served) {
    const int home = KnownHomeOf(page);
    if (home < 0 || home == node_.rank()) continue;
    // The served copy with every numbered diff applied, in the order the fetch applied them
    // (this node's unnumbered writes, the newest of all, stay out: no release has closed them),
    // sent as runs over every byte those diffs wrote, even one that ends as the served copy had
    // it: the home may have written such a byte itself since it served the copy, and a diff that
    // wrote it is newer than that write (else the home would have taken the diff in first, and
    // its copy would no longer hold what it served).
    std::memcpy(now.data(), image.data(), page_bytes);
    std::vector<bool> written(page_bytes, false);
    for (const DiffToApply& diff : applied.at(page)) {
      if (diff.interval != std::numeric_limits<std::uint64_t>::max()) {
        ApplyDiff(diff.bytes, now.data(), page_bytes);
        MarkDiffBytes(diff.bytes, written);
      }
    }
    Diff merged;
    AppendMarkedRuns(now.data(), written, merged);
    ToHome& to = by_home[home];
    auto* entry = to.body.add_pages();
    entry->set_page(page);
    ToWire(served_versions.at(page), *entry->mutable_base());
    ToWire(covered.at(page), *entry->mutable_now());
    entry->set_length(static_cast<std::uint32_t>(merged.size()));
    to.payload->insert(to.payload->end(), merged.begin(), merged.end());
  }
  for (auto& [home, to] : by_home) {
    try {
      node_.Send(home, Type(kHomeUpdate), to.body.SerializeAsString(),
                 net::Payload{to.payload->data(), to.payload->size(), to.payload});
      Counters::Add(counters_.home_updates_sent, static_cast<std::uint64_t>(to.body.pages_size()));
    } catch (const Error&) {
      // Only a shortcut: the next fetch gathers the diffs itself.
    }
  }
}

void HomeBasedProtocol::ServeHomeUpdate(net::InboundMessage& message) {
  wire::LazyHomeUpdate update;
  if (!update.ParseFromString(message.body)) {
    throw Error(LMDX_ERR_INTERNAL,
                "a malformed home update from rank " + std::to_string(message.header.source));
  }
  std::uint64_t at = 0;
  const std::uint64_t length = message.header.payload_length;
  for (const auto& entry : update.pages()) {
    if (entry.page() >= table_.page_count() || entry.length() > length - at) {
      throw Error(LMDX_ERR_INTERNAL, "a home update from rank " +
                                         std::to_string(message.header.source) +
                                         " reaches past its payload or the shared range");
    }
    std::span<const std::uint8_t> merged(message.payload + at, entry.length());
    at += entry.length();
    const PageId page = entry.page();
    std::lock_guard lock(table_.StripeMutex(page));
    // A page held by a transition of this node, or whose copy changed since it was served (this
    // node brought it up to date itself, or took another update), keeps what it has.
    if (table_.busy(page)) continue;
    std::lock_guard state(state_mutex_);
    Version& version = home_version_[page];
    if (WithoutZeros(version) != FromWire(entry.base())) continue;
    ApplyToCopy(page, merged);
    for (const auto& [writer, interval] : FromWire(entry.now())) {
      std::uint64_t& held = version[writer];
      held = std::max(held, interval);
    }
    Counters::Add(counters_.home_updates_applied);
  }
}

}  // namespace lmdx::consistency

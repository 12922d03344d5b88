// The home-based protocols' message handlers. They run on the progress thread and never wait for
// a page: what finds a page held by a transition is left for its holder (EndTransition).
#include <algorithm>
#include <cstring>
#include <string>

#include "base/error.h"
#include "consistency/home_based/home_based.pb.h"
#include "consistency/home_based/home_based_protocol.h"
#include "consistency/home_based/internal/message_types.h"

namespace lmdx::consistency {

using internal::kDiffs;
using internal::kFetch;
using internal::kHomeClaim;
using internal::kInvalidate;
using internal::kUpdate;

namespace {

template <typename Message>
Message Parse(const net::InboundMessage& message, const char* what) {
  Message parsed;
  if (!parsed.ParseFromString(message.body)) {
    throw Error(LMDX_ERR_INTERNAL, std::string("a malformed ") + what + " from rank " +
                                       std::to_string(message.header.source));
  }
  return parsed;
}

// Splits a kDiffs or kUpdate frame into its diffs; checks they fill the payload exactly.
std::vector<std::pair<PageId, std::span<const std::uint8_t>>> DiffsOf(
    const net::InboundMessage& message, std::uint64_t page_count, std::uint64_t* batch = nullptr) {
  auto body = Parse<wire::HbDiffs>(message, "set of diffs");
  if (batch != nullptr) *batch = body.batch();
  if (body.pages_size() != body.lengths_size()) {
    throw Error(LMDX_ERR_INTERNAL, "a set of diffs from rank " +
                                       std::to_string(message.header.source) +
                                       " names more pages than lengths");
  }
  std::vector<std::pair<PageId, std::span<const std::uint8_t>>> diffs;
  std::uint64_t at = 0;
  const std::uint64_t length = message.header.payload_length;
  for (int i = 0; i < body.pages_size(); ++i) {
    if (body.pages(i) >= page_count || body.lengths(i) > length - at) {
      throw Error(LMDX_ERR_INTERNAL, "a set of diffs from rank " +
                                         std::to_string(message.header.source) +
                                         " reaches past its payload or the shared range");
    }
    diffs.emplace_back(body.pages(i),
                       std::span<const std::uint8_t>(message.payload + at, body.lengths(i)));
    at += body.lengths(i);
  }
  if (at != length) {
    throw Error(LMDX_ERR_INTERNAL, "a set of diffs from rank " +
                                       std::to_string(message.header.source) + " has " +
                                       std::to_string(length - at) + " bytes to spare");
  }
  return diffs;
}

}  // namespace

void HomeBasedProtocol::ServeFetch(net::InboundMessage& message, const net::ReplyTo& to) {
  auto request = Parse<wire::HbPages>(message, "page fetch");
  const std::size_t page_bytes = memory_.page_bytes();
  // Handlers run one at a time on the progress thread: no batch of diffs is half applied here.
  wire::HbFetched fetched;
  fetched.set_applied_batch(batches_applied_[message.header.source]);
  for (int i = 0; i < request.pages_size(); ++i) {
    if (request.pages(i) >= table_.page_count()) {
      node_.ReplyError(to, LMDX_ERR_INTERNAL,
                       "page " + std::to_string(request.pages(i)) + " is outside the range");
      return;
    }
  }
  auto contents = std::make_shared<std::vector<std::byte>>(request.pages_size() * page_bytes);
  // Not in the middle of an opening of fresh pages (opening_mutex_): a page served now is either
  // not open yet, or open and downgraded below before it is copied.
  std::lock_guard opening(opening_mutex_);
  // hlrc: a reader whose registry ring here is full asks by message; taking the ring now frees
  // it for that reader's next faults, which then need no message again.
  if (kind_ == HomeBasedKind::kHlrc) TakeRegisteredCopies(false);
  // 1. The pages this copy is the first of and the home writes freely: from now on its writes
  //    fault once per interval, so that its releases tell the new copy holder about them. They
  //    are held while their protection changes, one change per run (a walk's fetch brings 128
  //    pages: one change each cost 0.7 ms here), so that no thread of the home writes them
  //    unseen between the change and the copy.
  std::vector<PageId> downgraded;
  for (int i = 0; i < request.pages_size(); ++i) {
    PageId page = request.pages(i);
    std::lock_guard lock(table_.StripeMutex(page));
    const bool first_copy = directory_.AddCopy(page, message.header.source);
    if (!first_copy && kind_ == HomeBasedKind::kUpdate && !table_.busy(page) &&
        table_.access(page) == Access::kWrite) {
      HandOverWritable(page);
    }
    if (first_copy && !table_.busy(page) && table_.access(page) == Access::kWrite) {
      table_.set_busy(page, true);
      table_.set_access(page, Access::kRead);
      downgraded.push_back(page);
      if (kind_ == HomeBasedKind::kHlrc) {
        std::lock_guard state(state_mutex_);
        served_first_.insert(page);
      }
    }
  }
  std::vector<PageId> sorted = downgraded;
  std::sort(sorted.begin(), sorted.end());
  ProtectPages(sorted, Access::kRead);
  Counters::Add(counters_.downgrades, downgraded.size());
  // 2. The copies, what the home wrote so far included.
  for (int i = 0; i < request.pages_size(); ++i) {
    PageId page = request.pages(i);
    std::lock_guard lock(table_.StripeMutex(page));
    const bool held = std::binary_search(sorted.begin(), sorted.end(), page);
    if (held) {
      // No other node held the page, so nobody needs to hear of what the home wrote before.
      std::lock_guard state(state_mutex_);
      auto found = states_.find(page);
      if (found != states_.end()) found->second.twin.reset();
    }
    std::memcpy(contents->data() + i * page_bytes, memory_.SystemView(page), page_bytes);
    if (kind_ == HomeBasedKind::kLrc) {
      // The copy and the intervals it holds, read under the same page lock that guards both.
      auto* version = fetched.add_versions();
      std::lock_guard state(state_mutex_);
      for (const auto& [writer, interval] : home_version_[page]) {
        version->add_writers(writer);
        version->add_intervals(interval);
      }
    }
    if (held) EndTransition(page, Access::kRead);
  }
  Counters::Add(counters_.directory_requests);
  node_.Reply(to, fetched.SerializeAsString(),
              net::Payload{contents->data(), contents->size(), contents});
}

void HomeBasedProtocol::HandOverWritable(PageId page) {
  // update, at a page's home, serving a copy of a page it holds writable: the copy gets the
  // home's writes so far, which its next release's diff against the twin would not carry to the
  // copy (a write the home then took back shows in no diff). So the home stops writing (its
  // next write faults), keeps its writes so far as a diff for the copies held before, and takes
  // the served contents as its twin: its next diff is against what the new copy holds.
  memory_.Protect(page, 1, Access::kRead);
  table_.set_access(page, Access::kRead);
  Counters::Add(counters_.downgrades);
  std::lock_guard state(state_mutex_);
  auto found = states_.find(page);
  if (found == states_.end() || !found->second.twin) return;
  Diff so_far;
  AppendDiff(found->second.twin.get(), memory_.SystemView(page), memory_.page_bytes(), so_far);
  if (!so_far.empty()) {
    home_pending_.emplace_back(page, std::make_shared<OwnDiff>(OwnDiff{0, std::move(so_far)}));
    dirty_.push_back(page);
  }
  std::memcpy(found->second.twin.get(), memory_.SystemView(page), memory_.page_bytes());
}

void HomeBasedProtocol::TakeRegisteredCopies(bool at_release) {
  std::unordered_set<PageId> served_first;
  std::vector<std::pair<int, PageId>> deferred;
  {
    std::lock_guard state(state_mutex_);
    served_first.swap(served_first_);
    if (at_release) deferred.swap(registered_while_held_);
  }
  std::vector<PageId> downgraded;
  std::unordered_set<PageId> held;  // the pages of downgraded, held busy until their protection
  std::vector<PageId> rewritten;
  // always_named: a copy whose registration waited for a page in a transition may lack what the
  // home wrote since any release, so it counts as written whatever happened meanwhile.
  auto take = [&](int node, PageId page, bool always_named) {
    std::unique_lock lock(table_.StripeMutex(page));
    // A home page held busy is in a transition that ends soon (a release's). A release waits for
    // it; the progress thread never waits for a page, and leaves the copy to the next release.
    while (!held.contains(page) && table_.busy(page)) {
      if (!at_release) {
        std::lock_guard state(state_mutex_);
        registered_while_held_.emplace_back(node, page);
        return;
      }
      table_.StripeChanged(page).wait(lock);
    }
    const bool first_copy = directory_.AddCopy(page, node);
    std::lock_guard state(state_mutex_);
    if (first_copy && table_.access(page) == Access::kWrite) {
      table_.set_busy(page, true);
      table_.set_access(page, Access::kRead);
      if (auto found = states_.find(page); found != states_.end()) found->second.twin.reset();
      held.insert(page);
      downgraded.push_back(page);
      rewritten.push_back(page);
    } else if (always_named || served_first.contains(page) || served_first_.contains(page)) {
      rewritten.push_back(page);
    }
  };
  for (const auto& [node, page] : deferred) take(node, page, true);
  memory_.TakeRegisteredCopies([&](int node, PageId first, std::uint64_t count) {
    for (PageId page = first; page < first + count; ++page) take(node, page, false);
  });
  std::sort(downgraded.begin(), downgraded.end());
  ProtectPages(downgraded, Access::kRead);
  Counters::Add(counters_.downgrades, downgraded.size());
  for (PageId page : downgraded) {
    std::lock_guard lock(table_.StripeMutex(page));
    EndTransition(page, Access::kRead);
  }
  std::lock_guard state(state_mutex_);
  home_rewritten_.insert(home_rewritten_.end(), rewritten.begin(), rewritten.end());
}

void HomeBasedProtocol::ServeDiffs(net::InboundMessage& message, const net::ReplyTo& to) {
  const int writer = message.header.source;
  wire::HbCopyHolders holders;
  std::uint64_t batch = 0;
  const auto diffs = DiffsOf(message, table_.page_count(), &batch);
  for (const auto& [page, diff] : diffs) {
    {
      std::lock_guard lock(table_.StripeMutex(page));
      std::lock_guard state(state_mutex_);
      ApplyToCopy(page, diff);
    }
    if (kind_ == HomeBasedKind::kHlrc) continue;
    std::vector<int> others = directory_.OthersThan(page, writer);
    if (others.empty()) continue;
    auto* entry = holders.add_pages();
    entry->set_page(page);
    for (int node : others) entry->add_nodes(node);
  }
  batches_applied_[writer] = std::max(batches_applied_[writer], batch);
  Counters::Add(counters_.directory_requests);
  node_.Reply(to, holders.SerializeAsString());
}

void HomeBasedProtocol::ServeUpdate(net::InboundMessage& message, const net::ReplyTo& to) {
  // Answered when this and every holder of a page named here are done with it.
  const auto diffs = DiffsOf(message, table_.page_count());
  auto ack = std::make_shared<DeferredAck>(node_, to);
  for (const auto& [page, diff] : diffs) {
    std::lock_guard lock(table_.StripeMutex(page));
    std::lock_guard state(state_mutex_);
    if (table_.busy(page)) {
      CopyState& copy = states_[page];
      copy.pending.emplace_back(diff.begin(), diff.end());
      copy.acks.push_back(ack);
    } else if (table_.access(page) != Access::kNone) {
      ApplyToCopy(page, diff);
    }
  }
}

void HomeBasedProtocol::RegisterHandlers(net::Node& node) {
  // The names are kept by pointer, so they are literals.
  static constexpr const char* kNames[4][internal::kTypesPerProtocol] = {
      {"update-fetch", "update-diffs", "update-invalidate", "update-update", "update-home",
       "update-home-update"},
      {"rc-fetch", "rc-diffs", "rc-invalidate", "rc-update", "rc-home", "rc-home-update"},
      {"hlrc-fetch", "hlrc-diffs", "hlrc-invalidate", "hlrc-update", "hlrc-home",
       "hlrc-home-update"},
      {"lrc-fetch", "lrc-diffs", "lrc-invalidate", "lrc-update", "lrc-home", "lrc-home-update"}};
  for (int offset = 0; offset < internal::kTypesPerProtocol; ++offset) {
    net::SetMessageTypeName(Type(offset), kNames[static_cast<int>(kind_)][offset]);
  }
  node.Handle(Type(kFetch), [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to != nullptr) ServeFetch(message, *to);
  });
  node.Handle(Type(kHomeClaim), [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    auto request = Parse<wire::HbPages>(message, "home claim");
    wire::HbHomes homes;
    for (PageId page : request.pages()) {
      homes.add_homes(first_touch_homes_.Claim(page, message.header.source));
    }
    node_.Reply(*to, homes.SerializeAsString());
  });
  node.Handle(Type(kDiffs), [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    if (kind_ == HomeBasedKind::kLrc) {
      ServeLazyDiffs(message, *to);  // lrc: a fault asks a writer for its diffs
    } else {
      ServeDiffs(message, *to);  // a release's diffs for their home
    }
  });
  node.Handle(Type(kInvalidate), [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    auto request = Parse<wire::HbPages>(message, "invalidation");
    std::vector<PageId> pages;
    for (PageId page : request.pages()) {
      if (page < table_.page_count()) pages.push_back(page);
    }
    // Answered when every page named here is dropped, some perhaps later by their holders.
    Invalidate(pages, std::make_shared<DeferredAck>(node_, *to), /*wait_for_holders=*/false);
  });
  node.Handle(Type(kUpdate), [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to != nullptr) ServeUpdate(message, *to);
  });
  node.Handle(Type(internal::kHomeUpdate),
              [this](net::InboundMessage& message, const net::ReplyTo*) {
                if (kind_ == HomeBasedKind::kLrc) ServeHomeUpdate(message);
              });
}

}  // namespace lmdx::consistency

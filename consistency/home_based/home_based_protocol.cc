#include "consistency/home_based/home_based_protocol.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "base/error.h"
#include "consistency/home_based/home_based.pb.h"
#include "consistency/home_based/internal/message_types.h"
#include "consistency/home_based/internal/open_pause.h"
#include "consistency/home_based/internal/staging_buffer.h"

namespace lmdx::consistency {

using internal::kFetch;

HomeBasedProtocol::HomeBasedProtocol(HomeBasedKind kind, int type_base, net::Node& node,
                                     PageMemory& memory, PageTable& table, Counters& counters,
                                     Settings settings)
    : kind_(kind),
      type_base_(type_base),
      node_(node),
      memory_(memory),
      table_(table),
      counters_(counters),
      settings_(settings),
      notices_(node.rank(), node.size()),
      batches_sent_(node.size(), 0),
      batches_applied_(node.size(), 0),
      open_pause_(internal::OpenPauseFromEnvironment()) {}

const char* HomeBasedProtocol::name() const {
  switch (kind_) {
    case HomeBasedKind::kUpdate: return "update";
    case HomeBasedKind::kRc: return "rc";
    case HomeBasedKind::kHlrc: return "hlrc";
    case HomeBasedKind::kLrc: return "lrc";
  }
  return "?";
}

net::MessageType HomeBasedProtocol::Type(int offset) const {
  return static_cast<net::MessageType>(type_base_ + offset);
}

int HomeBasedProtocol::HomeOf(PageId page) { return HomeOf(page, memory_.PlacementOf(page)); }

int HomeBasedProtocol::HomeOf(PageId page, const Placement& placement) {
  if (placement.home < 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "the address is not in shared memory");
  }
  if (!placement.first_touch) return placement.home;
  if (std::optional<int> known = first_touch_homes_.Known(page)) return *known;
  int home = -1;
  if (placement.home == node_.rank()) {
    home = first_touch_homes_.Claim(page, node_.rank());
  } else {
    wire::HbPages claim;
    claim.add_pages(page);
    net::InboundMessage reply =
        node_.Request(placement.home, Type(internal::kHomeClaim), claim.SerializeAsString());
    wire::HbHomes homes;
    if (!homes.ParseFromString(reply.body) || homes.homes_size() != 1 || homes.homes(0) < 0 ||
        homes.homes(0) >= node_.size()) {
      throw Error(LMDX_ERR_INTERNAL,
                  "a malformed answer to a home claim from rank " + std::to_string(placement.home));
    }
    home = homes.homes(0);
    first_touch_homes_.Learn(page, home);
  }
  if (home == node_.rank()) Counters::Add(counters_.homes_taken);
  return home;
}

int HomeBasedProtocol::KnownHomeOf(PageId page) {
  Placement placement = memory_.PlacementOf(page);
  if (!placement.first_touch) return placement.home;
  return first_touch_homes_.Known(page).value_or(-1);
}

void HomeBasedProtocol::ProtectPages(const std::vector<PageId>& sorted_pages, Access access) {
  std::size_t at = 0;
  while (at < sorted_pages.size()) {
    std::size_t end = at + 1;
    while (end < sorted_pages.size() && sorted_pages[end] == sorted_pages[end - 1] + 1) ++end;
    memory_.Protect(sorted_pages[at], end - at, access);
    at = end;
  }
}

// ---- Faults --------------------------------------------------------------------------------

void HomeBasedProtocol::Obtain(PageId page, Access wanted) {
  const Placement placement = memory_.PlacementOf(page);
  const int home = HomeOf(page, placement);  // throws when the page is not shared
  const bool at_home = home == node_.rank();
  std::unique_lock lock(table_.StripeMutex(page));
  for (;;) {
    while (table_.busy(page)) table_.StripeChanged(page).wait(lock);
    Access now = table_.access(page);
    if (now >= wanted) return;
    if (at_home && kind_ == HomeBasedKind::kLrc && HomeCopyLacksDiffs(page)) {
      // Notices named this page before this node touched it: its copy takes their diffs first.
      table_.set_busy(page, true);
      lock.unlock();
      {
        net::NoParkingScope holding_a_page;
        BringHomePagesUpToDate({page});
      }
      lock.lock();
      continue;
    }
    if (at_home) {
      OpenAtHome(page, wanted);
      return;
    }
    if (now == Access::kRead) {
      Counters::Add(counters_.upgrades);
      StartWriting(page);
      lock.unlock();
      // A walk that writes over copies this node holds: the pages ahead open for writing too.
      if (settings_.fetch_ahead) UpgradeAhead(page, placement);
      return;
    }
    table_.set_busy(page, true);
    {
      std::lock_guard state(state_mutex_);
      refetch_credit_[page] = kRefetchCredit;
    }
    lock.unlock();
    Batches by_home{{home, UnitToFetch(page, placement, home)}};
    std::vector<PageId> ahead;
    if (settings_.fetch_ahead) ahead = AddStreamAhead(page, placement, by_home);
    // A fiber must not park while it holds a page busy: a sibling fiber of the same worker that
    // faults on the page would block the worker the holder needs to resume.
    net::NoParkingScope holding_a_page;
    FetchAndInstall(by_home);
    // A walk that writes goes on writing: the pages ahead open for writing now, in a protection
    // change per run, rather than at an upgrade fault each.
    if (wanted == Access::kWrite && !ahead.empty()) StartWritingAll(ahead);
    lock.lock();
  }
}

std::vector<PageId> HomeBasedProtocol::UnitToFetch(PageId page, const Placement& placement,
                                                   int home) {
  // The faulting page (already held by the caller) and the other pages of its coherence unit
  // that this node lacks and the same home serves: one message brings them all.
  std::vector<PageId> pages{page};
  for (PageId other = placement.unit_first; other < placement.unit_first + placement.unit_pages;
       ++other) {
    // A first-touch page nobody has claimed to this node's knowledge is left to its own fault,
    // which claims it.
    if (other == page || KnownHomeOf(other) != home) continue;
    std::lock_guard lock(table_.StripeMutex(other));
    if (table_.busy(other) || table_.access(other) != Access::kNone) continue;
    table_.set_busy(other, true);
    pages.push_back(other);
  }
  std::sort(pages.begin(), pages.end());
  Counters::Add(counters_.pages_prefetched, pages.size() - 1);
  return pages;
}

std::vector<PageId> HomeBasedProtocol::AddStreamAhead(PageId page, const Placement& placement,
                                                      Batches& by_home) {
  const internal::FaultStreams::Ahead ahead = streams_.OnFault(page);
  Counters::Add(counters_.streamed_used, ahead.confirmed);
  const auto region_end = placement.region_first + placement.region_pages;
  std::vector<PageId> added;
  for (std::uint32_t step = 1; step <= ahead.count; ++step) {
    const auto other = static_cast<PageId>(static_cast<std::int64_t>(page) + ahead.stride * step);
    if (other < placement.region_first || other >= region_end) break;
    // As in a coherence unit: an unclaimed first-touch page is left to its own fault, and a page
    // homed here is the home's to open.
    const int home = KnownHomeOf(other);
    if (home < 0 || home == node_.rank()) continue;
    std::lock_guard lock(table_.StripeMutex(other));
    if (table_.busy(other) || table_.access(other) != Access::kNone) continue;
    table_.set_busy(other, true);
    std::vector<PageId>& pages = by_home[home];
    // Sorted per home, as FetchAndInstall's runs of protection changes want them.
    pages.insert(std::upper_bound(pages.begin(), pages.end(), other), other);
    added.push_back(other);
  }
  Counters::Add(counters_.pages_streamed, added.size());
  return added;
}

void HomeBasedProtocol::OpenAtHome(PageId page, Access wanted) {
  if (!directory_.Shared(page)) {
    // No other node has a copy: the home writes with no fault from now on.
    memory_.Protect(page, 1, Access::kWrite);
    table_.set_access(page, Access::kWrite);
    Counters::Add(counters_.zero_pages);
    return;
  }
  if (wanted == Access::kRead) {
    memory_.Protect(page, 1, Access::kRead);
    table_.set_access(page, Access::kRead);
    return;
  }
  StartWriting(page);
}

void HomeBasedProtocol::StartWriting(PageId page) {
  {
    std::lock_guard state(state_mutex_);
    // The home's copy is the master, but a shared page it writes gets a twin too: its release
    // learns from the diff whether the page changed (and under update sends it to the copies).
    {
      CopyState& copy = states_[page];
      if (!copy.twin) {
        copy.twin = std::make_unique<std::byte[]>(memory_.page_bytes());
        std::memcpy(copy.twin.get(), memory_.SystemView(page), memory_.page_bytes());
        Counters::Add(counters_.twins);
      }
    }
    dirty_.push_back(page);
  }
  memory_.Protect(page, 1, Access::kWrite);
  table_.set_access(page, Access::kWrite);
}

void HomeBasedProtocol::UpgradeAhead(PageId page, const Placement& placement) {
  const internal::FaultStreams::Ahead ahead = streams_.OnFault(page);
  Counters::Add(counters_.streamed_used, ahead.confirmed);
  const auto region_end = placement.region_first + placement.region_pages;
  std::vector<PageId> pages;
  for (std::uint32_t step = 1; step <= ahead.count; ++step) {
    const auto other = static_cast<PageId>(static_cast<std::int64_t>(page) + ahead.stride * step);
    if (other < placement.region_first || other >= region_end) break;
    const int home = KnownHomeOf(other);
    if (home >= 0 && home != node_.rank()) pages.push_back(other);
  }
  Counters::Add(counters_.pages_streamed, StartWritingAll(pages));
}

std::size_t HomeBasedProtocol::StartWritingAll(const std::vector<PageId>& pages) {
  // What an upgrade fault on each page would do (StartWriting), for the pages still readable and
  // free: the pages stay busy between the twin and the protection change, and an invalidation
  // meanwhile wins (EndTransition keeps what the twin shows as written, which is nothing yet).
  std::vector<PageId> held;
  for (PageId page : pages) {
    std::lock_guard lock(table_.StripeMutex(page));
    if (table_.busy(page) || table_.access(page) != Access::kRead) continue;
    table_.set_busy(page, true);
    held.push_back(page);
  }
  {
    std::lock_guard state(state_mutex_);
    for (PageId page : held) {
      CopyState& copy = states_[page];
      if (!copy.twin) {
        copy.twin = std::make_unique<std::byte[]>(memory_.page_bytes());
        std::memcpy(copy.twin.get(), memory_.SystemView(page), memory_.page_bytes());
        Counters::Add(counters_.twins);
      }
      dirty_.push_back(page);
    }
  }
  std::sort(held.begin(), held.end());
  ProtectPages(held, Access::kWrite);
  for (PageId page : held) {
    std::lock_guard lock(table_.StripeMutex(page));
    EndTransition(page, Access::kWrite);
  }
  return held.size();
}

void HomeBasedProtocol::ApplyToCopy(PageId page, std::span<const std::uint8_t> diff) {
  // Callers hold state_mutex_. A twin is patched too, so that this node's own diff of the page
  // at its next release carries only its own writes.
  ApplyDiff(diff, memory_.SystemView(page), memory_.page_bytes());
  auto copy = states_.find(page);
  if (copy != states_.end() && copy->second.twin) {
    ApplyDiff(diff, copy->second.twin.get(), memory_.page_bytes());
  }
  Counters::Add(counters_.diffs_applied);
}

HomeBasedProtocol::DeferredAck::~DeferredAck() {
  try {
    node_.Reply(to_, {});
  } catch (const Error&) {
    // The node has stopped: the writer waiting for this answer is ending too.
  }
}

void HomeBasedProtocol::EndTransition(PageId page, Access access) {
  // Answered after the access below is set, when these go out of scope.
  std::vector<std::shared_ptr<DeferredAck>> acks;
  {
    std::lock_guard state(state_mutex_);
    auto found = states_.find(page);
    if (found != states_.end()) {
      CopyState& copy = found->second;
      acks.swap(copy.acks);
      if (copy.stale) {
        // An invalidation came while the page was held: it wins over what was installed. This
        // node's writes since the twin are kept as a diff, as Invalidate does.
        copy.stale = false;
        copy.pending.clear();
        // Protected first: a kept-writable page is writable again by now, and its diff must not
        // race with the node's writers.
        if (access != Access::kNone) {
          memory_.Protect(page, 1, Access::kNone);
          access = Access::kNone;
        }
        if (copy.twin) {
          Diff diff;
          AppendDiff(copy.twin.get(), memory_.SystemView(page), memory_.page_bytes(), diff);
          Counters::Add(counters_.diffs_made);
          if (!diff.empty())
            copy.saved.push_back(std::make_shared<OwnDiff>(OwnDiff{0, std::move(diff)}));
          copy.twin.reset();
        }
        Counters::Add(counters_.invalidations_received);
      } else {
        for (const Diff& update : copy.pending) ApplyToCopy(page, update);
        copy.pending.clear();
      }
      if (!copy.twin && copy.saved.empty()) states_.erase(found);
    }
  }
  table_.set_access(page, access);
  table_.set_busy(page, false);
  table_.StripeChanged(page).notify_all();
}

void HomeBasedProtocol::FetchAndInstall(const Batches& by_home) {
  const std::size_t page_bytes = memory_.page_bytes();
  struct Fetch {
    int home = -1;
    std::vector<PageId> pages;
    // Per page, this node's writes the home may lack when it serves the request: those of a
    // release under way and those not yet sent. Kept even if that release completes before the
    // answer comes: the answer says which batches the home had applied. No newer write of this
    // node intervenes, as the page is held throughout.
    std::vector<OwnDiffs> own_writes;
    internal::StagingBuffer staging;
    // Read from the home's memory rather than asked for (PageMemory::ReadHomeCopies).
    bool direct = false;
    // hlrc: first copies, recorded in the home's registry before they are read there
    // (PageMemory::RegisterCopies).
    bool registered = false;
    bool got = false;  // staging holds the pages
    std::unique_ptr<net::Node::PendingRequest> request;
    std::optional<net::InboundMessage> reply;
    wire::HbFetched fetched;
  };
  const bool lazy = kind_ == HomeBasedKind::kLrc;
  // At most three per home: the pages read from its memory, first copies registered and read
  // there, and those asked for.
  std::vector<Fetch> fetches;
  fetches.reserve(3 * by_home.size());
  std::optional<Error> failure;
  auto ask = [&](Fetch& fetch) {
    wire::HbPages request;
    for (PageId page : fetch.pages) request.add_pages(page);
    try {
      fetch.request = node_.StartRequest(fetch.home, Type(kFetch), request.SerializeAsString(), {},
                                         reinterpret_cast<std::uint8_t*>(fetch.staging.data()),
                                         fetch.staging.size());
    } catch (const Error& error) {
      if (!failure) failure = error;
    }
  };
  for (const auto& [home, pages] : by_home) {
    Fetch asked;
    asked.home = home;
    Fetch read;
    read.home = home;
    read.direct = true;
    Fetch first;
    first.home = home;
    first.direct = true;
    first.registered = true;
    {
      std::lock_guard state(state_mutex_);
      for (PageId page : pages) {
        OwnDiffs own;
        if (!lazy) {
          if (auto sending = in_flight_.find(page); sending != in_flight_.end())
            own = sending->second;
          if (auto copy = states_.find(page); copy != states_.end()) {
            own.insert(own.end(), copy->second.saved.begin(), copy->second.saved.end());
          }
        }
        // A page may be read from the home's memory when the home already counts this node among
        // its copies (it must hear of a first copy, to fault on its own next write) and its copy
        // holds every write of this node (a release's diffs are applied before it completes).
        // lrc's home copies lack diffs that stay with their writers: its pages are always asked
        // for. hlrc's home learns of a first copy from its registry, at its next release
        // (TakeRegisteredCopies); rc and update must know every copy when a writer's diffs come,
        // so their first copies are asked for.
        Fetch& fetch = lazy || !own.empty()            ? asked
                       : known_copies_.contains(page)  ? read
                       : kind_ == HomeBasedKind::kHlrc ? first
                                                       : asked;
        fetch.pages.push_back(page);
        fetch.own_writes.push_back(std::move(own));
      }
    }
    if (!first.pages.empty()) {
      std::vector<PageId> sorted = first.pages;
      std::sort(sorted.begin(), sorted.end());
      if (!memory_.RegisterCopies(home, sorted)) {
        for (std::size_t i = 0; i < first.pages.size(); ++i) {
          asked.pages.push_back(first.pages[i]);
          asked.own_writes.push_back(std::move(first.own_writes[i]));
        }
        first.pages.clear();
      }
    }
    for (Fetch* fetch : {&asked, &read, &first}) {
      if (fetch->pages.empty()) continue;
      fetch->staging = internal::StagingBuffer(fetch->pages.size() * page_bytes);
      fetches.push_back(std::move(*fetch));
    }
  }
  // Requests first, so that the homes serve them while this thread reads from other memory.
  for (Fetch& fetch : fetches) {
    if (!fetch.direct) ask(fetch);
  }
  for (Fetch& fetch : fetches) {
    if (!fetch.direct) continue;
    fetch.got = memory_.ReadHomeCopies(fetch.home, fetch.pages, fetch.staging.data());
    if (fetch.got) continue;
    fetch.direct = false;
    ask(fetch);
  }
  // Every request is awaited, even after one failed: the node refers to them until answered.
  for (Fetch& fetch : fetches) {
    if (!fetch.request) continue;
    try {
      fetch.reply = node_.Await(*fetch.request);
      if (fetch.reply->header.payload_length != fetch.staging.size()) {
        throw Error(LMDX_ERR_INTERNAL,
                    "rank " + std::to_string(fetch.home) + " answered a fetch of " +
                        std::to_string(fetch.pages.size()) + " pages with " +
                        std::to_string(fetch.reply->header.payload_length) + " bytes");
      }
      if (!fetch.reply->payload_placed) {
        std::memcpy(fetch.staging.data(), fetch.reply->payload, fetch.staging.size());
      }
      if (!fetch.fetched.ParseFromString(fetch.reply->body) ||
          (lazy && fetch.fetched.versions_size() != static_cast<int>(fetch.pages.size()))) {
        throw Error(LMDX_ERR_INTERNAL,
                    "a malformed answer to a page fetch from rank " + std::to_string(fetch.home));
      }
      fetch.got = true;
    } catch (const Error& error) {
      if (!failure) failure = error;
    }
  }
  // lrc: the diffs the home's copies lack, from their writers, and this node's own.
  std::map<PageId, std::vector<DiffToApply>> lazy_diffs;
  std::map<PageId, Version> versions;  // lrc: what each home copy held when served
  std::map<PageId, Version> covered;   // lrc: and what it holds with lazy_diffs applied
  if (lazy) {
    for (Fetch& fetch : fetches) {
      if (!fetch.got) continue;
      for (std::size_t i = 0; i < fetch.pages.size(); ++i) {
        const auto& version = fetch.fetched.versions(static_cast<int>(i));
        Version& held = versions[fetch.pages[i]];
        for (int k = 0; k < version.writers_size() && k < version.intervals_size(); ++k) {
          held[version.writers(k)] = version.intervals(k);
        }
      }
    }
    try {
      auto missing = MissingDiffs(versions, &covered);
      // A writer discarded diffs after the home answered: the pages stay without access, and
      // the next touch fetches them again from the home, which has those diffs by then.
      if (!missing) {
        for (Fetch& fetch : fetches) fetch.got = false;
      } else {
        lazy_diffs = std::move(*missing);
      }
    } catch (const Error& error) {
      if (!failure) failure = error;
      for (Fetch& fetch : fetches) fetch.got = false;
    }
  }
  // Contents first, then one protection change per run of pages, then the access: the pages
  // stay busy throughout, so no thread of this node sees a page before it is whole.
  std::vector<PageId> opened;
  std::map<PageId, std::vector<std::byte>> served_lacking;  // lrc: copies that lacked many diffs
  for (Fetch& fetch : fetches) {
    const wire::HbFetched& fetched = fetch.fetched;
    for (std::size_t i = 0; i < fetch.pages.size(); ++i) {
      PageId page = fetch.pages[i];
      std::lock_guard lock(table_.StripeMutex(page));
      if (!fetch.got) {
        EndTransition(page, Access::kNone);
        continue;
      }
      std::lock_guard state(state_mutex_);
      // The home served this request, or has this copy in its registry, so it counts this node
      // among the page's copies for good.
      if (!fetch.direct || fetch.registered) known_copies_.insert(page);
      auto found = states_.find(page);
      if (found != states_.end() && found->second.stale) continue;  // EndTransition drops it
      std::memcpy(memory_.SystemView(page), fetch.staging.data() + i * page_bytes, page_bytes);
      // This node's writes the home had not applied when it copied the page, oldest first (a
      // write it had is not applied again: another node may have overwritten it since).
      for (const auto& own : fetch.own_writes[i]) {
        if (own->batch == 0 || own->batch > fetched.applied_batch()) {
          ApplyDiff(own->bytes, memory_.SystemView(page), page_bytes);
        }
      }
      if (lazy && lazy_diffs[page].size() >= kHomeUpdateDiffs) {
        const std::byte* served = fetch.staging.data() + i * page_bytes;
        served_lacking.emplace(page, std::vector<std::byte>(served, served + page_bytes));
      }
      if (lazy) {
        for (const DiffToApply& diff : lazy_diffs[page]) {
          ApplyDiff(diff.bytes, memory_.SystemView(page), page_bytes);
          if (diff.writer != node_.rank()) Counters::Add(counters_.diffs_applied);
        }
      }
      Counters::Add(counters_.pages_fetched);
      Counters::Add(counters_.bytes_fetched, page_bytes);
      if (fetch.direct) {
        Counters::Add(counters_.pages_read_directly);
        Counters::Add(counters_.bytes_read_directly, page_bytes);
      }
      opened.push_back(page);
    }
  }
  std::sort(opened.begin(), opened.end());
  ProtectPages(opened, Access::kRead);
  for (PageId page : opened) {
    std::lock_guard lock(table_.StripeMutex(page));
    EndTransition(page, Access::kRead);
  }
  for (Fetch& fetch : fetches) {
    if (!fetch.got) continue;
    for (PageId page : fetch.pages) {
      if (std::binary_search(opened.begin(), opened.end(), page)) continue;
      std::lock_guard lock(table_.StripeMutex(page));
      if (table_.busy(page)) EndTransition(page, Access::kNone);
    }
  }
  if (!served_lacking.empty()) UpdateHomes(served_lacking, versions, lazy_diffs, covered);
  if (failure) throw *failure;
}

// ---- Explicit access -----------------------------------------------------------------------

void HomeBasedProtocol::WithPage(PageId page, Access access,
                                 const std::function<void(std::byte*)>& use) {
  net::NoParkingScope holding_a_page;
  for (;;) {
    Obtain(page, access);
    std::lock_guard lock(table_.StripeMutex(page));
    // A release or an invalidation may have taken the access since: then ask again.
    if (!table_.busy(page) && table_.access(page) >= access) {
      use(memory_.SystemView(page));
      return;
    }
  }
}

void HomeBasedProtocol::OpenFreshPages(PageId first, std::uint64_t count) {
  std::lock_guard opening(opening_mutex_);
  std::vector<PageId> opened;
  for (PageId page = first; page < first + count; ++page) {
    std::lock_guard lock(table_.StripeMutex(page));
    if (table_.busy(page) || table_.access(page) != Access::kNone || directory_.Shared(page)) {
      continue;
    }
    // Marked first, so that a fault of this node waits for the protection change below.
    table_.set_busy(page, true);
    opened.push_back(page);
  }
  ProtectPages(opened, Access::kWrite);
  if (open_pause_.count() > 0 && !opened.empty()) std::this_thread::sleep_for(open_pause_);
  for (PageId page : opened) {
    std::lock_guard lock(table_.StripeMutex(page));
    // A copy fetched in between made the page shared: the home's writes must fault again.
    if (directory_.Shared(page)) {
      memory_.Protect(page, 1, Access::kRead);
      EndTransition(page, Access::kRead);
    } else {
      EndTransition(page, Access::kWrite);
    }
  }
}

}  // namespace lmdx::consistency

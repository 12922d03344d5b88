#include "consistency/sc_protocol.h"

#include <cstring>
#include <string>

#include "base/error.h"
#include "consistency/sc.pb.h"

namespace lmdx::consistency {
namespace {

using internal::GrantData;
using internal::ScGrantDecision;

constexpr net::MessageType TypeOf(int offset) noexcept {
  return static_cast<net::MessageType>(static_cast<int>(net::MessageType::kFirstDsm) + offset);
}
constexpr net::MessageType kScAcquire = TypeOf(0);
constexpr net::MessageType kScFetch = TypeOf(1);
constexpr net::MessageType kScInvalidate = TypeOf(2);
constexpr net::MessageType kScDone = TypeOf(3);

wire::ScGrant::Data ToWire(GrantData data) {
  switch (data) {
    case GrantData::kHaveCopy: return wire::ScGrant::HAVE_COPY;
    case GrantData::kIncluded: return wire::ScGrant::INCLUDED;
    case GrantData::kZero: return wire::ScGrant::ZERO;
    case GrantData::kFetch: return wire::ScGrant::FETCH;
  }
  return wire::ScGrant::HAVE_COPY;
}

GrantData FromWire(wire::ScGrant::Data data) {
  switch (data) {
    case wire::ScGrant::INCLUDED: return GrantData::kIncluded;
    case wire::ScGrant::ZERO: return GrantData::kZero;
    case wire::ScGrant::FETCH: return GrantData::kFetch;
    default: return GrantData::kHaveCopy;
  }
}

Access AccessFromWire(std::uint32_t value) {
  return value >= 2 ? Access::kWrite : value == 1 ? Access::kRead : Access::kNone;
}

template <typename Message>
Message Parse(const net::InboundMessage& message, const char* what) {
  Message parsed;
  if (!parsed.ParseFromString(message.body)) {
    throw Error(LMDX_ERR_INTERNAL, std::string("a malformed ") + what + " from rank " +
                                       std::to_string(message.header.source));
  }
  return parsed;
}

// Page contents sent from the system view need no copy: they cannot change before the
// transaction that asked for them ends, and it ends only after they have arrived.
const std::shared_ptr<const void>& StableMemory() {
  static const std::shared_ptr<const void> marker = std::make_shared<int>(0);
  return marker;
}

}  // namespace

ScProtocol::ScProtocol(net::Node& node, PageMemory& memory, PageTable& table, Counters& counters)
    : node_(node),
      memory_(memory),
      counters_(counters),
      table_(table),
      directory_(node.rank(), node.size()) {}

// ---- The faulting node ---------------------------------------------------------------------

void ScProtocol::Obtain(PageId page, Access wanted) {
  std::mutex& mutex = table_.StripeMutex(page);
  std::condition_variable& changed = table_.StripeChanged(page);
  {
    std::unique_lock lock(mutex);
    for (;;) {
      if (table_.access(page) >= wanted) return;
      if (!table_.busy(page)) break;
      changed.wait(lock);  // another thread of this node is bringing this page
    }
    table_.set_busy(page, true);
  }
  try {
    Transact(page, wanted);
  } catch (...) {
    {
      std::lock_guard lock(mutex);
      table_.set_busy(page, false);
    }
    changed.notify_all();
    throw;
  }
}

void ScProtocol::Transact(PageId page, Access wanted) {
  Placement placement = memory_.PlacementOf(page);
  if (placement.home < 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "the address is not in shared memory");
  }
  Access before = table_.access(page);
  bool at_home = placement.home == node_.rank();
  // A failed request locked nothing (or its home is lost); from its answer on, the home's entry
  // is locked for this transaction.
  std::optional<net::InboundMessage> reply;
  ScGrantDecision grant;
  if (at_home) {
    grant = AcquireAtHome(page, wanted, placement.first_touch);
  } else {
    reply = RequestGrant(placement.home, page, wanted, placement.first_touch);
  }
  try {
    if (!at_home) grant = GrantOf(*reply, placement.home, page, wanted);
    Complete(page, before, grant);
  } catch (...) {
    // The home's entry is locked for this transaction: free it, or the page's next requester,
    // on any node, would wait for ever.
    if (at_home) {
      for (auto& [resume, next] : directory_.Abort(page)) resume(next);
    } else {
      wire::ScPage failed;
      failed.set_page(page);
      failed.set_failed(true);
      try {
        node_.Send(placement.home, kScDone, failed.SerializeAsString());
      } catch (const Error&) {
        // The home itself is lost: nobody waits on its directory.
      }
    }
    throw;
  }
  if (at_home) {
    ReleaseAtHome(page);
  } else {
    wire::ScPage done;
    done.set_page(page);
    node_.Send(placement.home, kScDone, done.SerializeAsString());
  }
}

void ScProtocol::Complete(PageId page, Access before, const ScGrantDecision& grant) {
  switch (grant.data) {
    case GrantData::kHaveCopy:
      if (before == Access::kRead && grant.access == Access::kWrite)
        Counters::Add(counters_.upgrades);
      break;
    case GrantData::kZero: Counters::Add(counters_.zero_pages); break;
    case GrantData::kIncluded: break;  // counted by AcquireRemote
    case GrantData::kFetch: FetchFrom(grant.source, page, grant.fetch_invalidates); break;
  }
  InvalidateCopies(page, grant.invalidate);
  Install(page, grant.access);
}

ScGrantDecision ScProtocol::AcquireAtHome(PageId page, Access wanted, bool first_touch) {
  net::Completion granted;
  ScGrantDecision decision;
  auto now = directory_.Acquire(page, {node_.rank(), wanted, first_touch},
                                [&granted, &decision](const ScGrantDecision& queued) {
                                  decision = queued;
                                  granted.Signal();
                                });
  if (now) {
    decision = *now;
  } else {
    granted.Wait();
  }
  if (!decision.lost.empty()) {
    throw Error(LMDX_ERR_PEER_LOST, "page " + std::to_string(page) + " is gone: " + decision.lost);
  }
  return decision;
}

net::InboundMessage ScProtocol::RequestGrant(int home, PageId page, Access wanted,
                                             bool first_touch) {
  wire::ScAcquire request;
  request.set_page(page);
  request.set_wanted(static_cast<std::uint32_t>(wanted));
  request.set_first_touch(first_touch);
  auto* landing = reinterpret_cast<std::uint8_t*>(memory_.SystemView(page));
  return node_.Request(home, kScAcquire, request.SerializeAsString(), {}, landing,
                       memory_.page_bytes());
}

ScGrantDecision ScProtocol::GrantOf(const net::InboundMessage& reply, int home, PageId page,
                                    Access wanted) {
  auto answer = Parse<wire::ScGrant>(reply, "page grant");
  ScGrantDecision grant;
  grant.access = AccessFromWire(answer.access());
  grant.data = FromWire(answer.data());
  grant.source = answer.source();
  grant.fetch_invalidates = wanted == Access::kWrite;
  grant.invalidate.assign(answer.invalidate().begin(), answer.invalidate().end());
  if (grant.data == GrantData::kFetch && (grant.source < 0 || grant.source >= node_.size())) {
    throw Error(LMDX_ERR_INTERNAL, "a page grant from rank " + std::to_string(home) +
                                       " names rank " + std::to_string(grant.source) +
                                       " as the page's source");
  }
  if (grant.data == GrantData::kIncluded) {
    if (reply.header.payload_length != memory_.page_bytes()) {
      throw Error(LMDX_ERR_INTERNAL, "a page grant from rank " + std::to_string(home) +
                                         " carried " + std::to_string(reply.header.payload_length) +
                                         " bytes instead of a page");
    }
    if (!reply.payload_placed) {
      std::memcpy(memory_.SystemView(page), reply.payload, memory_.page_bytes());
    }
    Counters::Add(counters_.pages_fetched);
    Counters::Add(counters_.bytes_fetched, memory_.page_bytes());
  }
  return grant;
}

void ScProtocol::FetchFrom(int source, PageId page, bool invalidate) {
  wire::ScPage request;
  request.set_page(page);
  request.set_invalidate(invalidate);
  auto* landing = reinterpret_cast<std::uint8_t*>(memory_.SystemView(page));
  net::InboundMessage reply = node_.Request(source, kScFetch, request.SerializeAsString(), {},
                                            landing, memory_.page_bytes());
  if (reply.header.payload_length != memory_.page_bytes()) {
    throw Error(LMDX_ERR_INTERNAL, "rank " + std::to_string(source) +
                                       " answered a page fetch with " +
                                       std::to_string(reply.header.payload_length) + " bytes");
  }
  if (!reply.payload_placed) std::memcpy(landing, reply.payload, memory_.page_bytes());
  Counters::Add(counters_.pages_fetched);
  Counters::Add(counters_.bytes_fetched, memory_.page_bytes());
}

void ScProtocol::InvalidateCopies(PageId page, const std::vector<int>& nodes) {
  if (nodes.empty()) return;
  wire::ScPage request;
  request.set_page(page);
  std::string body = request.SerializeAsString();
  std::vector<std::unique_ptr<net::Node::PendingRequest>> pending;
  pending.reserve(nodes.size());
  for (int node : nodes) pending.push_back(node_.StartRequest(node, kScInvalidate, body));
  // Every request is awaited, even after one failed: the node refers to them until answered.
  std::optional<Error> failure;
  for (auto& request_under_way : pending) {
    try {
      node_.Await(*request_under_way);
    } catch (const Error& error) {
      if (!failure) failure = error;
    }
  }
  if (failure) throw *failure;
  Counters::Add(counters_.invalidations_sent, nodes.size());
}

void ScProtocol::Install(PageId page, Access access) {
  {
    std::lock_guard lock(table_.StripeMutex(page));
    memory_.Protect(page, 1, access);
    table_.set_access(page, access);
    table_.set_busy(page, false);
  }
  table_.StripeChanged(page).notify_all();
}

void ScProtocol::ReleaseAtHome(PageId page) {
  for (auto& [resume, next] : directory_.Release(page)) resume(next);
}

// ---- Explicit access -----------------------------------------------------------------------

void ScProtocol::WithPage(PageId page, Access access, const std::function<void(std::byte*)>& use) {
  for (;;) {
    Obtain(page, access);
    std::lock_guard lock(table_.StripeMutex(page));
    // Another node may have taken the access back between Obtain and here: then ask again.
    if (table_.access(page) >= access) {
      use(memory_.SystemView(page));
      return;
    }
  }
}

void ScProtocol::OpenFreshPages(PageId first, std::uint64_t count) {
  PageId run_start = first;
  std::uint64_t run_length = 0;
  auto open_run = [this, &run_start, &run_length] {
    if (run_length == 0) return;
    memory_.Protect(run_start, run_length, Access::kWrite);
    for (PageId page = run_start; page < run_start + run_length; ++page) {
      {
        std::lock_guard lock(table_.StripeMutex(page));
        table_.set_access(page, Access::kWrite);
      }
      ReleaseAtHome(page);
    }
    run_length = 0;
  };
  for (PageId page = first; page < first + count; ++page) {
    if (directory_.ClaimFresh(page)) {
      if (run_length == 0) run_start = page;
      ++run_length;
    } else {
      open_run();
    }
  }
  open_run();
}

// ---- Serving other nodes -------------------------------------------------------------------

void ScProtocol::LowerAccess(PageId page, Access limit) {
  std::lock_guard lock(table_.StripeMutex(page));
  Access now = table_.access(page);
  if (now <= limit) return;
  memory_.Protect(page, 1, limit);
  table_.set_access(page, limit);
  Counters::Add(limit == Access::kNone ? counters_.invalidations_received : counters_.downgrades);
}

net::Payload ScProtocol::PagePayload(PageId page) {
  return net::Payload{memory_.SystemView(page), memory_.page_bytes(), StableMemory()};
}

void ScProtocol::Answer(const net::ReplyTo& to, PageId page, const ScGrantDecision& grant) {
  if (!grant.lost.empty()) {
    node_.ReplyError(to, LMDX_ERR_PEER_LOST,
                     "page " + std::to_string(page) + " is gone: " + grant.lost);
    return;
  }
  if (grant.home_change) LowerAccess(page, *grant.home_change);
  wire::ScGrant answer;
  answer.set_access(static_cast<std::uint32_t>(grant.access));
  answer.set_data(ToWire(grant.data));
  answer.set_source(grant.source);
  for (int node : grant.invalidate) answer.add_invalidate(node);
  net::Payload payload;
  if (grant.data == GrantData::kIncluded) payload = PagePayload(page);
  node_.Reply(to, answer.SerializeAsString(), std::move(payload));
}

void ScProtocol::RegisterHandlers(net::Node& node) {
  net::SetMessageTypeName(kScAcquire, "sc-acquire");
  net::SetMessageTypeName(kScFetch, "sc-fetch");
  net::SetMessageTypeName(kScInvalidate, "sc-invalidate");
  net::SetMessageTypeName(kScDone, "sc-done");
  // A node lost between a grant and its done would leave the page locked for ever, and one left
  // in a copyset would fail every later write of the page (it cannot be invalidated).
  node.AddPeerLostObserver([this](int rank, const std::string&) {
    for (auto& [resume, next] : directory_.ForgetNode(rank)) resume(next);
  });
  node.Handle(kScAcquire, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    auto request = Parse<wire::ScAcquire>(message, "page request");
    PageId page = request.page();
    Counters::Add(counters_.directory_requests);
    net::ReplyTo reply_to = *to;
    auto now = directory_.Acquire(
        page, {message.header.source, AccessFromWire(request.wanted()), request.first_touch()},
        [this, reply_to, page](const ScGrantDecision& queued) { Answer(reply_to, page, queued); });
    if (now) Answer(reply_to, page, *now);
  });
  node.Handle(kScDone, [this](net::InboundMessage& message, const net::ReplyTo*) {
    auto done = Parse<wire::ScPage>(message, "page release");
    if (done.failed()) {
      for (auto& [resume, next] : directory_.Abort(done.page())) resume(next);
    } else {
      ReleaseAtHome(done.page());
    }
  });
  node.Handle(kScFetch, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    auto request = Parse<wire::ScPage>(message, "page fetch");
    PageId page = request.page();
    LowerAccess(page, request.invalidate() ? Access::kNone : Access::kRead);
    node_.Reply(*to, {}, PagePayload(page));
  });
  node.Handle(kScInvalidate, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    LowerAccess(Parse<wire::ScPage>(message, "page invalidation").page(), Access::kNone);
    node_.Reply(*to, {});
  });
}

}  // namespace lmdx::consistency

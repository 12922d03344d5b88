#include "dsm/service.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "base/clock.h"
#include "base/crash_note.h"
#include "base/error.h"
#include "base/forked_child.h"
#include "base/hex.h"
#include "base/log.h"
#include "dsm/internal/message_types.h"
#include "dsm/stats_figures.h"
#include "dsm/stats_report.h"

namespace lmdx::dsm {
namespace {

using consistency::Access;

using internal::kDsmFree;
using internal::kDsmRegionOf;
using internal::kDsmStats;
using internal::kDsmVariable;

// Block-homed regions are opened at their homes when learnt, up to this many pages per node;
// beyond it the home takes a local fault (no message) on each page's first touch instead.
constexpr std::uint64_t kMaxPagesOpenedAtOnce = 262144;

// Large variables start after a gap of 1 to 7 times 64 KiB of unused (never backed) range, a
// different one each time. Arrays swept together (Jacobi's two grids) that lie a power of two apart
// ran 25% slower on this machine's processor than the same arrays 64 KiB or more further apart:
// a sweep of two 32 MiB grids took 4.4 ms placed back to back and 3.6 ms with the gap, as fast as
// over memory malloc gave (docs/dsm.md).
constexpr std::uint64_t kLargeRegionPages = 256;  // 1 MiB of 4 KiB pages
constexpr std::uint64_t kColourPages = 16;        // 64 KiB
constexpr std::uint64_t kColours = 7;

wire::Region ToWire(const Region& region) {
  wire::Region out;
  out.set_name(region.name);
  out.set_first_page(region.first_page);
  out.set_page_count(region.page_count);
  out.set_bytes(region.bytes);
  out.set_home(static_cast<std::uint32_t>(region.home));
  out.set_protocol(region.protocol);
  out.set_unit_pages(region.unit_pages);
  return out;
}

Region FromWire(const wire::Region& in) {
  Region region;
  region.name = in.name();
  region.first_page = in.first_page();
  region.page_count = in.page_count();
  region.bytes = in.bytes();
  region.home = static_cast<HomePolicy>(std::min<std::uint32_t>(in.home(), 2));
  region.protocol = in.protocol();
  region.unit_pages = std::max<std::uint32_t>(in.unit_pages(), 1);
  return region;
}

template <typename Message>
Message Parse(const std::string& body, const char* what) {
  Message parsed;
  if (!parsed.ParseFromString(body)) {
    throw Error(LMDX_ERR_INTERNAL, std::string("a malformed ") + what);
  }
  return parsed;
}

std::mutex current_mutex;
std::shared_ptr<Service> current_service;

// A child of fork() has no mapping of the range (global_space.cc), so its first touch of shared
// memory faults here. Serving the fault would run the protocol on the parent's connections, so
// the child ends instead, saying why. Nothing is flushed: it ends as a crash would.
[[noreturn]] void EndForkedChild(const void* address) {
  LogLine("a child of fork() (pid " + std::to_string(::getpid()) +
          ") touched LMDX shared memory at " + AddressText(address) +
          "; shared memory belongs to the node's own process only: exec a new program in the "
          "child, or copy what it needs to private memory before fork (lmdx_get) and send its "
          "results back through a pipe");
  ::_exit(1);
}

// In a child of fork(): the DSM is never destroyed there. Its destruction at the child's exit
// would tear down a heap and protocols whose other half (the parent's threads, the peers'
// directories) the child does not have.
void AbandonInForkedChild() {
  // No lock: the child has one thread, and a lock another thread held at fork stays held.
  static_cast<void>(new std::shared_ptr<Service>(std::move(current_service)));
}

}  // namespace

Service::Service(net::Node& node, Options options)
    : node_(node),
      options_(std::move(options)),
      space_(options_.base, options_.bytes, node.size(), options_.access),
      home_access_(node, space_, options_.one_sided),
      table_(space_.page_count()) {
  consistency::ProtocolSet::Settings settings;
  settings.home_based.refetch_at_acquire = options_.refetch_at_acquire;
  settings.home_based.fetch_ahead = options_.fetch_ahead;
  settings.home_based.lrc_diff_limit = options_.lrc_diff_limit;
  protocols_ = std::make_shared<consistency::ProtocolSet>(node_, *this, table_, settings);
  heap_protocol_ = &Named(options_.heap_protocol, "the shared heap");
  // Metadata stays private, so the heap carves nothing before the program allocates; every piece
  // it carves later is fresh and homed here, so this node opens it for writing at once.
  heap_ = std::make_unique<SharedHeap>(space_.AppView(space_.HeapSliceFirst(node_.rank())),
                                       space_.heap_slice_pages() * space_.page_bytes(),
                                       [this](std::byte* start, std::size_t length) {
                                         heap_protocol_->OpenFreshPages(
                                             space_.PageOf(start), length / space_.page_bytes());
                                       });
  fatal_ = [](const std::string& message) {
    LogLine(message);
    std::fflush(nullptr);
    ::_exit(1);
  };
  SetCrashNoteNode(node_.rank(), space_.base(), space_.base() + space_.bytes());
  fault_handler_ = std::make_unique<FaultHandler>(
      [this](void* address, FaultType type) { return HandleFault(address, type); },
      space_.faults_report_access_type(), space_.base(), space_.base() + space_.bytes());
}

Service::~Service() = default;

consistency::Protocol& Service::Named(const std::string& protocol, const std::string& what,
                                      const std::string& chosen_by) const {
  if (consistency::Protocol* found = protocols_->Find(protocol)) return *found;
  std::string known;
  for (std::string_view name : consistency::ProtocolSet::Names()) {
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  throw Error(LMDX_ERR_CONFIG, what + " asks for protocol \"" + protocol + "\"" +
                                   (chosen_by.empty() ? "" : " (" + chosen_by + ")") +
                                   ", which this LMDX does not have yet (it has: " + known + ")");
}

void Service::RegisterHandlers() {
  protocols_->RegisterHandlers(node_);
  home_access_.RegisterHandlers();
  net::SetMessageTypeName(kDsmVariable, "dsm-variable");
  net::SetMessageTypeName(kDsmRegionOf, "dsm-region-of");
  net::SetMessageTypeName(kDsmFree, "dsm-free");
  net::SetMessageTypeName(kDsmStats, "dsm-stats");
  node_.Handle(kDsmVariable, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    auto request = Parse<wire::VariableRequest>(message.body, "variable request");
    wire::VariableReply reply;
    try {
      bool found = false;
      Region region = FindOrCreate(request, &found);
      reply.set_found(found);
      if (found) *reply.mutable_region() = ToWire(region);
    } catch (const Error& error) {
      node_.ReplyError(*to, error.code(), error.what());
      return;
    }
    node_.Reply(*to, reply.SerializeAsString());
  });
  node_.Handle(kDsmRegionOf, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    auto request = Parse<wire::RegionOfRequest>(message.body, "region request");
    node_.Reply(*to, LocalRegionReply(request.page()).SerializeAsString());
  });
  node_.Handle(kDsmFree, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    auto request = Parse<wire::FreeRequest>(message.body, "free request");
    try {
      FreeHere(reinterpret_cast<void*>(request.address()));
    } catch (const Error& error) {
      node_.ReplyError(*to, error.code(), error.what());
      return;
    }
    node_.Reply(*to, {});
  });
  node_.Handle(kDsmStats, [this](net::InboundMessage&, const net::ReplyTo* to) {
    if (to != nullptr) node_.Reply(*to, LocalStats().SerializeAsString());
  });
}

// ---- Regions -------------------------------------------------------------------------------

Region Service::PlaceRegion(const std::string& name, std::uint64_t bytes, const Creator& creator) {
  RegionPolicy policy = options_.policy_for ? options_.policy_for(name, creator) : RegionPolicy{};
  Named(policy.protocol, "\"" + name + "\"", policy.chosen_by);
  std::uint64_t pages = (bytes + space_.page_bytes() - 1) / space_.page_bytes();
  std::uint64_t gap = 0;
  if (pages >= kLargeRegionPages) {
    gap = kColourPages * (1 + large_regions_placed_ % kColours);
    gap = std::min(gap, space_.variable_pages() - next_variable_page_);
  }
  if (pages > space_.variable_pages() - next_variable_page_ - gap) {
    throw Error(LMDX_ERR_NO_MEMORY,
                "no room for \"" + name + "\" (" + std::to_string(bytes) +
                    " bytes): the variable area holds " +
                    std::to_string(space_.variable_pages() * space_.page_bytes() >> 20) +
                    " MiB and " + std::to_string(next_variable_page_ * space_.page_bytes() >> 20) +
                    " MiB are taken; raise LMDX_DSM_SIZE");
  }
  if (gap > 0) ++large_regions_placed_;
  // The guard page: no variable's, so an access there is a wild access, named with the variable
  // it ran past (WildAccessText).
  if (options_.guard_pages && gap == 0 && next_variable_page_ < space_.variable_pages()) gap = 1;
  if (pages > space_.variable_pages() - next_variable_page_ - gap) {
    throw Error(LMDX_ERR_NO_MEMORY, "no room for \"" + name + "\" and its guard page");
  }
  next_variable_page_ += gap;
  Region region{name,
                next_variable_page_,
                pages,
                bytes,
                policy.home,
                policy.protocol,
                std::max<std::uint32_t>(policy.unit_pages, 1)};
  next_variable_page_ += pages;
  Learn(region);
  return region;
}

Region Service::FindOrCreate(const wire::VariableRequest& request, bool* found) {
  std::lock_guard lock(placement_mutex_);
  if (auto existing = regions_.Named(request.name())) {
    if (request.create() && existing->bytes != request.bytes()) {
      if (request.call() == "lmdx_alloc_collective") {
        throw Error(LMDX_ERR_MISUSE,
                    request.name() + " asked for " + std::to_string(request.bytes()) +
                        " bytes on one rank and " + std::to_string(existing->bytes) +
                        " on another; every rank must ask "
                        "for the same size in the same order");
      }
      throw Error(LMDX_ERR_MISUSE, "shared variable \"" + request.name() + "\" exists with " +
                                       std::to_string(existing->bytes) +
                                       " bytes; this call asked for " +
                                       std::to_string(request.bytes()) + " bytes");
    }
    *found = true;
    return *existing;
  }
  if (!request.create()) {
    *found = false;
    return {};
  }
  *found = true;
  return PlaceRegion(request.name(), request.bytes(),
                     Creator{request.creator_protocol(), request.creator_module()});
}

void Service::Learn(const Region& region) {
  if (!regions_.Add(region) || region.home != HomePolicy::kBlock) return;
  auto [first, count] = region.BlockOf(node_.rank(), node_.size());
  if (count > 0 && count <= kMaxPagesOpenedAtOnce) {
    Named(region.protocol, "\"" + region.name + "\"").OpenFreshPages(first, count);
  }
}

wire::VariableReply Service::LocalRegionReply(PageId page) const {
  wire::VariableReply reply;
  if (auto region = regions_.Containing(page)) {
    reply.set_found(true);
    *reply.mutable_region() = ToWire(*region);
  } else if (auto nearest = regions_.NearestAtOrBelow(page)) {
    *reply.mutable_nearest_below() = ToWire(*nearest);
  }
  return reply;
}

wire::VariableReply Service::RankZeroRegionReply(PageId page) {
  if (node_.rank() == 0) return LocalRegionReply(page);
  wire::RegionOfRequest request;
  request.set_page(page);
  return Parse<wire::VariableReply>(
      node_.Request(0, kDsmRegionOf, request.SerializeAsString()).body, "region reply");
}

std::optional<Region> Service::RegionOf(PageId page) {
  if (auto known = regions_.Containing(page)) return known;
  if (node_.rank() == 0) return std::nullopt;
  wire::VariableReply reply = RankZeroRegionReply(page);
  if (!reply.found()) return std::nullopt;
  Region region = FromWire(reply.region());
  Learn(region);
  return region;
}

consistency::Protocol& Service::ProtocolOf(PageId page) {
  if (page < space_.page_count() && space_.HeapOwnerOf(page) >= 0) return *heap_protocol_;
  if (page < space_.variable_pages()) {
    if (auto region = RegionOf(page)) return Named(region->protocol, "\"" + region->name + "\"");
  }
  throw Error(LMDX_ERR_INVALID_ARGUMENT, "the address is not in shared memory");
}

consistency::Counters& Service::CountersOf(const void* address) {
  return protocols_->CountersOf(ProtocolOf(space_.PageOf(address)));
}

consistency::Counters& Service::KnownCountersOf(PageId page) {
  if (page < space_.page_count() && space_.HeapOwnerOf(page) >= 0) {
    return protocols_->CountersOf(*heap_protocol_);
  }
  if (auto region = regions_.Containing(page)) {
    if (consistency::Protocol* protocol = protocols_->Find(region->protocol)) {
      return protocols_->CountersOf(*protocol);
    }
  }
  return counters_;
}

const char* Service::ProtocolName(const void* address) {
  if (!space_.Contains(address)) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "the address is not in shared memory");
  }
  return ProtocolOf(space_.PageOf(address)).name();
}

consistency::Placement Service::PlacementOf(PageId page) {
  if (page >= space_.page_count()) return {};
  if (int owner = space_.HeapOwnerOf(page); owner >= 0) {
    consistency::Placement heap;
    heap.home = owner;
    heap.unit_first = page;
    heap.region_first = page;  // no fetch ahead among heap blocks, which belong to anyone
    heap.region_pages = 1;
    return heap;
  }
  if (page >= space_.variable_pages()) return {};
  if (auto region = RegionOf(page)) return region->PlacementOf(page, node_.size());
  return {};
}

wire::VariableRequest Service::CreationRequest(const std::string& name, std::uint64_t bytes,
                                               const char* call) const {
  wire::VariableRequest request;
  request.set_name(name);
  request.set_bytes(bytes);
  request.set_create(true);
  request.set_call(call);
  request.set_creator_protocol(options_.creator.protocol);
  request.set_creator_module(options_.creator.module);
  return request;
}

std::optional<Region> Service::AskPlacer(const wire::VariableRequest& request) {
  if (node_.rank() == 0) {
    bool found = false;
    Region region = FindOrCreate(request, &found);
    return found ? std::optional<Region>(region) : std::nullopt;
  }
  auto reply = Parse<wire::VariableReply>(
      node_.Request(0, kDsmVariable, request.SerializeAsString()).body, "variable reply");
  if (!reply.found()) return std::nullopt;
  Region region = FromWire(reply.region());
  Learn(region);
  return region;
}

void* Service::SharedVariable(const std::string& name, std::size_t bytes) {
  if (name.empty()) throw Error(LMDX_ERR_INVALID_ARGUMENT, "a shared variable needs a name");
  if (bytes == 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "shared variable \"" + name + "\" of 0 bytes");
  }
  std::optional<Region> region = regions_.Named(name);
  if (!region || region->bytes != bytes) {
    region = AskPlacer(CreationRequest(name, bytes, "lmdx_shared_var"));
  }
  return space_.AppView(region->first_page);
}

void* Service::Lookup(const std::string& name, std::size_t* bytes) {
  std::optional<Region> region = regions_.Named(name);
  if (!region) {
    wire::VariableRequest request;
    request.set_name(name);
    request.set_call("lmdx_lookup");
    region = AskPlacer(request);
  }
  if (!region) return nullptr;
  if (bytes != nullptr) *bytes = region->bytes;
  return space_.AppView(region->first_page);
}

void* Service::AllocCollective(std::size_t bytes) {
  std::uint64_t call = collective_calls_.fetch_add(1, std::memory_order_relaxed);
  if (bytes == 0) throw Error(LMDX_ERR_INVALID_ARGUMENT, "a collective allocation of 0 bytes");
  std::optional<Region> region = AskPlacer(
      CreationRequest("lmdx.collective." + std::to_string(call), bytes, "lmdx_alloc_collective"));
  return space_.AppView(region->first_page);
}

// ---- Heap ----------------------------------------------------------------------------------

void* Service::Malloc(std::size_t bytes) {
  void* block = heap_->Allocate(bytes);
  if (block == nullptr) {
    throw Error(LMDX_ERR_NO_MEMORY,
                "cannot allocate " + std::to_string(bytes) + " bytes: the shared heap of rank " +
                    std::to_string(node_.rank()) + " (" + std::to_string(heap_->size() >> 20) +
                    " MiB) is full; raise LMDX_DSM_SIZE");
  }
  return block;
}

void Service::Free(void* block) {
  if (block == nullptr) return;
  if (!space_.Contains(block)) {
    throw Error(LMDX_ERR_MISUSE, AddressText(block) +
                                     " is not shared memory (was it allocated with "
                                     "malloc rather than lmdx_malloc?)");
  }
  int owner = space_.HeapOwnerOf(space_.PageOf(block));
  if (owner < 0) {
    throw Error(LMDX_ERR_MISUSE, AddressText(block) +
                                     " is a shared variable or collective allocation, "
                                     "not a block of lmdx_malloc");
  }
  if (owner == node_.rank()) {
    FreeHere(block);
    return;
  }
  wire::FreeRequest request;
  request.set_address(reinterpret_cast<std::uintptr_t>(block));
  node_.Request(owner, kDsmFree, request.SerializeAsString());
}

void Service::FreeHere(void* block) { heap_->Free(block); }

// ---- Explicit access -----------------------------------------------------------------------

void Service::CheckRange(const void* address, std::size_t bytes, const char* call) {
  const auto* first = static_cast<const std::byte*>(address);
  if (address == nullptr || !space_.Contains(first) || !space_.Contains(first + bytes - 1)) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                std::string(call) + ": " + AddressText(address) + " (+" + std::to_string(bytes) +
                    " bytes) is not inside shared memory " +
                    AddressText(reinterpret_cast<void*>(space_.base())) + "-" +
                    AddressText(reinterpret_cast<void*>(space_.base() + space_.bytes())));
  }
}

void Service::Get(void* destination, const void* shared_source, std::size_t bytes) {
  if (bytes == 0) return;
  // Waits block the OS thread, as a fault's do: a user-level thread parked here while it held
  // a page's transaction would leave a sibling that faults on the page blocking their worker,
  // and so itself, forever.
  net::NoParkingScope as_a_fault;
  if (destination == nullptr) throw Error(LMDX_ERR_INVALID_ARGUMENT, "lmdx_get: null destination");
  CheckRange(shared_source, bytes, "lmdx_get");
  consistency::Counters::Add(CountersOf(shared_source).explicit_gets);
  const std::size_t page_size = space_.page_bytes();
  // A destination in shared memory could fault while the page is held: copy through a bounce.
  bool bounce = space_.Contains(destination) ||
                space_.Contains(static_cast<std::byte*>(destination) + bytes - 1);
  std::vector<std::byte> staging(bounce ? page_size : 0);
  auto source = reinterpret_cast<std::uintptr_t>(shared_source);
  auto* out = static_cast<std::byte*>(destination);
  while (bytes > 0) {
    PageId page = space_.PageOf(reinterpret_cast<void*>(source));
    std::size_t offset = (source - space_.base()) % page_size;
    std::size_t length = std::min(bytes, page_size - offset);
    std::byte* target = bounce ? staging.data() : out;
    ProtocolOf(page).WithPage(page, Access::kRead, [&](std::byte* contents) {
      std::memcpy(target, contents + offset, length);
    });
    if (bounce) std::memcpy(out, staging.data(), length);
    out += length;
    source += length;
    bytes -= length;
  }
}

void Service::Put(void* shared_destination, const void* source, std::size_t bytes) {
  if (bytes == 0) return;
  net::NoParkingScope as_a_fault;  // see Get
  if (source == nullptr) throw Error(LMDX_ERR_INVALID_ARGUMENT, "lmdx_put: null source");
  CheckRange(shared_destination, bytes, "lmdx_put");
  consistency::Counters::Add(CountersOf(shared_destination).explicit_puts);
  const std::size_t page_size = space_.page_bytes();
  bool bounce =
      space_.Contains(source) || space_.Contains(static_cast<const std::byte*>(source) + bytes - 1);
  std::vector<std::byte> staging(bounce ? page_size : 0);
  auto destination = reinterpret_cast<std::uintptr_t>(shared_destination);
  const auto* in = static_cast<const std::byte*>(source);
  while (bytes > 0) {
    PageId page = space_.PageOf(reinterpret_cast<void*>(destination));
    std::size_t offset = (destination - space_.base()) % page_size;
    std::size_t length = std::min(bytes, page_size - offset);
    const std::byte* from = in;
    if (bounce) {
      std::memcpy(staging.data(), in, length);
      from = staging.data();
    }
    ProtocolOf(page).WithPage(page, Access::kWrite, [&](std::byte* contents) {
      std::memcpy(contents + offset, from, length);
    });
    in += length;
    destination += length;
    bytes -= length;
  }
}

// ---- Faults --------------------------------------------------------------------------------

bool Service::HandleFault(void* address, FaultType type) {
  if (!space_.Contains(address)) return false;
  if (InForkedChild()) [[unlikely]]
    EndForkedChild(address);
  PageId page = space_.PageOf(address);
  // Under mprotect a page may have been closed to keep the view's mappings within the kernel's
  // limit although the protocol lets this node use it: it is opened again, with no protocol work
  // (a local fault). Asked first: a closed readable page would otherwise pass for a write fault
  // below, since libsigsegv does not say which it was, and take a needless upgrade.
  try {
    if (space_.OpenIfNarrowed(page)) {
      consistency::Counters::Add(KnownCountersOf(page).local_faults);
      return true;
    }
  } catch (const std::exception& error) {
    fatal_("a shared page at " + AddressText(space_.AppView(page)) +
           " could not be opened again: " + error.what());
  }
  Access now = table_.access(page);
  Access wanted = type == FaultType::kWrite  ? Access::kWrite
                  : type == FaultType::kRead ? Access::kRead
                  // Without the access type, a page with no access is brought for reading first
                  // (a write then faults once more), a readable page for writing.
                  : now == Access::kNone ? Access::kRead
                                         : Access::kWrite;
  if (now >= wanted) {
    if (!space_.faults_report_access_type()) return true;  // opened meanwhile: retry
    RestoreEntry(page, wanted);
    return true;
  }
  // Before anything that may wait (the region look-up asks rank 0): see net/completion.h, no
  // fiber switch inside the signal handler.
  net::NoParkingScope in_signal_handler;
  try {
    if (PlacementOf(page).home < 0) {
      // Inside the range but in no variable: the process ends with the signal, as without LMDX,
      // but first says where the access went. Declined, the access faults once more on its way
      // to the default action (under libsigsegv): said once.
      static std::atomic<void*> reported{nullptr};
      if (reported.exchange(address) != address) LogLine(WildAccessText(address, type));
      return false;
    }
    consistency::Protocol& protocol = ProtocolOf(page);
    consistency::Counters& counters = protocols_->CountersOf(protocol);
    consistency::Counters::Add(wanted == Access::kRead ? counters.read_faults
                                                       : counters.write_faults);
    std::uint64_t start = MonotonicNs();
    protocol.Obtain(page, wanted);
    consistency::Counters::Add(counters.fault_ns, MonotonicNs() - start);
  } catch (const std::exception& error) {
    fatal_("a shared-memory access at " + AddressText(address) +
           " could not be served: " + error.what());
  }
  return true;
}

std::string Service::WildAccessText(void* address, FaultType type) {
  std::string access = type == FaultType::kWrite  ? "a write"
                       : type == FaultType::kRead ? "a read"
                                                  : "an access";
  std::string text = access + " at " + AddressText(address) +
                     " is inside the shared range but in no shared variable or heap block";
  try {
    wire::VariableReply reply = RankZeroRegionReply(space_.PageOf(address));
    if (reply.found()) {
      // Created since this node looked: the access raced with the variable's creation.
      return text + " when this node looked; \"" + reply.region().name() +
             "\" holds it now (was it used before it was created everywhere?)";
    }
    if (!reply.has_nearest_below()) return text + "; no variable lies below it";
    Region nearest = FromWire(reply.nearest_below());
    auto* begin = reinterpret_cast<const char*>(space_.AppView(nearest.first_page));
    const char* end = begin + nearest.bytes;
    auto past = static_cast<std::uint64_t>(static_cast<const char*>(address) - end);
    return text + ": " + std::to_string(past) + " bytes past the end of \"" + nearest.name +
           "\" (" + AddressText(begin) + " to " + AddressText(end) + ", " +
           std::to_string(nearest.bytes) + " bytes), the nearest variable below it";
  } catch (const std::exception& error) {
    return text + " (" + error.what() + ")";
  }
}

void Service::RestoreEntry(PageId page, Access wanted) {
  // Under userfaultfd a page whose access suffices has no entry when no thread has touched it
  // since it was opened (a fresh page is allocated at its first touch), or when the kernel
  // dropped the entry (memory reclaimed). Access changes only under the stripe lock, so the
  // entry made here matches the table; a page in transition is left to its transaction.
  try {
    {
      std::lock_guard lock(table_.StripeMutex(page));
      Access now = table_.access(page);
      if (now >= wanted && !table_.busy(page)) space_.Restore(page, now);
    }
    consistency::Counters::Add(KnownCountersOf(page).local_faults);
    MapAhead(page);
  } catch (const std::exception& error) {
    fatal_("a shared page at " + AddressText(space_.AppView(page)) +
           " could not be mapped: " + error.what());
  }
}

void Service::MapAhead(PageId page) {
  // A first touch is most often the start of a fill or a sweep of fresh pages: the pages after it
  // that this node may use and that have no entry yet get theirs now, at a system call or two
  // each, rather than at a fault each (about 10 µs here), as the kernel does for private memory.
  constexpr std::uint64_t kAhead = 63;
  const PageId first = page + 1;
  PageId end = first;
  while (end < first + kAhead && end < space_.page_count() && table_.access(end) != Access::kNone)
    ++end;
  if (end == first) return;
  const std::uint64_t untouched = space_.PrepareUntouched(first, end - first);
  for (PageId next = first; next < first + untouched; ++next) {
    // Under the page's lock and only when no transition holds it: protection changes happen so,
    // so the entry made matches the access the protocol set.
    std::lock_guard lock(table_.StripeMutex(next));
    if (table_.busy(next)) continue;
    space_.MapUntouched(next, table_.access(next));
  }
}

// ---- Statistics ----------------------------------------------------------------------------

wire::NodeStats Service::LocalStats() const {
  wire::NodeStats stats;
  stats.set_rank(node_.rank());
  stats.set_protocol(options_.default_protocol);
  stats.set_page_access(AccessControlName(space_.access_control()));
  // The node's figures are the sum of its protocols' (and of the few faults no protocol could be
  // named for); each protocol that did anything is listed with its own.
  FillCounters(counters_, stats);
  for (consistency::Protocol* protocol : protocols_->All()) {
    wire::NodeStats part;
    FillCounters(protocols_->CountersOf(*protocol), part);
    if (!AnyFigure(part)) continue;
    AddFigures(part, stats);
    part.set_rank(node_.rank());
    part.set_protocol(protocol->name());
    *stats.add_protocols() = std::move(part);
  }
  stats.set_heap_carved_bytes(heap_->CarvedBytes());
  stats.set_heap_live_blocks(heap_->LiveBlocks());
  stats.set_heap_live_bytes(heap_->LiveBytes());
  std::uint64_t frames = 0;
  std::uint64_t bytes = 0;
  for (std::size_t id = 1; id < static_cast<std::size_t>(net::MessageType::kLimit); ++id) {
    auto type = static_cast<net::MessageType>(id);
    const auto& counters = node_.counters(type);
    wire::TypeTraffic traffic;
    traffic.set_sent_frames(counters.sent_frames.load(std::memory_order_relaxed));
    traffic.set_sent_bytes(counters.sent_bytes.load(std::memory_order_relaxed));
    traffic.set_received_frames(counters.received_frames.load(std::memory_order_relaxed));
    traffic.set_received_bytes(counters.received_bytes.load(std::memory_order_relaxed));
    if (traffic.sent_frames() == 0 && traffic.received_frames() == 0) continue;
    traffic.set_id(static_cast<std::uint32_t>(id));
    traffic.set_type(net::MessageTypeName(type));
    frames += traffic.sent_frames();
    bytes += traffic.sent_bytes();
    *stats.add_traffic() = std::move(traffic);
  }
  stats.set_messages_sent(frames);
  stats.set_bytes_sent(bytes);
  stats.set_network_hint_fallbacks(node_.hint_fallbacks());
  MappingFigures mapping = space_.mapping_figures();
  stats.set_mapping_budget(mapping.budget);
  stats.set_mapping_runs_peak(mapping.peak_runs);
  stats.set_pages_closed(mapping.pages_closed);
  return stats;
}

void Service::ReportJobStats() {
  if (node_.rank() != 0) return;
  wire::JobStats job;
  for (int rank = 0; rank < node_.size(); ++rank) {
    if (rank == 0) {
      *job.add_nodes() = LocalStats();
      continue;
    }
    try {
      *job.add_nodes() =
          Parse<wire::NodeStats>(node_.Request(rank, kDsmStats, {}).body, "statistics reply");
    } catch (const Error& error) {
      LogLine("statistics of rank " + std::to_string(rank) + " are missing: " + error.what());
    }
  }
  std::fputs(FormatStatsTable(job).c_str(), stderr);
  std::string json = StatsAsJson(job);
  std::ofstream file(options_.stats_json);
  file << json << '\n';
  if (!file.good()) {
    LogLine("cannot write the statistics to " + options_.stats_json);
  } else {
    LogLine("statistics written to " + options_.stats_json);
  }
}

// ---- The node's DSM ------------------------------------------------------------------------

const char* Service::BlockedFaultSignal() const {
  int signal = space_.access_control() == AccessControl::kUserfaultfd ? SIGBUS : SIGSEGV;
  sigset_t blocked;
  if (::pthread_sigmask(SIG_BLOCK, nullptr, &blocked) != 0) return nullptr;
  if (sigismember(&blocked, signal) != 1) return nullptr;
  return signal == SIGBUS ? "SIGBUS" : "SIGSEGV";
}

void Attach(net::Node& node, const Options& options) {
  // Before the range exists: a child of fork() must know it is one from the first fork on.
  WatchForForks();
  static std::once_flag abandon_in_children;
  std::call_once(abandon_in_children,
                 [] { ::pthread_atfork(nullptr, nullptr, &AbandonInForkedChild); });
  auto service = std::make_shared<Service>(node, options);
  service->RegisterHandlers();
  // The protocol carries consistency over synchronisation, unless the program installed hooks of
  // its own before lmdx_init (the sync tests do): those stay.
  if (dynamic_cast<sync::NullConsistencyHooks*>(sync::CurrentConsistencyHooks().get()) != nullptr) {
    sync::SetConsistencyHooks(service->protocols());
  }
  std::lock_guard lock(current_mutex);
  current_service = std::move(service);
  current_service_pointer.store(current_service.get(), std::memory_order_release);
}

void Detach() {
  sync::SetConsistencyHooks(nullptr);
  std::lock_guard lock(current_mutex);
  current_service_pointer.store(nullptr, std::memory_order_release);
  current_service.reset();
}

}  // namespace lmdx::dsm

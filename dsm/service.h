// The DSM of one node: the global range, the fault handler, the shared heap, the regions of
// named variables, and the consistency protocol that keeps pages coherent (blueprint section 5).
// The C API (api/dsm.cc) calls it; every call is thread-safe and throws lmdx::Error on failure.
#ifndef LMDX_DSM_SERVICE_H_
#define LMDX_DSM_SERVICE_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "consistency/counters.h"
#include "consistency/page_table.h"
#include "consistency/protocol.h"
#include "consistency/protocol_set.h"
#include "dsm/dsm.pb.h"
#include "dsm/fault_handler.h"
#include "dsm/global_space.h"
#include "dsm/home_access.h"
#include "dsm/options.h"
#include "dsm/regions.h"
#include "dsm/shared_heap.h"
#include "net/node.h"

namespace lmdx::dsm {

class Service final : public consistency::PageMemory {
 public:
  // Reserves the range and installs the fault handler; throws lmdx::Error(LMDX_ERR_NO_MEMORY) when
  // the range cannot be reserved.
  Service(net::Node& node, Options options);
  ~Service() override;
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Installs the message handlers; called before the node joins the job.
  void RegisterHandlers();

  void* Malloc(std::size_t bytes);
  void Free(void* block);
  // The K-th call on every rank returns the same region; `bytes` must agree.
  void* AllocCollective(std::size_t bytes);
  void* SharedVariable(const std::string& name, std::size_t bytes);
  // nullptr when no variable has that name.
  void* Lookup(const std::string& name, std::size_t* bytes);
  // Throws LMDX_ERR_INVALID_ARGUMENT, naming call, unless [address, address + bytes) lies in
  // shared memory.
  void CheckRange(const void* address, std::size_t bytes, const char* call);
  void Get(void* destination, const void* shared_source, std::size_t bytes);
  void Put(void* shared_destination, const void* source, std::size_t bytes);

  bool Contains(const void* address) const { return space_.Contains(address); }
  // The name of the protocol that keeps address coherent; throws when it is not shared memory.
  const char* ProtocolName(const void* address);
  // Called in the SIGSEGV handler: true when the fault was on shared memory and is resolved.
  bool HandleFault(void* address, FaultType type);
  // What went wrong with an access at address, a shared-range address no region holds: the
  // nearest variable below it and how far past its end the access is.
  std::string WildAccessText(void* address, FaultType type);
  void RestoreEntry(PageId page, consistency::Access wanted);
  // Under userfaultfd, after a local fault: entries for the untouched pages after page.
  void MapAhead(PageId page);
  // The signal that carries this node's faults on shared memory (SIGSEGV under mprotect, SIGBUS
  // under userfaultfd) when the calling thread blocks it, else nullptr. A fault of such a thread
  // never reaches the handler: the kernel kills the process at once. One system call.
  const char* BlockedFaultSignal() const;
  // What to do when a fault cannot be served (a peer is gone): print and end the process.
  void SetFatalHandler(std::function<void(const std::string&)> fatal) { fatal_ = std::move(fatal); }

  const Options& options() const { return options_; }
  // Every protocol of this node, which are also its consistency hooks.
  const std::shared_ptr<consistency::ProtocolSet>& protocols() const { return protocols_; }
  // The protocol of the shared heap (lmdx_malloc): dsm.heap, else the default.
  const std::string& heap_protocol() const { return options_.heap_protocol; }
  wire::NodeStats LocalStats() const;
  // Rank 0: collects every node's statistics, prints the table and writes the JSON file.
  void ReportJobStats();

  // PageMemory.
  std::size_t page_bytes() const override { return space_.page_bytes(); }
  std::byte* AppView(PageId page) override { return space_.AppView(page); }
  std::byte* SystemView(PageId page) override { return space_.SystemView(page); }
  // Counted by the protocol that calls it (consistency/internal/counted_memory.h).
  void Protect(PageId first, std::uint64_t count, consistency::Access access) override {
    space_.Protect(first, count, access);
  }
  consistency::Placement PlacementOf(PageId page) override;
  bool ReadHomeCopies(int home, std::span<const PageId> pages, std::byte* into) override {
    return home_access_.Read(home, pages, into);
  }
  bool WriteHomeCopies(int home, std::span<const consistency::PageRun> runs) override {
    return home_access_.Write(home, runs);
  }
  bool RegisterCopies(int home, std::span<const PageId> pages) override {
    return home_access_.Register(home, pages);
  }
  void TakeRegisteredCopies(
      const std::function<void(int node, PageId first, std::uint64_t count)>& take) override {
    home_access_.TakeRegistered(take);
  }

 private:
  Region PlaceRegion(const std::string& name, std::uint64_t bytes, const Creator& creator);
  Region FindOrCreate(const wire::VariableRequest& request, bool* found);
  // A request to create name (bytes, for call) on behalf of this node's module.
  wire::VariableRequest CreationRequest(const std::string& name, std::uint64_t bytes,
                                        const char* call) const;
  // Finds or creates through rank 0, which places every region (rank 0 itself asks no one), and
  // learns the answer; nullopt when a lookup finds nothing.
  std::optional<Region> AskPlacer(const wire::VariableRequest& request);
  void Learn(const Region& region);
  std::optional<Region> RegionOf(PageId page);
  // What rank 0, which knows every region, says of page: its region, or the one nearest below.
  wire::VariableReply LocalRegionReply(PageId page) const;  // on rank 0
  wire::VariableReply RankZeroRegionReply(PageId page);     // from any rank
  // The protocol that keeps page coherent; throws when the page is not shared.
  consistency::Protocol& ProtocolOf(PageId page);
  // The counters of the protocol that keeps address (which is in shared memory).
  consistency::Counters& CountersOf(const void* address);
  // The same for a page whose region this node already knows, without asking rank 0 (a fault
  // handler's); the node's own counters when it does not.
  consistency::Counters& KnownCountersOf(PageId page);
  consistency::Protocol& Named(const std::string& protocol, const std::string& what,
                               const std::string& chosen_by = "") const;
  void FreeHere(void* block);

  net::Node& node_;
  Options options_;
  GlobalSpace space_;
  HomeAccess home_access_;
  consistency::Counters counters_;  // what no protocol could be named for
  consistency::PageTable table_;
  std::shared_ptr<consistency::ProtocolSet> protocols_;
  consistency::Protocol* heap_protocol_ = nullptr;
  RegionTable regions_;
  std::unique_ptr<SharedHeap> heap_;
  std::function<void(const std::string&)> fatal_;
  std::atomic<std::uint64_t> collective_calls_{0};

  // Rank 0 only: the next free page of the variable area, and how many large regions it placed.
  std::mutex placement_mutex_;
  PageId next_variable_page_ = 0;
  std::uint64_t large_regions_placed_ = 0;

  std::unique_ptr<FaultHandler> fault_handler_;
};

// Creates this node's DSM (a net::Node::Setup step, before the node joins).
void Attach(net::Node& node, const Options& options);
// Drops this node's DSM (the global range is unmapped) at the end of the job.
void Detach();
// The DSM of this process, or nullptr; read inline, as every message call asks it.
inline std::atomic<Service*> current_service_pointer{nullptr};
inline Service* Current() { return current_service_pointer.load(std::memory_order_acquire); }

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_SERVICE_H_

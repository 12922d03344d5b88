// The boundary between the DSM and its consistency protocols (blueprint sections 5 and 6).
//
// The DSM (dsm/) owns the global range, its two views and its regions; it implements PageMemory
// for the protocols. A protocol decides what happens when a node faults on a page, when a thread
// acquires or releases (it is the sync layer's ConsistencyHooks), and what its messages do. Every
// protocol — sc now; update, rc, lrc and hlrc next — implements Protocol, so the DSM chooses one
// per region without knowing how it works.
#ifndef LMDX_CONSISTENCY_PROTOCOL_H_
#define LMDX_CONSISTENCY_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "consistency/counters.h"
#include "net/node.h"
#include "sync/consistency_hooks.h"

namespace lmdx::consistency {

// What this node's application may do with a page. Ordered: kWrite includes kRead.
enum class Access : std::uint8_t { kNone = 0, kRead = 1, kWrite = 2 };

const char* AccessName(Access access);

// The index of a page within the global range.
using PageId = std::uint64_t;

// Where a page's directory lives and who holds its first copy.
struct Placement {
  int home = -1;  // the node that manages the page (its directory); -1: not a shared page
  // First-touch pages have no copy until a node touches one: that node becomes their owner and
  // gets a zero page with no transfer. Other pages start as zeros held by their home.
  bool first_touch = false;
  // The page's coherence unit, [unit_first, unit_first + unit_pages): a read fault may bring
  // every page of it that has the same home.
  PageId unit_first = 0;
  std::uint32_t unit_pages = 1;
  // The page's region, [region_first, region_first + region_pages): pages fetched ahead of a
  // fault stay inside it, as the pages beyond may run under another protocol.
  PageId region_first = 0;
  std::uint64_t region_pages = 0;
};

// Bytes to write into a page of another node's copy: length bytes at offset.
struct PageRun {
  PageId page;
  std::size_t offset;
  const std::uint8_t* bytes;
  std::size_t length;
};

// The DSM's memory, as protocols see it.
class PageMemory {
 public:
  virtual ~PageMemory() = default;
  virtual std::size_t page_bytes() const = 0;
  // The application's view of a page: what user code reads and writes, with the protection the
  // protocol sets. Protocols never touch memory through it.
  virtual std::byte* AppView(PageId page) = 0;
  // The runtime's view of the same memory, always readable and writable: page contents are read
  // and filled here (a fetched page lands here straight from the network), so the runtime never
  // faults and never opens a page to the application before its contents are complete.
  virtual std::byte* SystemView(PageId page) = 0;
  // Sets the application's access to pages [first, first + count).
  virtual void Protect(PageId first, std::uint64_t count, Access access) = 0;
  // May ask another node (the region table lives on rank 0); call from application threads only.
  virtual Placement PlacementOf(PageId page) = 0;
  // Reads home's copy of pages (sorted) into `into`, one page after another, straight from the
  // home's memory, with no code of the home's running (a one-sided read: no message for the
  // home to serve while it computes). Blocks; application threads only. False when the pair's
  // network has no remote reads or the read failed: the caller then asks the home.
  virtual bool ReadHomeCopies(int home, std::span<const PageId> pages, std::byte* into) = 0;
  // Writes runs of bytes into home's copies straight in the home's memory (a one-sided write,
  // which the home does not see: nothing of its own, a twin say, changes). Blocks; application
  // threads only. False when the pair's network has no remote writes, when so many short runs
  // would cost more than the home's applying them from a message, or the write failed (then some
  // runs may have landed): the caller then sends them to the home.
  virtual bool WriteHomeCopies(int home, std::span<const PageRun> runs) = 0;
  // Records in home's memory, one-sidedly, that this node is about to read pages (sorted) there
  // with ReadHomeCopies, so that a first copy needs no message: the home learns of it at its
  // next TakeRegisteredCopies. A full fence follows the record, and TakeRegisteredCopies starts
  // with one: a release whose taking misses a record happened before the read that follows it.
  // Blocks; application threads only. False when the pair cannot (no remote writes, or the
  // home's record of this node is full until the home next takes it): the caller asks the home.
  virtual bool RegisterCopies(int home, std::span<const PageId> pages) = 0;
  // The copies other nodes registered here since the last call, as runs of pages per node.
  virtual void TakeRegisteredCopies(
      const std::function<void(int node, PageId first, std::uint64_t count)>& take) = 0;
};

class Protocol : public sync::ConsistencyHooks {
 public:
  // "sc", "update", ...
  virtual const char* name() const = 0;
  // Installs the protocol's message handlers; called before the node joins the job.
  virtual void RegisterHandlers(net::Node& node) = 0;
  // The access this node holds now (lock-free: the fault handler reads it to tell a read fault
  // from a write fault).
  virtual Access CurrentAccess(PageId page) const = 0;
  // Brings this node at least `wanted` access to page, blocking the calling thread (a faulting
  // thread inside the signal handler, or lmdx_get/lmdx_put). Threads of this node asking for the
  // same page wait for one transaction. Throws lmdx::Error when the page cannot be brought.
  virtual void Obtain(PageId page, Access wanted) = 0;
  // Runs use(system view of page) while this node holds at least `access` to it and nothing can
  // take that access away: explicit get and put copy through it without a fault.
  virtual void WithPage(PageId page, Access access, const std::function<void(std::byte*)>& use) = 0;
  // Pages [first, first + count) were just created, never touched by any node, and are homed
  // here: open them for writing on this node at once, so that the home fills its own new data
  // without a fault. Pages that are not all of that are left alone.
  virtual void OpenFreshPages(PageId first, std::uint64_t count) = 0;
  // Combines payloads this protocol's releases made (a barrier's arrivals) into one that an
  // acquirer may take instead of all of them; nullopt when the protocol cannot. Must not block.
  virtual std::optional<std::string> MergePayloads(std::span<const std::string> payloads) {
    for (const std::string& payload : payloads) {
      if (!payload.empty()) return std::nullopt;
    }
    return std::string();
  }
};

}  // namespace lmdx::consistency

#endif  // LMDX_CONSISTENCY_PROTOCOL_H_

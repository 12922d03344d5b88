// One-sided access to home copies (consistency::PageMemory::ReadHomeCopies, WriteHomeCopies): a
// node reads pages of another node's system view, and writes runs of bytes into it, straight in
// that node's memory over the pair's network where it has remote memory access (shm, fabric;
// net/transport.h), so that serving them costs the home no CPU, even while it computes.
//
// The first access to a home asks it for its key (kDsmAccessKey); the home then exposes its whole
// system view, and its record of the copies others read there (internal/copy_registry.h), to the
// pair's network, once per network. The answer is kept: a pair whose network has no remote access
// is asked once and goes on with messages.
#ifndef LMDX_DSM_HOME_ACCESS_H_
#define LMDX_DSM_HOME_ACCESS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "consistency/protocol.h"
#include "dsm/global_space.h"
#include "dsm/internal/copy_registry.h"
#include "net/node.h"

namespace lmdx::dsm {

class HomeAccess {
 public:
  // enabled false: Read and Write always answer false (LMDX_DSM_ONE_SIDED=off).
  HomeAccess(net::Node& node, const GlobalSpace& space, bool enabled);

  // Installs the kDsmAccessKey handler; called before the node joins the job.
  void RegisterHandlers();

  // Reads the home's copy of pages (sorted) into into, one page after another; blocks until
  // done. False when the pair cannot read one-sidedly or a read failed: the caller asks the home.
  bool Read(int home, std::span<const consistency::PageId> pages, std::byte* into);
  // Writes the runs into the home's copy; blocks until done. False when the pair cannot write
  // one-sidedly or a write failed (then no run, or only some, may have landed).
  bool Write(int home, std::span<const consistency::PageRun> runs);
  // Records in the home's registry that this node is about to read pages (sorted) there, and
  // fences; blocks until the record is in the home's memory. False when the pair cannot write
  // one-sidedly, or this node's ring at the home is full until the home's next release.
  bool Register(int home, std::span<const consistency::PageId> pages);
  // The copies other nodes registered here since the last call (CopyRegistry::Take).
  void TakeRegistered(
      const std::function<void(int reader, std::uint64_t first, std::uint64_t count)>& take) {
    registry_.Take(take);
  }

 private:
  // Without a mapping, a batch with more runs than both of these goes as a message (Write).
  static constexpr std::size_t kSystemCallRuns = 4096;
  static constexpr std::size_t kSystemCallRunsPerPage = 32;
  // The pair goes on with messages: a read failed (said once in the log).
  void GiveUp(int home);
  // The pair's writes go as messages from now on; reads, which need no write access, go on.
  // failed: a write was tried and failed (said once in the log), rather than not possible.
  void GiveUpWrites(int home, bool failed);
  // Register's entries and head as plain stores into this node's slot of a mapped registry;
  // false when the slot is full until the home next takes it. Caller holds register_mutex_.
  bool RegisterMapped(internal::CopyRegistry::Slot& ring,
                      std::span<const internal::CopyRegistry::Entry> runs);
  // How this node reaches a home's memory, once the home has answered.
  struct Window {
    bool asked = false;
    std::string key;  // empty: no remote reads with this home
    std::uint64_t base = 0;
    std::uint64_t bytes = 0;
    bool writable = true;      // false once a one-sided write to the home failed
    std::string registry_key;  // empty: the home keeps no registry for this pair
    std::uint64_t registry_base = 0;
    std::uint64_t registered = 0;  // entries this node wrote in its ring at the home, ever
    std::uint64_t taken = 0;       // entries the home had taken, when this node last looked
    // Where the pair shares a host, the home's system view and this node's slot of its registry
    // mapped here (views_, rings_): reads, writes and registrations are plain copies and stores.
    std::byte* view = nullptr;
    internal::CopyRegistry::Slot* ring = nullptr;
  };
  std::optional<Window> WindowOf(int home);

  net::Node& node_;
  const GlobalSpace& space_;
  bool enabled_;
  internal::CopyRegistry registry_;
  std::mutex mutex_;
  std::vector<Window> windows_;  // by rank
  std::vector<Mapping> views_;   // by rank, once mapped (Window::view)
  std::vector<Mapping> rings_;   // by rank, the home's whole registry (Window::ring)
  // One registration at a time: a ring's entries and its head are written in order.
  std::mutex register_mutex_;
};

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_HOME_ACCESS_H_

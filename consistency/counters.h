// What the DSM and its protocols did on one node, for LMDX_STATS (blueprint section 12). Plain
// relaxed atomic counters: they are bumped on fault paths and read once at the end of the job.
#ifndef LMDX_CONSISTENCY_COUNTERS_H_
#define LMDX_CONSISTENCY_COUNTERS_H_

#include <atomic>
#include <cstdint>

namespace lmdx::consistency {

struct Counters {
  using Counter = std::atomic<std::uint64_t>;
  Counter read_faults{0};   // faults on a page this node could not read
  Counter write_faults{0};  // faults on a page this node could not write
  // Faults on a page whose access sufficed, served with no protocol work (userfaultfd: the first
  // touch of a fresh page, or an entry the kernel dropped).
  Counter local_faults{0};
  Counter pages_fetched{0};        // page contents that came from another node
  Counter pages_read_directly{0};  // of those, read from the home's memory (one-sided)
  Counter bytes_fetched{0};
  Counter zero_pages{0};              // first touches served with no transfer
  Counter upgrades{0};                // write access granted over a copy this node already had
  Counter invalidations_sent{0};      // copies elsewhere this node's writes invalidated
  Counter invalidations_received{0};  // copies of this node invalidated by others' writes
  Counter downgrades{0};              // write access given up so that another node may read
  Counter directory_requests{0};      // requests this node served as a page's home
  Counter explicit_gets{0};           // lmdx_get calls
  Counter explicit_puts{0};           // lmdx_put calls
  Counter fault_ns{0};                // time spent serving this node's faults
  // The multiple-writer protocols.
  Counter twins{0};          // copies of a page taken before its first write in an interval
  Counter diffs_made{0};     // diffs of written pages against their twins
  Counter diff_bytes{0};     // their encoded bytes
  Counter diffs_applied{0};  // diffs of other nodes applied to this node's copies
  Counter diffs_written_directly{0};  // hlrc: own diffs written into the home's memory (one-sided)
  Counter bytes_written_directly{0};  // and their runs' bytes
  Counter bytes_read_directly{0};     // bytes of the pages read from the home's memory
  Counter write_notices{0};           // write notices received that named a page news to this node
  Counter updates_sent{0};            // diffs sent to copy holders (update)
  Counter pages_refetched{0};         // invalidated pages fetched again at the acquire
  Counter pages_prefetched{0};        // pages of a faulting page's coherence unit brought with it
  // Pages a fault on a strided walk brought ahead of the walk
  // (home_based/internal/fault_streams.h), and of those the ones the walk went through before its
  // next fault: the fetch ahead was used.
  Counter pages_streamed{0};
  Counter streamed_used{0};
  Counter protection_changes{0};  // protection changes (each over a run of pages)
  // lrc.
  Counter diffs_fetched{0};         // other writers' diffs fetched at faults and by homes
  Counter diffs_discarded{0};       // this node's diffs dropped by a garbage collection
  Counter kept_diff_peak{0};        // the most bytes of diffs this node kept at once
  Counter homes_taken{0};           // first-touch pages this node became the home of
  Counter home_updates_sent{0};     // fetched copies this node told their homes about
  Counter home_updates_applied{0};  // such copies this node, their home, took in
  Counter release_ns{0};            // time in the protocol at releases
  Counter acquire_ns{0};            // time in the protocol at acquires

  static void Add(Counter& counter, std::uint64_t amount = 1) {
    counter.fetch_add(amount, std::memory_order_relaxed);
  }
};

}  // namespace lmdx::consistency

#endif  // LMDX_CONSISTENCY_COUNTERS_H_

// What a node's DSM is built with; the API layer fills it from the configuration.
#ifndef LMDX_DSM_OPTIONS_H_
#define LMDX_DSM_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "dsm/page_access.h"

namespace lmdx::dsm {

// How a region's pages are spread over the nodes that manage them (their homes).
enum class HomePolicy : std::uint32_t {
  kBlock = 0,       // contiguous blocks, one per node in rank order
  kCyclic = 1,      // page i on node i mod size
  kFirstTouch = 2,  // the first node to touch a page owns it; directories spread cyclically
};

const char* HomePolicyName(HomePolicy policy);

struct RegionPolicy {
  HomePolicy home = HomePolicy::kBlock;
  std::string protocol = "sc";
  // The coherence unit: a fault brings the pages of its unit (those homed at the same node, which
  // the multiple-writer protocols fetch in one message). Cyclic homes spread units, not pages.
  std::uint32_t unit_pages = 1;
  // What chose the protocol, for error texts ("the protocol of module \"workers\""); may be empty.
  std::string chosen_by;
};

// Who creates the regions a node asks for: the default protocol of its module and the module's
// name (both empty when the program runs without modules). Carried in every creation request, so
// that rank 0, which places regions, applies the creator's default.
struct Creator {
  std::string protocol;
  std::string module;
};

struct Options {
  std::uintptr_t base = 0x400000000000;
  std::uint64_t bytes = std::uint64_t{64} << 30;
  // The policy of the region called name (a named variable, or "lmdx.collective.K") created by
  // creator. Asked on rank 0 only, which places every region.
  std::function<RegionPolicy(std::string_view name, const Creator& creator)> policy_for;
  // This node, as the creator of the regions it asks for.
  Creator creator;
  // The protocol of the shared heap (dsm.heap), and of variables no region names.
  std::string heap_protocol = "sc";
  std::string default_protocol = "sc";
  // hlrc: fetch again at an acquire the pages it invalidated that this node was using.
  bool refetch_at_acquire = true;
  // lrc: the bytes of diffs a node keeps before it asks for a garbage collection.
  std::uint64_t lrc_diff_limit = std::uint64_t{64} << 20;
  // update, rc, hlrc: a fault that fetches again a page this node held before reads the home's
  // copy straight from the home's memory, and hlrc's releases write their diffs straight into
  // it, where the pair's network allows (shm, fabric), unless LMDX_DSM_ONE_SIDED=off
  // (dsm/home_access.h).
  bool one_sided = true;
  // An unused page before every variable, where an overrun of the one before faults and is named
  // (rank 0, which places variables, decides).
  bool guard_pages = false;
  // update, rc, hlrc, lrc: a fault on a strided walk brings the pages ahead of it
  // (LMDX_DSM_FETCH_AHEAD; consistency/home_based/internal/fault_streams.h).
  bool fetch_ahead = true;
  // How page access is set: userfaultfd where the kernel offers it unless LMDX_DSM_ACCESS says.
  AccessControl access = AccessControl::kAuto;
  bool stats = false;
  std::string stats_json = "lmdx-stats.json";
};

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_OPTIONS_H_

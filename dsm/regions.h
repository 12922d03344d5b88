// The regions of the variable area (named variables and collective allocations) this node knows,
// and where each page of a region is homed. Rank 0 places every region; other nodes learn them as
// they ask (by name, or by address on a fault) and keep them: a region never moves or ends.
#ifndef LMDX_DSM_REGIONS_H_
#define LMDX_DSM_REGIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "consistency/protocol.h"
#include "dsm/options.h"

namespace lmdx::dsm {

struct Region {
  std::string name;
  consistency::PageId first_page = 0;
  std::uint64_t page_count = 0;
  std::uint64_t bytes = 0;
  HomePolicy home = HomePolicy::kBlock;
  std::string protocol = "sc";
  std::uint32_t unit_pages = 1;

  consistency::Placement PlacementOf(consistency::PageId page, int size) const;
  // The pages homed at rank under a block policy: [first, first + count), possibly empty.
  std::pair<consistency::PageId, std::uint64_t> BlockOf(int rank, int size) const;
};

class RegionTable {
 public:
  // False when a region starting at the same page is already known.
  bool Add(const Region& region);
  std::optional<Region> Containing(consistency::PageId page) const;
  // The region that starts at or nearest below page, whether or not it holds page.
  std::optional<Region> NearestAtOrBelow(consistency::PageId page) const;
  std::optional<Region> Named(const std::string& name) const;

 private:
  mutable std::shared_mutex mutex_;
  std::map<consistency::PageId, Region> by_first_page_;
  std::unordered_map<std::string, consistency::PageId> by_name_;
};

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_REGIONS_H_

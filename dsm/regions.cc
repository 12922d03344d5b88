#include "dsm/regions.h"

#include <algorithm>
#include <mutex>

namespace lmdx::dsm {

const char* HomePolicyName(HomePolicy policy) {
  switch (policy) {
    case HomePolicy::kBlock: return "block";
    case HomePolicy::kCyclic: return "cyclic";
    case HomePolicy::kFirstTouch: return "first_touch";
  }
  return "?";
}

consistency::Placement Region::PlacementOf(consistency::PageId page, int size) const {
  std::uint64_t index = page - first_page;
  auto nodes = static_cast<std::uint64_t>(size);
  std::uint64_t unit = std::max<std::uint32_t>(unit_pages, 1);
  consistency::Placement placement;
  placement.unit_first = first_page + index / unit * unit;
  placement.unit_pages = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(unit, first_page + page_count - placement.unit_first));
  placement.region_first = first_page;
  placement.region_pages = page_count;
  switch (home) {
    case HomePolicy::kBlock: placement.home = static_cast<int>(index * nodes / page_count); break;
    case HomePolicy::kCyclic: placement.home = static_cast<int>(index / unit % nodes); break;
    case HomePolicy::kFirstTouch:
      placement.home = static_cast<int>(index / unit % nodes);
      placement.first_touch = true;
      break;
  }
  return placement;
}

std::pair<consistency::PageId, std::uint64_t> Region::BlockOf(int rank, int size) const {
  // Page index i is homed at floor(i * size / count): rank r holds [ceil(r*count/size), ...).
  auto nodes = static_cast<std::uint64_t>(size);
  auto r = static_cast<std::uint64_t>(rank);
  std::uint64_t begin = (r * page_count + nodes - 1) / nodes;
  std::uint64_t end = ((r + 1) * page_count + nodes - 1) / nodes;
  return {first_page + begin, end - begin};
}

bool RegionTable::Add(const Region& region) {
  std::unique_lock lock(mutex_);
  auto [it, added] = by_first_page_.try_emplace(region.first_page, region);
  if (added) by_name_[region.name] = region.first_page;
  return added;
}

std::optional<Region> RegionTable::Containing(consistency::PageId page) const {
  std::shared_lock lock(mutex_);
  auto it = by_first_page_.upper_bound(page);
  if (it == by_first_page_.begin()) return std::nullopt;
  --it;
  if (page - it->second.first_page >= it->second.page_count) return std::nullopt;
  return it->second;
}

std::optional<Region> RegionTable::NearestAtOrBelow(consistency::PageId page) const {
  std::shared_lock lock(mutex_);
  auto it = by_first_page_.upper_bound(page);
  if (it == by_first_page_.begin()) return std::nullopt;
  return std::prev(it)->second;
}

std::optional<Region> RegionTable::Named(const std::string& name) const {
  std::shared_lock lock(mutex_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return by_first_page_.at(it->second);
}

}  // namespace lmdx::dsm

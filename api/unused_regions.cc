#include "api/internal/unused_regions.h"

#include <mutex>
#include <set>
#include <string>

#include "base/log.h"

namespace lmdx::api {
namespace {

std::mutex taken_mutex;
std::set<std::string> taken;  // region names as written
bool warned = false;

}  // namespace

void NoteRegionTaken(const config::RegionSettings* region) {
  if (region == nullptr) return;
  std::lock_guard lock(taken_mutex);
  taken.insert(region->name);
}

void WarnOfUnusedRegions(const config::Settings& settings) {
  std::string unused;
  std::size_t count = 0;
  {
    std::lock_guard lock(taken_mutex);
    if (warned) return;
    warned = true;
    for (const config::RegionSettings& region : settings.regions) {
      if (taken.contains(region.name)) continue;
      unused += (unused.empty() ? "\"" : ", \"") + region.name + "\"";
      ++count;
    }
  }
  if (count == 0) return;
  std::string where = settings.config_file.empty() ? "" : " in " + settings.config_file;
  LogLine("warning: dsm.region " + unused + where + (count == 1 ? " was" : " were") +
          " taken by no shared variable of this run; check the name against the program's " +
          "variables (a prefix ends in '*')");
}

}  // namespace lmdx::api

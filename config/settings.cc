// The settings in force: the parsed file's values, then the LMDX_* environment overrides, and
// the names of the configuration's enumerations.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <tuple>

#include "base/error.h"
#include "config/config.h"
#include "config/internal/checks.h"
#include "config/internal/values.h"

namespace lmdx::config {
namespace {

using namespace internal;  // NOLINT(google-build-using-namespace): this layer's own helpers

// The value of a variable, or nothing when it is unset or empty.
std::optional<std::string> Get(const Environment& env, std::string_view name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

// An enumeration named by a variable: its lower-case value name, in any case.
template <typename Enum>
Enum ParseEnumVariable(const Environment& env, std::string_view variable,
                       const pb::EnumDescriptor* type, const char* what, Enum current) {
  std::optional<std::string> text = Get(env, variable);
  if (!text) return current;
  std::string upper = *text;
  for (char& c : upper) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  const pb::EnumValueDescriptor* value = type->FindValueByName(upper);
  if (value == nullptr || value->number() == 0) {
    Fail(std::string(variable) + ": " + Quoted(*text) + " is not a " + what + " (" +
         OneOf(EnumValueNames(type, true)) + ")");
  }
  return static_cast<Enum>(value->number());
}

// A variable whose value is one of a few words, in any case; returns it in lower case.
std::string ParseChoice(const Environment& env, std::string_view variable,
                        const std::vector<std::string>& choices, const char* what,
                        const std::string& current) {
  std::optional<std::string> text = Get(env, variable);
  if (!text) return current;
  std::string lower = *text;
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (std::find(choices.begin(), choices.end(), lower) == choices.end()) {
    Fail(std::string(variable) + ": " + Quoted(*text) + " is not " + what + " (" + OneOf(choices) +
         ")");
  }
  return lower;
}

}  // namespace

const RegionSettings* Settings::RegionFor(std::string_view variable) const {
  const RegionSettings* best = nullptr;
  for (const RegionSettings& region : regions) {
    if (!region.is_prefix()) {
      if (region.name == variable) return &region;
      continue;
    }
    std::string_view stem = std::string_view(region.name).substr(0, region.name.size() - 1);
    if (variable.substr(0, stem.size()) != stem) continue;
    if (best == nullptr || region.name.size() > best->name.size()) best = &region;
  }
  return best;
}

VariableSettings Settings::ForVariable(std::string_view variable) const {
  if (const RegionSettings* region = RegionFor(variable)) {
    return {region->protocol, region->home, region->unit_pages};
  }
  return {protocol, home, unit_pages};
}

VariableSettings Settings::ForVariable(std::string_view variable, Protocol creator_protocol) const {
  VariableSettings chosen = ForVariable(variable);
  const RegionSettings* region = RegionFor(variable);
  bool region_decides = region != nullptr && region->protocol_given;
  if (!region_decides && creator_protocol != PROTOCOL_DEFAULT) chosen.protocol = creator_protocol;
  return chosen;
}

bool ModuleSettings::HasPort(std::string_view port) const {
  return std::find(ports.begin(), ports.end(), port) != ports.end();
}

int ModuleSettings::IndexOf(int rank) const {
  auto it = std::find(ranks.begin(), ranks.end(), rank);
  return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

const ModuleSettings* Settings::FindModule(std::string_view name) const {
  for (const ModuleSettings& module : modules) {
    if (module.name == name) return &module;
  }
  return nullptr;
}

const ModuleSettings* Settings::ModuleOf(int rank) const {
  for (const ModuleSettings& module : modules) {
    if (module.IndexOf(rank) >= 0) return &module;
  }
  return nullptr;
}

const LinkSettings* Settings::LinkFrom(std::string_view module, std::string_view port) const {
  for (const LinkSettings& link : links) {
    if (link.from_module == module && link.from_port == port) return &link;
  }
  return nullptr;
}

int Settings::ModuleJobSize() const {
  int size = 0;
  for (const ModuleSettings& module : modules) {
    for (int rank : module.ranks) size = std::max(size, rank + 1);
  }
  return size;
}

void Settings::CheckModulesFit(int job_size) const {
  if (modules.empty()) return;
  const std::string ranks_of_job = job_size == 1 ? "1 rank (rank 0)"
                                                 : std::to_string(job_size) + " ranks (0 to " +
                                                       std::to_string(job_size - 1) + ")";
  for (std::size_t i = 0; i < modules.size(); ++i) {
    const ModuleSettings& module = modules[i];
    for (int rank : module.ranks) {
      if (rank < job_size) continue;
      std::string where = config_file;
      if (module.line > 0) {
        where += ":" + std::to_string(module.line) + ":" + std::to_string(module.column);
      }
      Fail((where.empty() ? "" : where + ": ") + "module[" + std::to_string(i) + "].ranks: rank " +
           std::to_string(rank) + " of module " + Quoted(module.name) + " (ranks " +
           Quoted(module.ranks_text) + ") is beyond the job's " + ranks_of_job);
    }
  }
  for (int rank = 0; rank < job_size; ++rank) {
    if (ModuleOf(rank) != nullptr) continue;
    std::vector<std::string> names;
    names.reserve(modules.size());
    for (const ModuleSettings& module : modules) {
      names.push_back(module.name + " " + module.ranks_text);
    }
    Fail((config_file.empty() ? "" : config_file + ": ") + "rank " + std::to_string(rank) +
         " of the job's " + ranks_of_job +
         " is in no module; when modules are declared every "
         "rank runs one (modules: " +
         Joined(names) + ")");
  }
}

Environment ProcessEnvironment() {
  Environment env;
  for (std::string_view name : kEnvironmentVariables) {
    const char* value = std::getenv(std::string(name).c_str());
    if (value != nullptr) env.emplace(name, value);
  }
  return env;
}

Settings MakeSettings(const Config& config, const Environment& env, const std::string& config_file,
                      const SourceLines* lines) {
  Check(config, config_file, nullptr);
  Settings settings;
  settings.config_file = config_file;
  const Dsm& dsm = config.dsm();

  // The shared range: the file, then the variables, then the two together.
  if (!dsm.size().empty()) (void)CheckSize(dsm.size(), settings.dsm_bytes);
  if (!dsm.lrc_diff_limit().empty()) (void)CheckSize(dsm.lrc_diff_limit(), settings.lrc_diff_limit);
  if (std::optional<std::string> limit = Get(env, "LMDX_LRC_DIFF_LIMIT")) {
    if (auto why = CheckSize(*limit, settings.lrc_diff_limit)) Fail("LMDX_LRC_DIFF_LIMIT: " + *why);
  }
  if (!dsm.base().empty()) (void)CheckBase(dsm.base(), settings.dsm_base);
  std::optional<std::string> size_text = Get(env, "LMDX_DSM_SIZE");
  std::optional<std::string> base_text = Get(env, "LMDX_DSM_BASE");
  std::uint64_t base = settings.dsm_base;
  if (size_text) {
    if (auto why = CheckSize(*size_text, settings.dsm_bytes)) Fail("LMDX_DSM_SIZE: " + *why);
  }
  if (base_text) {
    if (auto why = CheckBase(*base_text, base)) Fail("LMDX_DSM_BASE: " + *why);
  }
  settings.dsm_base = static_cast<std::uintptr_t>(base);
  if (auto why = CheckRange(settings.dsm_base, settings.dsm_bytes)) {
    std::string names = size_text && base_text ? "LMDX_DSM_BASE and LMDX_DSM_SIZE"
                        : size_text            ? "LMDX_DSM_SIZE"
                                               : "LMDX_DSM_BASE";
    Fail(names + ": " + *why);
  }

  settings.dsm_access = ParseChoice(env, "LMDX_DSM_ACCESS", {"auto", "userfaultfd", "mprotect"},
                                    "a way of setting page access", settings.dsm_access);
  settings.dsm_one_sided = ParseChoice(env, "LMDX_DSM_ONE_SIDED", {"auto", "off"},
                                       "a way of reaching home copies", settings.dsm_one_sided);
  settings.dsm_fetch_ahead =
      ParseChoice(env, "LMDX_DSM_FETCH_AHEAD", {"auto", "off"},
                  "a choice of fetching ahead of strided faults", settings.dsm_fetch_ahead);
  settings.dsm_guard_pages =
      ParseChoice(env, "LMDX_DSM_GUARD", {"0", "1"}, "a choice of guard pages between variables",
                  dsm.guard_pages() ? "1" : "0") == "1";

  if (dsm.protocol() != PROTOCOL_DEFAULT) settings.protocol = dsm.protocol();
  settings.protocol =
      ParseEnumVariable(env, "LMDX_PROTOCOL", Protocol_descriptor(), "protocol", settings.protocol);
  // The heap's own protocol beats the default wherever that comes from, as a region's does.
  settings.heap_protocol = dsm.heap() != PROTOCOL_DEFAULT ? dsm.heap() : settings.protocol;
  if (dsm.home() != HOME_DEFAULT) settings.home = dsm.home();
  settings.home = ParseEnumVariable(env, "LMDX_DSM_HOME", Home_descriptor(), "home distribution",
                                    settings.home);
  if (dsm.unit() != 0) settings.unit_pages = dsm.unit();
  for (const Region& region : dsm.region()) {
    RegionSettings resolved;
    resolved.name = region.name();
    resolved.unit_pages = region.unit() != 0 ? region.unit() : settings.unit_pages;
    resolved.protocol =
        region.protocol() != PROTOCOL_DEFAULT ? region.protocol() : settings.protocol;
    resolved.home = region.home() != HOME_DEFAULT ? region.home() : settings.home;
    resolved.protocol_given = region.protocol() != PROTOCOL_DEFAULT;
    settings.regions.push_back(std::move(resolved));
  }

  for (int i = 0; i < config.module_size(); ++i) {
    const Module& module = config.module(i);
    ModuleSettings resolved;
    resolved.name = module.name();
    resolved.ranks_text = module.ranks();
    (void)ParseRanks(module.ranks(), resolved.ranks);
    resolved.shares_memory = module.shares_memory();
    resolved.protocol_given = module.protocol() != PROTOCOL_DEFAULT;
    resolved.protocol = resolved.protocol_given ? module.protocol() : settings.protocol;
    resolved.ports.assign(module.port().begin(), module.port().end());
    if (lines != nullptr && static_cast<std::size_t>(i) < lines->modules.size()) {
      std::tie(resolved.line, resolved.column) = lines->modules[static_cast<std::size_t>(i)];
    }
    settings.modules.push_back(std::move(resolved));
  }
  for (int i = 0; i < config.link_size(); ++i) {
    LinkSettings resolved;
    auto from = SplitEnd(config.link(i).from());
    auto to = SplitEnd(config.link(i).to());
    if (from) std::tie(resolved.from_module, resolved.from_port) = *from;
    if (to) std::tie(resolved.to_module, resolved.to_port) = *to;
    if (lines != nullptr && static_cast<std::size_t>(i) < lines->links.size()) {
      std::tie(resolved.line, resolved.column) = lines->links[static_cast<std::size_t>(i)];
    }
    settings.links.push_back(std::move(resolved));
  }

  settings.stats_enabled = config.stats().enabled();
  if (std::optional<std::string> stats = Get(env, "LMDX_STATS")) {
    if (*stats != "0" && *stats != "1") {
      Fail("LMDX_STATS: " + Quoted(*stats) + " is neither 0 (off) nor 1 (on)");
    }
    settings.stats_enabled = *stats == "1";
  }
  if (!config.stats().json().empty()) settings.stats_json = config.stats().json();
  if (std::optional<std::string> json = Get(env, "LMDX_STATS_JSON")) settings.stats_json = *json;

  if (config.threads().placement() != PLACEMENT_DEFAULT) {
    settings.placement = config.threads().placement();
  }
  settings.placement = ParseEnumVariable(env, "LMDX_PLACEMENT", Placement_descriptor(), "placement",
                                         settings.placement);

  if (config.tasks().scheduler() != Tasks::SCHEDULER_DEFAULT) {
    settings.task_scheduler = config.tasks().scheduler();
  }
  settings.task_scheduler =
      ParseEnumVariable(env, "LMDX_TASK_SCHEDULER", Tasks::Scheduler_descriptor(), "task scheduler",
                        settings.task_scheduler);
  if (config.tasks().runners() != 0) settings.task_runners = config.tasks().runners();
  if (std::optional<std::string> runners = Get(env, "LMDX_TASK_RUNNERS")) {
    char* end = nullptr;
    unsigned long value = std::strtoul(runners->c_str(), &end, 10);
    if (runners->empty() || *end != '\0' || (*runners)[0] == '-' || value < 1 ||
        value > kMaxTaskRunners) {
      Fail("LMDX_TASK_RUNNERS: " + Quoted(*runners) + " is not a number of runners from 1 to " +
           std::to_string(kMaxTaskRunners));
    }
    settings.task_runners = static_cast<std::uint32_t>(value);
  }

  if (!config.network().transport().empty()) settings.transport = config.network().transport();
  for (const PairOverride& pair : config.network().pair()) {
    settings.transport_pairs[{std::min(pair.a(), pair.b()), std::max(pair.a(), pair.b())}] =
        pair.transport();
  }
  return settings;
}

Settings LoadSettings(const Environment& env) {
  std::optional<std::string> path = Get(env, "LMDX_CONFIG");
  if (!path) return MakeSettings(Config(), env);
  std::string text = ReadFile(*path, "LMDX_CONFIG: cannot read " + *path);
  SourceLines lines;
  Config config = ParseConfigText(text, *path, &lines);
  return MakeSettings(config, env, *path, &lines);
}

Settings SettingsFromText(std::string_view text, std::string_view file_name,
                          const Environment& env) {
  std::string name(file_name);
  SourceLines lines;
  Config config = ParseConfigText(text, name, &lines);
  return MakeSettings(config, env, name, &lines);
}

const Settings& CurrentSettings() {
  // A throwing initialiser leaves it uninitialised: the next call tries again.
  static const Settings settings = LoadSettings(ProcessEnvironment());
  return settings;
}

std::string_view ProtocolName(Protocol protocol) {
  switch (protocol) {
    case PROTOCOL_DEFAULT: return "default";
    case SC: return "sc";
    case UPDATE: return "update";
    case RC: return "rc";
    case LRC: return "lrc";
    case HLRC: return "hlrc";
    default: return "unknown";
  }
}

std::string_view HomeName(Home home) {
  switch (home) {
    case HOME_DEFAULT: return "default";
    case BLOCK: return "block";
    case CYCLIC: return "cyclic";
    case FIRST_TOUCH: return "first_touch";
    default: return "unknown";
  }
}

std::string_view TaskSchedulerName(Tasks::Scheduler scheduler) {
  switch (scheduler) {
    case Tasks::SCHEDULER_DEFAULT: return "default";
    case Tasks::STEAL: return "steal";
    case Tasks::SHARE: return "share";
    case Tasks::LEAST_LOADED: return "least_loaded";
    default: return "unknown";
  }
}

std::string_view PlacementName(Placement placement) {
  switch (placement) {
    case PLACEMENT_DEFAULT: return "default";
    case ROUND_ROBIN: return "round_robin";
    case LEAST_LOADED: return "least_loaded";
    default: return "unknown";
  }
}

}  // namespace lmdx::config

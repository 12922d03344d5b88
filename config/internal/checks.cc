#include "config/internal/checks.h"

#include <map>
#include <set>
#include <tuple>

namespace lmdx::config::internal {
namespace {

const pb::FieldDescriptor* Field(const pb::Descriptor* type, int number) {
  return type->FindFieldByNumber(number);
}

template <typename IsValid>
void CheckEnum(const Checker& checker, int value, const pb::EnumDescriptor* type, IsValid is_valid,
               const char* what, Checker::Where where, const std::string& path) {
  if (is_valid(value)) return;
  checker.Error({where}, path,
                std::to_string(value) + " is not a " + what + " (" +
                    OneOf(EnumValueNames(type, false)) + ")");
}

constexpr std::uint32_t kMaxUnitPages = 256;

// 0 is "not given"; a unit holds 1 to kMaxUnitPages pages.
void CheckUnit(const Checker& checker, std::uint32_t unit, Checker::Where where,
               const std::string& path) {
  if (unit <= kMaxUnitPages) return;
  checker.Error({where}, path,
                "a coherence unit holds 1 to " + std::to_string(kMaxUnitPages) + " pages, not " +
                    std::to_string(unit));
}

void CheckRegions(const Checker& checker, const Dsm& dsm, const Tree* dsm_tree) {
  const pb::Descriptor* type = Region::descriptor();
  const pb::FieldDescriptor* region_field = Field(Dsm::descriptor(), Dsm::kRegionFieldNumber);
  const pb::FieldDescriptor* name_field = Field(type, Region::kNameFieldNumber);
  std::map<std::string, int> first_line;  // name -> 0-based line, -1 when unknown
  for (int i = 0; i < dsm.region_size(); ++i) {
    const Region& region = dsm.region(i);
    const std::string path = "dsm.region[" + std::to_string(i) + "]";
    Checker::Where region_at = Checker::Find(dsm_tree, region_field, i);
    const Tree* tree = Checker::Nested(dsm_tree, region_field, i);
    Checker::Where name_at = Checker::Find(tree, name_field, -1);
    const std::string& name = region.name();
    if (name.empty()) {
      checker.Error({name_at, region_at}, path + ".name",
                    "a region needs a name: a shared variable's name, or a prefix ending in '*'");
    }
    std::size_t star = name.find('*');
    if (star != std::string::npos && star + 1 != name.size()) {
      checker.Error({name_at, region_at}, path + ".name",
                    Quoted(name) + ": '*' may only end a name (a prefix, like \"grid_*\")");
    }
    if (name.find_first_of(" \t\n\r\f\v") != std::string::npos) {
      checker.Error({name_at, region_at}, path + ".name",
                    Quoted(name) + " has white space; a shared variable's name has none");
    }
    auto [it, inserted] = first_line.emplace(name, name_at.line);
    if (!inserted) {
      std::string first =
          it->second >= 0 ? " (first at line " + std::to_string(it->second + 1) + ")" : "";
      checker.Error({name_at, region_at}, path + ".name",
                    "the region " + Quoted(name) + " is named twice" + first);
    }
    CheckEnum(checker, region.protocol(), Protocol_descriptor(), Protocol_IsValid, "protocol",
              Checker::Find(tree, Field(type, Region::kProtocolFieldNumber), -1),
              path + ".protocol");
    CheckEnum(checker, region.home(), Home_descriptor(), Home_IsValid, "home distribution",
              Checker::Find(tree, Field(type, Region::kHomeFieldNumber), -1), path + ".home");
    CheckUnit(checker, region.unit(),
              Checker::Find(tree, Field(type, Region::kUnitFieldNumber), -1), path + ".unit");
  }
}

void CheckDsm(const Checker& checker, const Config& config) {
  const pb::Descriptor* type = Dsm::descriptor();
  const pb::FieldDescriptor* dsm_field = Field(Config::descriptor(), Config::kDsmFieldNumber);
  const Tree* tree = Checker::Nested(checker.root(), dsm_field, -1);
  const Dsm& dsm = config.dsm();
  Checker::Where size_at = Checker::Find(tree, Field(type, Dsm::kSizeFieldNumber), -1);
  Checker::Where base_at = Checker::Find(tree, Field(type, Dsm::kBaseFieldNumber), -1);

  std::uint64_t bytes = kDefaultDsmBytes;
  if (!dsm.size().empty()) {
    if (auto why = CheckSize(dsm.size(), bytes)) checker.Error({size_at}, "dsm.size", *why);
  }
  std::uint64_t base = kDefaultDsmBase;
  if (!dsm.base().empty()) {
    if (auto why = CheckBase(dsm.base(), base)) checker.Error({base_at}, "dsm.base", *why);
  }
  if (!dsm.lrc_diff_limit().empty()) {
    std::uint64_t limit = 0;
    if (auto why = CheckSize(dsm.lrc_diff_limit(), limit)) {
      checker.Error({Checker::Find(tree, Field(type, Dsm::kLrcDiffLimitFieldNumber), -1)},
                    "dsm.lrc_diff_limit", *why);
    }
  }
  if (auto why = CheckRange(base, bytes)) {
    // Blame the field the file gave; when it gave both, the size.
    if (!dsm.size().empty()) checker.Error({size_at, base_at}, "dsm.size", *why);
    checker.Error({base_at}, "dsm.base", *why);
  }
  CheckEnum(checker, dsm.protocol(), Protocol_descriptor(), Protocol_IsValid, "protocol",
            Checker::Find(tree, Field(type, Dsm::kProtocolFieldNumber), -1), "dsm.protocol");
  CheckEnum(checker, dsm.heap(), Protocol_descriptor(), Protocol_IsValid, "protocol",
            Checker::Find(tree, Field(type, Dsm::kHeapFieldNumber), -1), "dsm.heap");
  CheckEnum(checker, dsm.home(), Home_descriptor(), Home_IsValid, "home distribution",
            Checker::Find(tree, Field(type, Dsm::kHomeFieldNumber), -1), "dsm.home");
  CheckUnit(checker, dsm.unit(), Checker::Find(tree, Field(type, Dsm::kUnitFieldNumber), -1),
            "dsm.unit");
  CheckRegions(checker, dsm, tree);
}

void CheckThreads(const Checker& checker, const Config& config) {
  const Tree* tree =
      Checker::Nested(checker.root(), Field(Config::descriptor(), Config::kThreadsFieldNumber), -1);
  CheckEnum(checker, config.threads().placement(), Placement_descriptor(), Placement_IsValid,
            "placement",
            Checker::Find(tree, Field(Threads::descriptor(), Threads::kPlacementFieldNumber), -1),
            "threads.placement");
}

void CheckTasks(const Checker& checker, const Config& config) {
  const Tree* tree =
      Checker::Nested(checker.root(), Field(Config::descriptor(), Config::kTasksFieldNumber), -1);
  CheckEnum(checker, config.tasks().scheduler(), Tasks::Scheduler_descriptor(),
            Tasks::Scheduler_IsValid, "task scheduler",
            Checker::Find(tree, Field(Tasks::descriptor(), Tasks::kSchedulerFieldNumber), -1),
            "tasks.scheduler");
  if (config.tasks().runners() > kMaxTaskRunners) {
    checker.Error({Checker::Find(tree, Field(Tasks::descriptor(), Tasks::kRunnersFieldNumber), -1)},
                  "tasks.runners",
                  std::to_string(config.tasks().runners()) + " is more than " +
                      std::to_string(kMaxTaskRunners) + " runners per node");
  }
}

void CheckNetwork(const Checker& checker, const Config& config) {
  const pb::FieldDescriptor* network_field =
      Field(Config::descriptor(), Config::kNetworkFieldNumber);
  const Tree* tree = Checker::Nested(checker.root(), network_field, -1);
  const Network& network = config.network();
  const std::string networks = "(" + OneOf(NetworkNames()) + ")";
  if (!network.transport().empty() && !IsNetwork(network.transport())) {
    checker.Error(
        {Checker::Find(tree, Field(Network::descriptor(), Network::kTransportFieldNumber), -1)},
        "network.transport", Quoted(network.transport()) + " is not a network " + networks);
  }
  const pb::Descriptor* type = PairOverride::descriptor();
  const pb::FieldDescriptor* pair_field = Field(Network::descriptor(), Network::kPairFieldNumber);
  const pb::FieldDescriptor* a_field = Field(type, PairOverride::kAFieldNumber);
  const pb::FieldDescriptor* b_field = Field(type, PairOverride::kBFieldNumber);
  const pb::FieldDescriptor* transport_field = Field(type, PairOverride::kTransportFieldNumber);
  std::map<std::pair<int, int>, int> first_line;
  for (int i = 0; i < network.pair_size(); ++i) {
    const PairOverride& pair = network.pair(i);
    const std::string path = "network.pair[" + std::to_string(i) + "]";
    Checker::Where pair_at = Checker::Find(tree, pair_field, i);
    const Tree* pair_tree = Checker::Nested(tree, pair_field, i);
    Checker::Where a_at = Checker::Find(pair_tree, a_field, -1);
    Checker::Where b_at = Checker::Find(pair_tree, b_field, -1);
    Checker::Where transport_at = Checker::Find(pair_tree, transport_field, -1);
    // In text, a rank left out reads as 0; only the tree tells it from "a: 0".
    if (checker.root() != nullptr && (a_at.line < 0 || b_at.line < 0)) {
      checker.Error({pair_at}, path, "a pair needs both ranks, a and b");
    }
    if (pair.a() < 0) {
      checker.Error({a_at, pair_at}, path + ".a",
                    std::to_string(pair.a()) + " is not a rank (0 or more)");
    }
    if (pair.b() < 0) {
      checker.Error({b_at, pair_at}, path + ".b",
                    std::to_string(pair.b()) + " is not a rank (0 or more)");
    }
    if (pair.a() == pair.b()) {
      checker.Error({b_at, pair_at}, path + ".b",
                    "a pair needs two different ranks, not " + std::to_string(pair.a()) + " twice");
    }
    if (pair.transport().empty()) {
      checker.Error({transport_at, pair_at}, path + ".transport",
                    "a pair needs a network " + networks);
    }
    if (!IsNetwork(pair.transport())) {
      checker.Error({transport_at, pair_at}, path + ".transport",
                    Quoted(pair.transport()) + " is not a network " + networks);
    }
    std::pair<int, int> key{std::min(pair.a(), pair.b()), std::max(pair.a(), pair.b())};
    auto [it, inserted] = first_line.emplace(key, pair_at.line);
    if (!inserted) {
      std::string first =
          it->second >= 0 ? " (first at line " + std::to_string(it->second + 1) + ")" : "";
      checker.Error({pair_at}, path,
                    "the pair " + std::to_string(key.first) + "-" + std::to_string(key.second) +
                        " is given twice" + first);
    }
  }
}

void CheckModules(const Checker& checker, const Config& config, SourceLines* lines) {
  const pb::Descriptor* type = Module::descriptor();
  const pb::FieldDescriptor* module_field = Field(Config::descriptor(), Config::kModuleFieldNumber);
  const pb::FieldDescriptor* name_field = Field(type, Module::kNameFieldNumber);
  const pb::FieldDescriptor* ranks_field = Field(type, Module::kRanksFieldNumber);
  const pb::FieldDescriptor* protocol_field = Field(type, Module::kProtocolFieldNumber);
  const pb::FieldDescriptor* port_field = Field(type, Module::kPortFieldNumber);
  auto line_note = [](int line) {
    return line >= 0 ? " (line " + std::to_string(line + 1) + ")" : std::string();
  };
  std::map<std::string, int> module_line;                 // name -> 0-based line
  std::map<int, std::pair<std::string, int>> rank_owner;  // rank -> (module, line)
  std::map<std::string, const Module*> modules;
  for (int i = 0; i < config.module_size(); ++i) {
    const Module& module = config.module(i);
    const std::string path = "module[" + std::to_string(i) + "]";
    Checker::Where module_at = Checker::Find(checker.root(), module_field, i);
    const Tree* tree = Checker::Nested(checker.root(), module_field, i);
    Checker::Where name_at = Checker::Find(tree, name_field, -1);
    Checker::Where ranks_at = Checker::Find(tree, ranks_field, -1);
    if (lines != nullptr) {
      // Checks against the job's size blame the ranks.
      Checker::Where at = ranks_at.line >= 0 ? ranks_at : module_at;
      lines->modules.emplace_back(at.line + 1, at.column + 1);
    }
    if (auto why = CheckName(module.name(), "module")) {
      checker.Error({name_at, module_at}, path + ".name", *why);
    }
    auto [it, inserted] = module_line.emplace(module.name(), module_at.line);
    if (!inserted) {
      std::string first =
          it->second >= 0 ? " (first at line " + std::to_string(it->second + 1) + ")" : "";
      checker.Error({name_at, module_at}, path + ".name",
                    "the module " + Quoted(module.name()) + " is declared twice" + first);
    }
    modules.emplace(module.name(), &module);
    std::vector<int> ranks;
    if (auto why = ParseRanks(module.ranks(), ranks)) {
      checker.Error({ranks_at, module_at}, path + ".ranks", *why);
    }
    for (int rank : ranks) {
      auto [owner, fresh] = rank_owner.emplace(rank, std::make_pair(module.name(), module_at.line));
      if (!fresh) {
        checker.Error({ranks_at, module_at}, path + ".ranks",
                      "rank " + std::to_string(rank) + " is in module " +
                          Quoted(owner->second.first) + line_note(owner->second.second) +
                          " already; a rank runs one module");
      }
    }
    Checker::Where protocol_at = Checker::Find(tree, protocol_field, -1);
    CheckEnum(checker, module.protocol(), Protocol_descriptor(), Protocol_IsValid, "protocol",
              protocol_at, path + ".protocol");
    if (module.protocol() != PROTOCOL_DEFAULT && !module.shares_memory()) {
      checker.Error({protocol_at, module_at}, path + ".protocol",
                    "the module " + Quoted(module.name()) +
                        " names a protocol but does not share memory; add shares_memory: true, "
                        "or drop the protocol");
    }
    std::set<std::string> ports;
    for (int j = 0; j < module.port_size(); ++j) {
      const std::string port_path = path + ".port[" + std::to_string(j) + "]";
      Checker::Where port_at = Checker::Find(tree, port_field, j);
      if (auto why = CheckName(module.port(j), "port")) {
        checker.Error({port_at, module_at}, port_path, *why);
      }
      if (!ports.insert(module.port(j)).second) {
        checker.Error({port_at, module_at}, port_path,
                      "the module " + Quoted(module.name()) + " declares the port " +
                          Quoted(module.port(j)) + " twice");
      }
    }
  }

  const pb::FieldDescriptor* link_field = Field(Config::descriptor(), Config::kLinkFieldNumber);
  const pb::FieldDescriptor* from_field = Field(Link::descriptor(), Link::kFromFieldNumber);
  const pb::FieldDescriptor* to_field = Field(Link::descriptor(), Link::kToFieldNumber);
  std::map<std::string, int> linked_from;  // "module.port" -> 0-based line
  std::vector<std::string> module_names;
  module_names.reserve(modules.size());
  for (const Module& module : config.module()) module_names.push_back(module.name());
  for (int i = 0; i < config.link_size(); ++i) {
    const Link& link = config.link(i);
    const std::string path = "link[" + std::to_string(i) + "]";
    Checker::Where link_at = Checker::Find(checker.root(), link_field, i);
    if (lines != nullptr) lines->links.emplace_back(link_at.line + 1, link_at.column + 1);
    const Tree* tree = Checker::Nested(checker.root(), link_field, i);
    for (auto [field, text, end] :
         {std::tuple{from_field, &link.from(), "from"}, std::tuple{to_field, &link.to(), "to"}}) {
      Checker::Where at = Checker::Find(tree, field, -1);
      const std::string end_path = path + "." + end;
      if (text->empty()) {
        checker.Error({at, link_at}, end_path,
                      std::string("a link needs ") + end + ": a module's port, \"module.port\"");
      }
      auto split = SplitEnd(*text);
      if (!split) {
        checker.Error({at, link_at}, end_path,
                      Quoted(*text) +
                          " is not \"module.port\" (a module's name, a dot, one of "
                          "its ports)");
      }
      auto module = modules.find(split->first);
      if (module == modules.end()) {
        checker.Error({at, link_at}, end_path,
                      "no module is called " + Quoted(split->first) + " (modules: " +
                          (module_names.empty() ? "none" : Joined(module_names)) + ")");
      }
      const auto& declared = module->second->port();
      if (std::find(declared.begin(), declared.end(), split->second) == declared.end()) {
        std::vector<std::string> names(declared.begin(), declared.end());
        checker.Error({at, link_at}, end_path,
                      "the module " + Quoted(split->first) + " has no port " +
                          Quoted(split->second) +
                          " (its ports: " + (names.empty() ? "none" : Joined(names)) + ")");
      }
    }
    Checker::Where from_at = Checker::Find(tree, from_field, -1);
    auto [it, inserted] = linked_from.emplace(link.from(), link_at.line);
    if (!inserted) {
      std::string first =
          it->second >= 0 ? " (first at line " + std::to_string(it->second + 1) + ")" : "";
      checker.Error({from_at, link_at}, path + ".from",
                    "the port " + Quoted(link.from()) + " is linked twice" + first +
                        "; a port sends over one link");
    }
  }
}

}  // namespace

void Check(const Config& config, std::string_view file_name, const Tree* tree, SourceLines* lines) {
  Checker checker(file_name, tree);
  CheckDsm(checker, config);
  CheckThreads(checker, config);
  CheckTasks(checker, config);
  CheckNetwork(checker, config);
  CheckModules(checker, config, lines);
}

}  // namespace lmdx::config::internal

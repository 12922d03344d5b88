#include "config/config.h"

#include <fcntl.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <set>
#include <tuple>

#include "base/error.h"
#include "base/fd.h"
#include "config/internal/syntax_errors.h"

namespace lmdx::config {
namespace {

namespace pb = google::protobuf;
using Tree = pb::TextFormat::ParseInfoTree;

constexpr std::uint64_t kKiB = 1024;

[[noreturn]] void Fail(const std::string& text) { throw Error(LMDX_ERR_CONFIG, text); }

std::string Hex(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string digits;
  do {
    digits.insert(digits.begin(), kDigits[value % 16]);
    value /= 16;
  } while (value != 0);
  return "0x" + digits;
}

// "64 GiB", "512 MiB", "4 KiB" when exact, else "N bytes".
std::string Bytes(std::uint64_t bytes) {
  static constexpr std::pair<unsigned, const char*> kUnits[] = {
      {40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}};
  for (auto [shift, unit] : kUnits) {
    std::uint64_t one = std::uint64_t{1} << shift;
    if (bytes >= one && bytes % one == 0) return std::to_string(bytes / one) + " " + unit;
  }
  return std::to_string(bytes) + " bytes";
}

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string Lower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

// "a, b, c or d".
std::string OneOf(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

// The values of an enumeration users may write: every one but the *_DEFAULT placeholder.
std::vector<std::string> EnumValueNames(const pb::EnumDescriptor* type, bool lower) {
  std::vector<std::string> names;
  for (int i = 0; i < type->value_count(); ++i) {
    if (type->value(i)->number() == 0) continue;
    names.push_back(lower ? Lower(type->value(i)->name()) : type->value(i)->name());
  }
  return names;
}

// The networks net/transport_choice.h knows ("any" and kNetworkPreference); config sits below net
// and keeps its own copy so that a file's mistake is reported with its line.
const std::vector<std::string>& NetworkNames() {
  static const std::vector<std::string> names = {"any", "shm", "fabric", "tcp", "udp"};
  return names;
}

bool IsNetwork(std::string_view name) {
  const std::vector<std::string>& names = NetworkNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Sizes: a whole number with an optional binary unit K, M, G or T (either case); a positive
// multiple of the page that fits in the user half of the address space. Returns the reason it is
// not one, or nothing.
std::optional<std::string> CheckSize(std::string_view text, std::uint64_t& bytes) {
  const std::string how =
      "write a whole number of bytes with an optional K, M, G or T, like \"64G\"";
  if (!text.empty() && text.front() == '-') return Quoted(text) + " is negative; " + how;
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return Quoted(text) + " is not a size; " + how;
  std::string_view unit = text.substr(digits);
  unsigned shift = 0;
  if (!unit.empty()) {
    std::string lower = Lower(unit);
    if (lower == "k") {
      shift = 10;
    } else if (lower == "m") {
      shift = 20;
    } else if (lower == "g") {
      shift = 30;
    } else if (lower == "t") {
      shift = 40;
    } else {
      return Quoted(text) + " has an unknown unit " + Quoted(unit) + "; " + how;
    }
  }
  // Anything of 2^47 or more is too large anyway: stop before the arithmetic can overflow.
  std::uint64_t number = 0;
  bool too_large = false;
  for (std::size_t i = 0; i < digits; ++i) {
    number = number * 10 + static_cast<std::uint64_t>(text[i] - '0');
    if (number >= kUserSpaceEnd) too_large = true;
    if (too_large) break;
  }
  if (!too_large && number > ((kUserSpaceEnd - 1) >> shift)) too_large = true;
  if (too_large) {
    return Quoted(text) + " is larger than the user half of the address space (" +
           Bytes(kUserSpaceEnd) + ")";
  }
  bytes = number << shift;
  if (bytes == 0) return Quoted(text) + " is zero; the shared range needs at least one page";
  if (bytes % kPageBytes != 0) {
    return Quoted(text) + " is not a whole number of " + Bytes(kPageBytes) + " pages";
  }
  return std::nullopt;
}

// The base: 0x and hexadecimal digits, page aligned, in [kLowestBase, kUserSpaceEnd).
std::optional<std::string> CheckBase(std::string_view text, std::uint64_t& base) {
  const std::string how = "write it in hexadecimal with 0x, like \"0x600000000000\"";
  if (text.size() < 3 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    return Quoted(text) + " is not a hexadecimal address; " + how;
  }
  std::uint64_t value = 0;
  bool too_large = false;
  for (char c : text.substr(2)) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) return Quoted(text) + " is not a hexadecimal address; " + how;
    if (value >= kUserSpaceEnd) too_large = true;  // keeps reading, to report bad digits first
    if (!too_large) value = value * 16 + static_cast<std::uint64_t>(digit);
  }
  if (too_large || value >= kUserSpaceEnd) {
    return Quoted(text) + " is not in the user half of the x86-64 address space (below " +
           Hex(kUserSpaceEnd) + ")";
  }
  if (value < kLowestBase) {
    return Quoted(text) + " is below " + Hex(kLowestBase) +
           ", the lowest address Linux maps by default";
  }
  if (value % kPageBytes != 0) {
    return Quoted(text) + " is not aligned to a " + Bytes(kPageBytes) + " page";
  }
  base = value;
  return std::nullopt;
}

// The whole range must lie in the user half.
std::optional<std::string> CheckRange(std::uint64_t base, std::uint64_t bytes) {
  if (bytes <= kUserSpaceEnd - base) return std::nullopt;
  return "the shared range of " + Bytes(bytes) + " from " + Hex(base) + " would end at " +
         Hex(base + bytes) + ", past the user half of the x86-64 address space (" +
         Hex(kUserSpaceEnd) + ")";
}

const pb::FieldDescriptor* Field(const pb::Descriptor* type, int number) {
  return type->FindFieldByNumber(number);
}

// Locations of fields in the parsed text, and errors that name them. Without a tree (a Config
// that did not come from text) the messages name the field only.
class Checker {
 public:
  Checker(std::string_view file_name, const Tree* tree) : file_(file_name), tree_(tree) {}

  // Where a field is written: 0-based line and column, or line -1.
  struct Where {
    int line = -1;
    int column = -1;
  };

  // Another node of the tree: the message held in field (index -1 when not repeated).
  static const Tree* Nested(const Tree* tree, const pb::FieldDescriptor* field, int index) {
    return tree == nullptr ? nullptr : tree->GetTreeForNested(field, index);
  }
  static Where Find(const Tree* tree, const pb::FieldDescriptor* field, int index) {
    if (tree == nullptr) return {};
    pb::TextFormat::ParseLocation at = tree->GetLocation(field, index);
    return {at.line, at.column};
  }
  const Tree* root() const { return tree_; }

  // "FILE:LINE:COL: PATH: reason", the first location known among those given.
  [[noreturn]] void Error(std::initializer_list<Where> places, const std::string& path,
                          const std::string& reason) const {
    Where at;
    for (Where where : places) {
      if (where.line >= 0) {
        at = where;
        break;
      }
    }
    std::string text = Prefix(at);
    text += path;
    text += ": ";
    text += reason;
    Fail(text);
  }

  std::string Prefix(Where where) const {
    std::string prefix = file_;
    if (where.line >= 0) {
      prefix += ":" + std::to_string(where.line + 1) + ":" + std::to_string(where.column + 1);
    }
    return prefix.empty() ? prefix : prefix + ": ";
  }

 private:
  std::string file_;
  const Tree* tree_;
};

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

// The most runners a node may have: each is an OS thread of its own.
constexpr std::uint32_t kMaxTaskRunners = 64;

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

// Module and port names: letters, digits, '_' and '-' (a '.' joins them in "module.port").
std::optional<std::string> CheckName(std::string_view name, const char* what) {
  if (name.empty()) return std::string("a ") + what + " needs a name";
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) {
      return Quoted(name) + " is not a " + what +
             " name: use letters, digits, '_' and '-' only (found '" + std::string(1, c) + "')";
    }
  }
  return std::nullopt;
}

// A rank list: ranks and ranges separated by commas ("0", "1-3", "0,2,5-7"), each rank once.
// White space around the items is allowed.
std::optional<std::string> ParseRanks(std::string_view text, std::vector<int>& ranks) {
  const std::string how =
      "write ranks and ranges separated by commas, like \"0\", \"1-3\" or "
      "\"0,2,5-7\"";
  constexpr long kMaxRank = (1 << 20) - 1;
  ranks.clear();
  if (text.find_first_not_of(" \t") == std::string_view::npos) {
    return "a module needs ranks; " + how;
  }
  auto trim = [](std::string_view item) {
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    return item;
  };
  // A whole number; -1 when it is none.
  auto number = [](std::string_view digits) -> long {
    if (digits.empty() || digits.size() > 7) return -1;
    long value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return -1;
      value = value * 10 + (c - '0');
    }
    return value;
  };
  std::set<int> seen;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = text.find(',', start);
    std::string_view item = trim(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (item.empty()) return Quoted(text) + " has an empty item; " + how;
    std::size_t dash = item.find('-', 1);
    long first = number(trim(item.substr(0, dash)));
    long last = dash == std::string_view::npos ? first : number(trim(item.substr(dash + 1)));
    if (first < 0 || last < 0) {
      if (!item.empty() && item.front() == '-') {
        return Quoted(text) + ": " + Quoted(item) + " is negative; ranks are 0 or more";
      }
      return Quoted(text) + ": " + Quoted(item) + " is not a rank or a range; " + how;
    }
    if (first > kMaxRank || last > kMaxRank) {
      return Quoted(text) + ": " + Quoted(item) + " is beyond the largest rank, " +
             std::to_string(kMaxRank);
    }
    if (last < first) {
      return Quoted(text) + ": the range " + Quoted(item) + " runs backwards; write \"" +
             std::to_string(last) + "-" + std::to_string(first) + "\"";
    }
    for (long rank = first; rank <= last; ++rank) {
      if (!seen.insert(static_cast<int>(rank)).second) {
        return Quoted(text) + " lists rank " + std::to_string(rank) + " twice";
      }
      ranks.push_back(static_cast<int>(rank));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return std::nullopt;
}

// "module.port", split; nothing when it is not of that form.
std::optional<std::pair<std::string, std::string>> SplitEnd(std::string_view text) {
  std::size_t dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == text.size() ||
      text.find('.', dot + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  return std::make_pair(std::string(text.substr(0, dot)), std::string(text.substr(dot + 1)));
}

std::string Joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
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

void Check(const Config& config, std::string_view file_name, const Tree* tree,
           SourceLines* lines = nullptr) {
  Checker checker(file_name, tree);
  CheckDsm(checker, config);
  CheckThreads(checker, config);
  CheckTasks(checker, config);
  CheckNetwork(checker, config);
  CheckModules(checker, config, lines);
}

// Where each message type of the schema sits in a file: "lmdx.config.Dsm" -> "dsm".
void CollectPaths(const pb::Descriptor* type, const std::string& path,
                  std::map<std::string, std::string>& paths) {
  if (!paths.emplace(type->full_name(), path).second) return;
  for (int i = 0; i < type->field_count(); ++i) {
    const pb::FieldDescriptor* field = type->field(i);
    if (field->message_type() == nullptr) continue;
    CollectPaths(field->message_type(), path.empty() ? field->name() : path + "." + field->name(),
                 paths);
  }
}

// The enumeration of the schema's field with this name, if one has it.
const pb::EnumDescriptor* EnumFieldType(const pb::Descriptor* type, const std::string& name,
                                        std::set<const pb::Descriptor*>& seen) {
  if (!seen.insert(type).second) return nullptr;
  for (int i = 0; i < type->field_count(); ++i) {
    const pb::FieldDescriptor* field = type->field(i);
    if (field->name() == name && field->enum_type() != nullptr) return field->enum_type();
    if (field->message_type() != nullptr) {
      if (const pb::EnumDescriptor* found = EnumFieldType(field->message_type(), name, seen)) {
        return found;
      }
    }
  }
  return nullptr;
}

// Two of protobuf's messages, said in the file's terms and with the choices there are; any other
// message is kept as it is.
std::string Explain(const std::string& message) {
  const std::string no_field_head = "Message type \"";
  const std::string no_field_mid = "\" has no field named \"";
  std::size_t mid = message.find(no_field_mid);
  if (message.rfind(no_field_head, 0) == 0 && mid != std::string::npos) {
    std::string type_name = message.substr(no_field_head.size(), mid - no_field_head.size());
    std::size_t name_start = mid + no_field_mid.size();
    std::size_t name_end = message.find('"', name_start);
    const pb::Descriptor* type =
        pb::DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
    if (type == nullptr || name_end == std::string::npos) return message;
    std::map<std::string, std::string> paths;
    CollectPaths(Config::descriptor(), "", paths);
    auto path = paths.find(type_name);
    if (path == paths.end()) return message;
    std::vector<std::string> fields;
    fields.reserve(static_cast<std::size_t>(type->field_count()));
    for (int i = 0; i < type->field_count(); ++i) fields.push_back(type->field(i)->name());
    std::string where = path->second.empty() ? "at the top level" : "in " + path->second;
    return "unknown field \"" + message.substr(name_start, name_end - name_start) + "\" " + where +
           " (known: " + OneOf(fields) + ")";
  }
  const std::string enum_head = "Unknown enumeration value of \"";
  const std::string enum_mid = "\" for field \"";
  mid = message.find(enum_mid);
  if (message.rfind(enum_head, 0) == 0 && mid != std::string::npos) {
    std::string value = message.substr(enum_head.size(), mid - enum_head.size());
    std::size_t name_start = mid + enum_mid.size();
    std::size_t name_end = message.find('"', name_start);
    if (name_end == std::string::npos) return message;
    std::string field = message.substr(name_start, name_end - name_start);
    std::set<const pb::Descriptor*> seen;
    const pb::EnumDescriptor* type = EnumFieldType(Config::descriptor(), field, seen);
    if (type == nullptr) return message;
    return "unknown value \"" + value + "\" for " + field + " (" +
           OneOf(EnumValueNames(type, false)) + ")";
  }
  return message;
}

// Keeps protobuf's first error and where it was.
class FirstError : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (found_) return;
    found_ = true;
    where_ = {line, column};
    message_ = message;
  }
  bool found() const { return found_; }
  Checker::Where where() const { return where_; }
  const std::string& message() const { return message_; }

 private:
  bool found_ = false;
  Checker::Where where_;
  std::string message_;
};

// Protobuf reports a few errors once it has read the token at fault: at the token after it. These
// are moved back to the token at fault (the unknown name, the bad value).
bool ReportedAfterTheToken(const std::string& message) {
  for (const char* text : {"has no field named", "Unknown enumeration value",
                           "is specified multiple times", "Invalid value for boolean field"}) {
    if (message.find(text) != std::string::npos) return true;
  }
  return false;
}

// The start of the last token before `where`, counted as protobuf's parser counts (tabs to the
// next multiple of 8).
Checker::Where TokenBefore(std::string_view text, Checker::Where where) {
  Checker::Where previous = where;
  for (const internal::Token& token : internal::Tokenize(text)) {
    if (token.line > where.line || (token.line == where.line && token.column >= where.column)) {
      break;
    }
    previous = {token.line, token.column};
  }
  return previous;
}

// The whole file, or the reason (with errno) it cannot be read.
std::string ReadFile(const std::string& path, const std::string& what) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) Fail(SystemErrorText(what, errno));
  std::string text;
  char buffer[16 * kKiB];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Fail(SystemErrorText(what, errno));
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

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

Config ParseConfigText(std::string_view text, std::string_view file_name, SourceLines* lines) {
  Config config;
  FirstError errors;
  Tree tree;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  parser.AllowUnknownField(false);
  parser.AllowUnknownExtension(false);
  bool parsed = parser.ParseFromString(std::string(text), &config);
  if (!parsed || errors.found()) {
    Checker checker(file_name, nullptr);
    if (!errors.found()) Fail(checker.Prefix({}) + "cannot parse the file");
    Checker::Where where = errors.where();
    if (where.line >= 0 && ReportedAfterTheToken(errors.message())) {
      where = TokenBefore(text, where);
    }
    if (where.line >= 0) {
      if (auto syntax =
              internal::ExplainSyntaxError(text, where.line, where.column, errors.message())) {
        Fail(checker.Prefix({syntax->line, syntax->column}) + syntax->message);
      }
    }
    Fail(checker.Prefix(where) + Explain(errors.message()));
  }
  if (lines != nullptr) *lines = SourceLines();
  Check(config, file_name, &tree, lines);
  return config;
}

Config LoadConfigFile(const std::string& path, SourceLines* lines) {
  return ParseConfigText(ReadFile(path, path + ": cannot read the configuration file"), path,
                         lines);
}

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

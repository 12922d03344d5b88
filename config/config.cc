#include "config/config.h"

#include <fcntl.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <set>

#include "base/error.h"
#include "base/fd.h"

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
  if (auto why = CheckRange(base, bytes)) {
    // Blame the field the file gave; when it gave both, the size.
    if (!dsm.size().empty()) checker.Error({size_at, base_at}, "dsm.size", *why);
    checker.Error({base_at}, "dsm.base", *why);
  }
  CheckEnum(checker, dsm.protocol(), Protocol_descriptor(), Protocol_IsValid, "protocol",
            Checker::Find(tree, Field(type, Dsm::kProtocolFieldNumber), -1), "dsm.protocol");
  CheckEnum(checker, dsm.home(), Home_descriptor(), Home_IsValid, "home distribution",
            Checker::Find(tree, Field(type, Dsm::kHomeFieldNumber), -1), "dsm.home");
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

void Check(const Config& config, std::string_view file_name, const Tree* tree) {
  Checker checker(file_name, tree);
  CheckDsm(checker, config);
  CheckThreads(checker, config);
  CheckNetwork(checker, config);
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

class IgnoreErrors : public pb::io::ErrorCollector {
 public:
  void AddError(int /*line*/, pb::io::ColumnNumber /*column*/,
                const std::string& /*message*/) override {}
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
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  IgnoreErrors ignore;
  pb::io::Tokenizer tokenizer(&input, &ignore);
  tokenizer.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);
  tokenizer.set_allow_f_after_float(true);
  tokenizer.set_require_space_after_number(false);
  Checker::Where previous = where;
  while (tokenizer.Next()) {
    const pb::io::Tokenizer::Token& token = tokenizer.current();
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

}  // namespace

Config ParseConfigText(std::string_view text, std::string_view file_name) {
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
    Fail(checker.Prefix(where) + Explain(errors.message()));
  }
  Check(config, file_name, &tree);
  return config;
}

Config LoadConfigFile(const std::string& path) {
  return ParseConfigText(ReadFile(path, path + ": cannot read the configuration file"), path);
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
    return {region->protocol, region->home};
  }
  return {protocol, home};
}

Environment ProcessEnvironment() {
  Environment env;
  for (std::string_view name : kEnvironmentVariables) {
    const char* value = std::getenv(std::string(name).c_str());
    if (value != nullptr) env.emplace(name, value);
  }
  return env;
}

Settings MakeSettings(const Config& config, const Environment& env,
                      const std::string& config_file) {
  Check(config, config_file, nullptr);
  Settings settings;
  settings.config_file = config_file;
  const Dsm& dsm = config.dsm();

  // The shared range: the file, then the variables, then the two together.
  if (!dsm.size().empty()) (void)CheckSize(dsm.size(), settings.dsm_bytes);
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

  if (dsm.protocol() != PROTOCOL_DEFAULT) settings.protocol = dsm.protocol();
  settings.protocol =
      ParseEnumVariable(env, "LMDX_PROTOCOL", Protocol_descriptor(), "protocol", settings.protocol);
  if (dsm.home() != HOME_DEFAULT) settings.home = dsm.home();
  settings.home = ParseEnumVariable(env, "LMDX_DSM_HOME", Home_descriptor(), "home distribution",
                                    settings.home);
  for (const Region& region : dsm.region()) {
    RegionSettings resolved;
    resolved.name = region.name();
    resolved.protocol =
        region.protocol() != PROTOCOL_DEFAULT ? region.protocol() : settings.protocol;
    resolved.home = region.home() != HOME_DEFAULT ? region.home() : settings.home;
    settings.regions.push_back(std::move(resolved));
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
  return MakeSettings(ParseConfigText(text, *path), env, *path);
}

Settings SettingsFromText(std::string_view text, std::string_view file_name,
                          const Environment& env) {
  std::string name(file_name);
  return MakeSettings(ParseConfigText(text, name), env, name);
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

std::string_view PlacementName(Placement placement) {
  switch (placement) {
    case PLACEMENT_DEFAULT: return "default";
    case ROUND_ROBIN: return "round_robin";
    case LEAST_LOADED: return "least_loaded";
    default: return "unknown";
  }
}

}  // namespace lmdx::config

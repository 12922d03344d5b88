#include "config/internal/values.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <set>

#include "base/error.h"
#include "base/fd.h"
#include "config/config.h"

namespace lmdx::config::internal {

namespace pb = google::protobuf;

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

}  // namespace lmdx::config::internal

// Small pieces of the configuration layer's checks and texts, shared by the file's checks
// (checks.cc), its parser (config.cc) and the settings and environment overrides (settings.cc).
#ifndef LMDX_CONFIG_INTERNAL_VALUES_H_
#define LMDX_CONFIG_INTERNAL_VALUES_H_

#include <google/protobuf/descriptor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lmdx::config::internal {

// Throws lmdx::Error(LMDX_ERR_CONFIG, text): every mistake in a file or a variable ends here.
[[noreturn]] void Fail(const std::string& text);

std::string Hex(std::uint64_t value);
// "64 GiB", "512 MiB", "4 KiB" when exact, else "N bytes".
std::string Bytes(std::uint64_t bytes);
std::string Quoted(std::string_view text);
std::string Lower(std::string_view text);
// "a, b, c or d".
std::string OneOf(const std::vector<std::string>& names);
// "a, b, c".
std::string Joined(const std::vector<std::string>& names);
// The values of an enumeration users may write: every one but the *_DEFAULT placeholder.
std::vector<std::string> EnumValueNames(const google::protobuf::EnumDescriptor* type, bool lower);

// The networks a file may name ("any" and the transports).
const std::vector<std::string>& NetworkNames();
bool IsNetwork(std::string_view name);

// Each returns the reason the text is not a valid value, or nothing (and sets the value).
std::optional<std::string> CheckSize(std::string_view text, std::uint64_t& bytes);
std::optional<std::string> CheckBase(std::string_view text, std::uint64_t& base);
std::optional<std::string> CheckRange(std::uint64_t base, std::uint64_t bytes);
std::optional<std::string> CheckName(std::string_view name, const char* what);
std::optional<std::string> ParseRanks(std::string_view text, std::vector<int>& ranks);
// The whole file; throws (Fail) with what and errno's text when it cannot be read.
std::string ReadFile(const std::string& path, const std::string& what);

// The most task runners a node may have (tasks.runners, LMDX_TASK_RUNNERS): each is an OS thread
// of its own.
inline constexpr std::uint32_t kMaxTaskRunners = 64;

// "module.port", split; nothing when it is not of that form.
std::optional<std::pair<std::string, std::string>> SplitEnd(std::string_view text);

}  // namespace lmdx::config::internal

#endif  // LMDX_CONFIG_INTERNAL_VALUES_H_

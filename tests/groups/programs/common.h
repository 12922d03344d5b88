// Helpers the group test programs share: checks that end the job naming the rank, and byte
// patterns every rank can compute alone, so each received byte is checked against what its
// sender wrote.
#ifndef LMDX_TESTS_GROUPS_PROGRAMS_COMMON_H_
#define LMDX_TESTS_GROUPS_PROGRAMS_COMMON_H_

#include <lmdx/lmdx.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace group_checks {

[[noreturn]] inline void Die(const std::string& what) {
  std::string text = "rank " + std::to_string(lmdx_rank()) + ": FAILED: " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

inline void Check(bool ok, const std::string& what) {
  if (!ok) Die(what);
}

inline void Ok(int code, const char* call) {
  if (code != LMDX_OK) {
    Die(std::string(call) + " returned " + std::to_string(code) + " (" + lmdx_last_error_message() +
        ")");
  }
}

// Byte `offset` of block `block` of the data tagged `salt`: a mix of all three, so a byte from
// another collective, another sender or another place differs (but for 1 in 256 chance per byte;
// a block never matches by chance).
inline std::uint8_t PatternByte(std::uint64_t salt, std::uint64_t block, std::uint64_t offset) {
  std::uint64_t x = salt * 0x9E3779B97F4A7C15ull ^ (block + 1) * 0xC2B2AE3D27D4EB4Full ^
                    (offset + 1) * 0x165667B19E3779F9ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<std::uint8_t>(x);
}

inline void Fill(void* buffer, std::size_t length, std::uint64_t salt, std::uint64_t block) {
  auto* bytes = static_cast<std::uint8_t*>(buffer);
  for (std::size_t i = 0; i < length; ++i) bytes[i] = PatternByte(salt, block, i);
}

// Empty when buffer holds the pattern; else where and what differs.
inline std::string Differs(const void* buffer, std::size_t length, std::uint64_t salt,
                           std::uint64_t block) {
  const auto* bytes = static_cast<const std::uint8_t*>(buffer);
  for (std::size_t i = 0; i < length; ++i) {
    std::uint8_t want = PatternByte(salt, block, i);
    if (bytes[i] != want) {
      return "byte " + std::to_string(i) + " of " + std::to_string(length) + " is " +
             std::to_string(bytes[i]) + ", expected " + std::to_string(want) + " (block " +
             std::to_string(block) + ")";
    }
  }
  return {};
}

inline void Expect(const void* buffer, std::size_t length, std::uint64_t salt, std::uint64_t block,
                   const std::string& what) {
  std::string problem = Differs(buffer, length, salt, block);
  if (!problem.empty()) Die(what + ": " + problem);
}

}  // namespace group_checks

#endif  // LMDX_TESTS_GROUPS_PROGRAMS_COMMON_H_

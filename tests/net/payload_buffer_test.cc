#include "net/internal/payload_buffer.h"

#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace lmdx::net::internal {
namespace {

// The VmFlags line of the mapping of this process that holds address, from /proc/self/smaps.
std::optional<std::string> FlagsOfMappingAt(const void* address) {
  auto where = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t begin = 0;
    std::uintptr_t end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-' && line.find(' ') != 0) {
      inside = begin <= where && where < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return std::nullopt;
}

bool HasFlag(const std::string& flags, const std::string& flag) {
  return (flags + " ").find(" " + flag + " ") != std::string::npos;
}

bool KernelHasHugePages() {
  return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
}

TEST(PayloadBufferTest, LargePayloadAsksForHugePagesInsideItsOwnBytesOnly) {
  if (!KernelHasHugePages()) GTEST_SKIP() << "this kernel has no transparent huge pages";
  constexpr std::uint64_t kLength = 3 * kHugePayloadBytes;
  auto buffer = AllocatePayload(kLength);
  auto start = reinterpret_cast<std::uintptr_t>(buffer.get());
  std::uintptr_t huge = std::uintptr_t{2} << 20;
  std::uintptr_t first_whole = (start + huge - 1) & ~(huge - 1);

  auto inside = FlagsOfMappingAt(reinterpret_cast<void*>(first_whole + huge / 2));
  ASSERT_TRUE(inside.has_value());
  EXPECT_TRUE(HasFlag(*inside, "hg")) << *inside;
  // The bytes before the first whole huge page belong to the allocator too (its chunk header):
  // they keep their own advice.
  if (first_whole > start) {
    auto before = FlagsOfMappingAt(buffer.get());
    ASSERT_TRUE(before.has_value());
    EXPECT_FALSE(HasFlag(*before, "hg")) << *before;
  }
}

TEST(PayloadBufferTest, EveryByteOfALargePayloadHoldsWhatWasWritten) {
  constexpr std::uint64_t kLength = kHugePayloadBytes + 12345;
  auto buffer = AllocatePayload(kLength);
  for (std::uint64_t i = 0; i < kLength; ++i) buffer[i] = static_cast<std::uint8_t>(i * 7 + 3);
  for (std::uint64_t i = 0; i < kLength; ++i) {
    ASSERT_EQ(buffer[i], static_cast<std::uint8_t>(i * 7 + 3)) << "byte " << i;
  }
}

TEST(PayloadBufferTest, SmallPayloadIsAPlainBuffer) {
  auto buffer = AllocatePayload(100);
  ASSERT_NE(buffer, nullptr);
  for (int i = 0; i < 100; ++i) buffer[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(buffer[99], 99);
}

}  // namespace
}  // namespace lmdx::net::internal

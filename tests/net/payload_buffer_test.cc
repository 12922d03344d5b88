#include "net/internal/payload_buffer.h"

#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

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

TEST(PayloadBufferTest, AFreedLargeBufferServesTheNextLargePayloadOfAboutItsSize) {
  FreeCachedPayloads();
  constexpr std::uint64_t kLength = 2 * kHugePayloadBytes;
  const std::uint8_t* first = nullptr;
  std::uint64_t cached_before = CachedPayloadBytes();
  EXPECT_EQ(cached_before, 0u);
  {
    PayloadBuffer buffer = AllocatePayload(kLength);
    first = buffer.get();
    buffer[kLength - 1] = 42;
  }
  EXPECT_EQ(CachedPayloadBytes(), cached_before + kLength);
  {
    // Smaller, but more than half: the kept buffer serves it.
    PayloadBuffer again = AllocatePayload(kLength - 4096);
    EXPECT_EQ(again.get(), first);
    EXPECT_EQ(CachedPayloadBytes(), cached_before);
  }
  {
    // Less than half its size: a kept buffer that large is not pinned by it.
    PayloadBuffer smaller = AllocatePayload(kHugePayloadBytes - 1);
    EXPECT_NE(smaller.get(), first);
    // Larger than any kept buffer: a fresh one.
    PayloadBuffer larger = AllocatePayload(kLength + 1);
    EXPECT_NE(larger.get(), first);
  }
}

TEST(PayloadBufferTest, KeptBuffersStayWithinTheLimitTheOldestGoingFirst) {
  FreeCachedPayloads();
  constexpr std::uint64_t kLength = kCachedPayloadLimit / 3;
  std::vector<PayloadBuffer> buffers;
  for (int i = 0; i < 5; ++i) buffers.push_back(AllocatePayload(kLength + i));
  const std::uint8_t* newest = buffers.back().get();
  buffers.clear();  // freed oldest first
  EXPECT_LE(CachedPayloadBytes(), kCachedPayloadLimit);
  EXPECT_GE(CachedPayloadBytes(), 2 * kLength);
  // The most recently freed is among those kept.
  std::vector<PayloadBuffer> again;
  bool found = false;
  for (int i = 0; i < 3; ++i) {
    again.push_back(AllocatePayload(kLength));
    found |= again.back().get() == newest;
  }
  EXPECT_TRUE(found);
  // A buffer larger than the limit is never kept.
  again.clear();
  std::uint64_t before = CachedPayloadBytes();
  { PayloadBuffer huge = AllocatePayload(kCachedPayloadLimit + 1); }
  EXPECT_EQ(CachedPayloadBytes(), before);
}

TEST(PayloadBufferTest, SmallPayloadIsAPlainBuffer) {
  std::uint64_t cached_before = CachedPayloadBytes();
  {
    auto buffer = AllocatePayload(100);
    ASSERT_NE(buffer, nullptr);
    for (int i = 0; i < 100; ++i) buffer[i] = static_cast<std::uint8_t>(i);
    EXPECT_EQ(buffer[99], 99);
  }
  EXPECT_EQ(CachedPayloadBytes(), cached_before) << "a small buffer was kept";
}

}  // namespace
}  // namespace lmdx::net::internal

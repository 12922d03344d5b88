// Diffs from a peer are applied to pages: a malformed one must be refused before any byte is
// written, and one made by AppendDiff must turn the twin into the page exactly.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "base/error.h"
#include "consistency/diff.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

constexpr std::size_t kPage = 4096;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lmdx::consistency;
  // 1: the input as an encoded diff, from a stranger.
  std::array<std::byte, kPage> page{};
  std::array<std::byte, kPage> before{};
  std::memset(page.data(), 0x5a, kPage);
  before = page;
  try {
    ApplyDiff(std::span<const std::uint8_t>(data, size), page.data(), kPage);
    static_cast<void>(ChangedBytes(std::span<const std::uint8_t>(data, size)));
  } catch (const lmdx::Error&) {
    if (page != before) std::abort();  // refused, but wrote something first
  }
  // 2: the input as edits of a twin; the diff must reproduce them.
  lmdx::fuzz::FuzzInput input(data, size);
  std::array<std::byte, kPage> twin{};
  for (std::size_t i = 0; i < kPage; ++i) twin[i] = static_cast<std::byte>(i * 7);
  std::array<std::byte, kPage> edited = twin;
  while (input.left() >= 3) {
    std::size_t at = ((std::size_t{input.Byte()} << 8) | input.Byte()) % kPage;
    edited[at] = static_cast<std::byte>(input.Byte());
  }
  Diff diff;
  AppendDiff(twin.data(), edited.data(), kPage, diff);
  std::array<std::byte, kPage> rebuilt = twin;
  ApplyDiff(diff, rebuilt.data(), kPage);
  if (rebuilt != edited) std::abort();
  return 0;
}

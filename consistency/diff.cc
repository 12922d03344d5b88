#include "consistency/diff.h"

#include <algorithm>

#include <cstring>
#include <string>

#include "base/error.h"

namespace lmdx::consistency {
namespace {

constexpr std::size_t kRunHeader = 8;

void PutU32(Diff& out, std::uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8)
    out.push_back(static_cast<std::uint8_t>(value >> shift));
}

std::uint32_t GetU32(const std::uint8_t* in) {
  return static_cast<std::uint32_t>(in[0]) | static_cast<std::uint32_t>(in[1]) << 8 |
         static_cast<std::uint32_t>(in[2]) << 16 | static_cast<std::uint32_t>(in[3]) << 24;
}

std::uint64_t Word(const std::byte* at) {
  std::uint64_t word;
  std::memcpy(&word, at, sizeof word);
  return word;
}

// Walks the runs of an encoded diff, checking each against the page size; calls use(offset,
// length, bytes) for each.
template <typename Use>
void ForEachRun(std::span<const std::uint8_t> diff, std::size_t bytes, Use use) {
  std::size_t at = 0;
  std::size_t previous_end = 0;
  bool first = true;
  while (at < diff.size()) {
    if (diff.size() - at < kRunHeader) {
      throw Error(LMDX_ERR_INTERNAL, "a diff ends inside a run header");
    }
    std::size_t offset = GetU32(diff.data() + at);
    std::size_t length = GetU32(diff.data() + at + 4);
    at += kRunHeader;
    if (length == 0 || length > diff.size() - at || offset > bytes || length > bytes - offset ||
        (!first && offset <= previous_end)) {
      throw Error(LMDX_ERR_INTERNAL, "a malformed diff run (offset " + std::to_string(offset) +
                                         ", length " + std::to_string(length) + ", page of " +
                                         std::to_string(bytes) + " bytes)");
    }
    use(offset, length, diff.data() + at);
    at += length;
    previous_end = offset + length;
    first = false;
  }
}

}  // namespace

std::size_t AppendDiff(const std::byte* twin, const std::byte* page, std::size_t bytes, Diff& out) {
  const std::size_t start_size = out.size();
  std::size_t at = 0;
  while (at < bytes) {
    // Skip equal bytes a word at a time where the page is long enough: most of a page is equal.
    while (at + 8 <= bytes && Word(twin + at) == Word(page + at)) at += 8;
    while (at < bytes && twin[at] == page[at]) ++at;
    if (at == bytes) break;
    std::size_t run_start = at;
    while (at < bytes && twin[at] != page[at]) ++at;
    auto length = static_cast<std::uint32_t>(at - run_start);
    PutU32(out, static_cast<std::uint32_t>(run_start));
    PutU32(out, length);
    const auto* changed = reinterpret_cast<const std::uint8_t*>(page + run_start);
    out.insert(out.end(), changed, changed + length);
  }
  return out.size() - start_size;
}

std::size_t AppendMarkedRuns(const std::byte* page, const std::vector<bool>& marked, Diff& out) {
  const std::size_t start_size = out.size();
  const std::size_t bytes = marked.size();
  std::size_t at = 0;
  while (at < bytes) {
    while (at < bytes && !marked[at]) ++at;
    if (at == bytes) break;
    const std::size_t run_start = at;
    while (at < bytes && marked[at]) ++at;
    const auto length = static_cast<std::uint32_t>(at - run_start);
    PutU32(out, static_cast<std::uint32_t>(run_start));
    PutU32(out, length);
    const auto* run = reinterpret_cast<const std::uint8_t*>(page + run_start);
    out.insert(out.end(), run, run + length);
  }
  return out.size() - start_size;
}

void MarkDiffBytes(std::span<const std::uint8_t> diff, std::vector<bool>& marked) {
  ForEachDiffRun(diff, marked.size(),
                 [&marked](std::size_t offset, std::size_t length, const std::uint8_t*) {
                   std::fill(marked.begin() + static_cast<std::ptrdiff_t>(offset),
                             marked.begin() + static_cast<std::ptrdiff_t>(offset + length), true);
                 });
}

void ApplyDiff(std::span<const std::uint8_t> diff, std::byte* page, std::size_t bytes) {
  ForEachDiffRun(diff, bytes,
                 [page](std::size_t offset, std::size_t length, const std::uint8_t* data) {
                   std::memcpy(page + offset, data, length);
                 });
}

void ForEachDiffRun(std::span<const std::uint8_t> diff, std::size_t bytes,
                    const std::function<void(std::size_t offset, std::size_t length,
                                             const std::uint8_t* run)>& use) {
  ForEachRun(diff, bytes, [](std::size_t, std::size_t, const std::uint8_t*) {});
  ForEachRun(diff, bytes, use);
}

std::size_t ChangedBytes(std::span<const std::uint8_t> diff) {
  std::size_t changed = 0;
  ForEachRun(diff, SIZE_MAX, [&changed](std::size_t, std::size_t length, const std::uint8_t*) {
    changed += length;
  });
  return changed;
}

}  // namespace lmdx::consistency

#include "tests/dsm/programs/walk_scenarios.h"

#include <cstdint>
#include <string>
#include <vector>

#include "tests/dsm/programs/litmus_support.h"

namespace lmdx::litmus {
namespace {

constexpr std::size_t kBandPages = 128;

// The value of word i after step `step` of iteration `iteration`: every byte changes from one to
// the next, so that each written page differs from its twin in one run.
std::uint64_t WalkValue(int iteration, int step, std::size_t i) {
  return Hash(static_cast<std::uint64_t>(iteration), static_cast<std::uint64_t>(step), i) |
         0x8080808080808080ULL;
}

}  // namespace

void Walks(int iterations) {
  const std::size_t band_words = kBandPages * kPageWords;
  const std::size_t words = static_cast<std::size_t>(size_) * band_words;
  // BLOCK homes: band r (pages [64 r, 64 r + 64)) is homed at node r.
  std::uint64_t* data = Var<std::uint64_t>("walk_data", words);
  std::vector<std::uint64_t> expected(words, 0);
  for (int it = 0; it < iterations; ++it) {
    // 1. Each node fills its band; the first iteration touches those pages first.
    const std::size_t mine = static_cast<std::size_t>(rank_) * band_words;
    for (std::size_t i = 0; i < band_words; ++i) data[mine + i] = WalkValue(it, 1, mine + i);
    for (std::size_t i = 0; i < words; ++i) expected[i] = WalkValue(it, 1, i);
    Barrier();
    // 2. A sweep forwards, then a column walk backwards over every fourth page.
    for (std::size_t i = 0; i < words; ++i) {
      Expect([&] { return "the forward walk of " + At(it); }, i, expected[i], data[i]);
    }
    for (std::size_t page = words / kPageWords; page-- > 0;) {
      if (page % 4 != 3) continue;
      const std::size_t i = page * kPageWords + static_cast<std::size_t>(it) % kPageWords;
      Expect([&] { return "the column walk of " + At(it); }, i, expected[i], data[i]);
    }
    Barrier();
    // 3. Each node writes the band of the node after it, homed there, word by word.
    const std::size_t next = static_cast<std::size_t>((rank_ + 1) % size_) * band_words;
    for (std::size_t i = 0; i < band_words; ++i) data[next + i] = WalkValue(it, 2, next + i);
    for (std::size_t i = 0; i < words; ++i) expected[i] = WalkValue(it, 2, i);
    Barrier();
    for (std::size_t i = 0; i < words; ++i) {
      Expect([&] { return "the written walk of " + At(it); }, i, expected[i], data[i]);
    }
    Barrier();
  }
}

}  // namespace lmdx::litmus

// Property tests of the twin diffs (consistency/diff.h) against a reference written here from the
// documented encoding: thousands of random pages and write patterns, each diff decoded
// independently, applied, merged with another writer's diff, and corrupted.
#include "consistency/diff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"

namespace lmdx::consistency {
namespace {

using Bytes = std::vector<std::byte>;

struct DiffRun {
  std::uint32_t offset;
  std::uint32_t length;
  std::vector<std::uint8_t> data;
};

std::uint32_t ReadU32(std::span<const std::uint8_t> in, std::size_t at) {
  return static_cast<std::uint32_t>(in[at]) | static_cast<std::uint32_t>(in[at + 1]) << 8 |
         static_cast<std::uint32_t>(in[at + 2]) << 16 |
         static_cast<std::uint32_t>(in[at + 3]) << 24;
}

void PutU32(Diff& out, std::uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8)
    out.push_back(static_cast<std::uint8_t>(value >> shift));
}

// Decodes a well-formed diff by the documented layout; fails the test on anything else.
std::vector<DiffRun> Decode(std::span<const std::uint8_t> diff) {
  std::vector<DiffRun> runs;
  std::size_t at = 0;
  while (at < diff.size()) {
    EXPECT_GE(diff.size() - at, 8u) << "a run header is cut short at " << at;
    if (diff.size() - at < 8) break;
    DiffRun run{ReadU32(diff, at), ReadU32(diff, at + 4), {}};
    at += 8;
    EXPECT_LE(run.length, diff.size() - at) << "a run's bytes are cut short at " << at;
    if (run.length > diff.size() - at) break;
    run.data.assign(diff.begin() + static_cast<std::ptrdiff_t>(at),
                    diff.begin() + static_cast<std::ptrdiff_t>(at + run.length));
    at += run.length;
    runs.push_back(std::move(run));
  }
  return runs;
}

// The reference encoding: every maximal run of differing bytes, in offset order.
Diff ReferenceDiff(const Bytes& twin, const Bytes& page) {
  Diff out;
  std::size_t at = 0;
  while (at < page.size()) {
    if (twin[at] == page[at]) {
      ++at;
      continue;
    }
    std::size_t start = at;
    while (at < page.size() && twin[at] != page[at]) ++at;
    PutU32(out, static_cast<std::uint32_t>(start));
    PutU32(out, static_cast<std::uint32_t>(at - start));
    for (std::size_t i = start; i < at; ++i) out.push_back(static_cast<std::uint8_t>(page[i]));
  }
  return out;
}

std::size_t DifferingBytes(const Bytes& a, const Bytes& b) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < a.size(); ++i) count += a[i] != b[i] ? 1 : 0;
  return count;
}

Bytes RandomPage(std::mt19937& random, std::size_t bytes) {
  Bytes page(bytes);
  // Mostly zero pages with some structure, like real data; a random fill otherwise.
  bool sparse = random() % 2 == 0;
  for (auto& byte : page) byte = sparse && random() % 4 != 0 ? std::byte{0} : std::byte(random());
  return page;
}

// Page sizes: the real 4 KiB, and short ones whose lengths are no multiple of a word, so the
// word-at-a-time skipping meets every kind of tail.
std::size_t RandomSize(std::mt19937& random) {
  switch (random() % 4) {
    case 0: return 1 + random() % 40;
    case 1: return 4096 - random() % 16;
    default: return 4096;
  }
}

// A new value for a byte that differs from the old one.
std::byte Other(std::mt19937& random, std::byte old) {
  return static_cast<std::byte>(static_cast<unsigned>(old) ^ (1 + random() % 255));
}

// Writes a random pattern into page (the program's stores between two synchronisations). Some
// stores write the value already there, which a diff must not carry.
void RandomWrites(std::mt19937& random, Bytes& page) {
  const std::size_t size = page.size();
  switch (random() % 7) {
    case 0:  // nothing
      break;
    case 1:  // scattered single bytes
      for (std::size_t k = random() % 20; k > 0; --k) {
        std::size_t i = random() % size;
        page[i] = Other(random, page[i]);
      }
      break;
    case 2:  // runs of random length, some touching the page's ends
      for (std::size_t k = 1 + random() % 6; k > 0; --k) {
        std::size_t start = random() % 3 == 0 ? 0 : random() % size;
        std::size_t length = 1 + random() % std::min<std::size_t>(size - start, 300);
        if (random() % 3 == 0) start = size - length;
        for (std::size_t i = start; i < start + length; ++i) page[i] = Other(random, page[i]);
      }
      break;
    case 3:  // every other byte: runs of one byte, separated by one unchanged byte
      for (std::size_t i = random() % 2; i < size; i += 2) page[i] = Other(random, page[i]);
      break;
    case 4:  // the whole page
      for (auto& byte : page) byte = Other(random, byte);
      break;
    case 5:  // stores of random values, many of them equal to what was there
      for (std::size_t k = random() % 200; k > 0; --k) {
        std::size_t i = random() % size;
        page[i] = random() % 2 == 0 ? page[i] : std::byte(random() % 4);
      }
      break;
    case 6:  // word-sized stores at random alignments
      for (std::size_t k = random() % 30; k > 0 && size >= 8; --k) {
        std::size_t i = random() % (size - 7);
        std::uint64_t value = (std::uint64_t{random()} << 32) | random();
        std::memcpy(&page[i], &value, sizeof value);
      }
      break;
  }
}

TEST(DiffTest, ApplyingTheDiffToTheTwinReproducesThePageAndCarriesOnlyChangedBytes) {
  std::mt19937 random(20240611);
  for (int round = 0; round < 5000; ++round) {
    Bytes twin = RandomPage(random, RandomSize(random));
    Bytes page = twin;
    RandomWrites(random, page);
    SCOPED_TRACE("round " + std::to_string(round) + ", page of " + std::to_string(page.size()));

    Diff diff;
    std::size_t appended = AppendDiff(twin.data(), page.data(), page.size(), diff);
    ASSERT_EQ(appended, diff.size());
    // Exactly the documented encoding: maximal runs in offset order, never an unchanged byte.
    ASSERT_EQ(diff, ReferenceDiff(twin, page));
    std::size_t previous_end = 0;
    for (const DiffRun& run : Decode(diff)) {
      ASSERT_GT(run.length, 0u);
      ASSERT_TRUE(run.offset == 0 || run.offset > previous_end) << "runs adjacent or unsorted";
      for (std::uint32_t i = 0; i < run.length; ++i) {
        ASSERT_NE(twin[run.offset + i], page[run.offset + i])
            << "unchanged byte " << run.offset + i;
        ASSERT_EQ(run.data[i], static_cast<std::uint8_t>(page[run.offset + i]));
      }
      previous_end = run.offset + run.length;
    }
    ASSERT_EQ(ChangedBytes(diff), DifferingBytes(twin, page));

    Bytes patched = twin;
    ApplyDiff(diff, patched.data(), patched.size());
    ASSERT_EQ(patched, page);
    // Applying it again changes nothing: a diff carries values, not changes.
    ApplyDiff(diff, patched.data(), patched.size());
    ASSERT_EQ(patched, page);
  }
}

TEST(DiffTest, AppendDiffKeepsWhatTheOutputAlreadyHeld) {
  std::mt19937 random(7);
  Diff out;
  std::vector<std::pair<std::size_t, std::size_t>> pieces;  // where each page's diff starts, ends
  std::vector<std::pair<Bytes, Bytes>> pages;
  for (int i = 0; i < 200; ++i) {
    Bytes twin = RandomPage(random, RandomSize(random));
    Bytes page = twin;
    RandomWrites(random, page);
    std::size_t start = out.size();
    std::size_t appended = AppendDiff(twin.data(), page.data(), page.size(), out);
    ASSERT_EQ(start + appended, out.size());
    pieces.emplace_back(start, out.size());
    pages.emplace_back(std::move(twin), std::move(page));
  }
  for (std::size_t i = 0; i < pages.size(); ++i) {
    std::span<const std::uint8_t> piece(out.data() + pieces[i].first,
                                        pieces[i].second - pieces[i].first);
    Bytes patched = pages[i].first;
    ApplyDiff(piece, patched.data(), patched.size());
    ASSERT_EQ(patched, pages[i].second) << "page " << i;
  }
}

TEST(DiffTest, AnUnchangedPageHasAnEmptyDiff) {
  std::mt19937 random(11);
  for (int round = 0; round < 500; ++round) {
    Bytes page = RandomPage(random, RandomSize(random));
    Bytes same = page;
    Diff out = {1, 2, 3};  // what was there stays, and nothing is added
    EXPECT_EQ(AppendDiff(page.data(), same.data(), page.size(), out), 0u);
    EXPECT_EQ(out, (Diff{1, 2, 3}));
    Diff empty;
    EXPECT_EQ(AppendDiff(page.data(), same.data(), page.size(), empty), 0u);
    EXPECT_TRUE(empty.empty());
    EXPECT_EQ(ChangedBytes(empty), 0u);
    ApplyDiff(empty, same.data(), same.size());
    EXPECT_EQ(same, page);
  }
  Diff nothing;
  EXPECT_EQ(AppendDiff(nullptr, nullptr, 0, nothing), 0u);
  EXPECT_TRUE(nothing.empty());
}

// Runs over the bytes some diffs wrote carry every such byte, even one a diff set back to what the
// base held: a copy that has since changed that byte takes the diffs' value (lrc's home updates).
TEST(DiffTest, MarkedRunsCarryEveryWrittenByteEvenOneThatEndsAsItBegan) {
  std::mt19937 random(5);
  for (int round = 0; round < 500; ++round) {
    const std::size_t size = 64 + RandomSize(random) % 4000;
    const Bytes base = RandomPage(random, size);
    Bytes now = base;
    std::vector<bool> written(size, false);
    for (int d = 0; d < 3; ++d) {
      Bytes twin = now;
      Bytes changed = now;
      for (int k = 0; k < 8; ++k) changed[random() % size] = std::byte(random() & 0xFF);
      Diff diff;
      AppendDiff(twin.data(), changed.data(), size, diff);
      ApplyDiff(diff, now.data(), size);
      MarkDiffBytes(diff, written);
    }
    // The last writer puts one written byte back as the base had it.
    const auto first =
        static_cast<std::size_t>(std::find(written.begin(), written.end(), true) - written.begin());
    if (first == size) continue;
    now[first] = base[first];
    Diff merged;
    AppendMarkedRuns(now.data(), written, merged);
    // A diff against the base would leave that byte out.
    Diff against_base;
    AppendDiff(base.data(), now.data(), size, against_base);
    std::vector<bool> in_plain(size, false);
    MarkDiffBytes(against_base, in_plain);
    EXPECT_FALSE(in_plain[first]);
    // A copy whose every byte differs from the base ends as now on the written bytes only.
    Bytes other = base;
    for (std::byte& b : other) b = ~b;
    ApplyDiff(merged, other.data(), size);
    for (std::size_t i = 0; i < size; ++i) {
      ASSERT_EQ(other[i], written[i] ? now[i] : ~base[i]) << "round " << round << ", byte " << i;
    }
  }
  Diff none;
  EXPECT_EQ(AppendMarkedRuns(nullptr, std::vector<bool>(16, false), none), 0u);
}

// Two nodes wrote disjoint bytes of one page between the same synchronisations; each diffed
// against the same original. Whichever diff a home applies first, both nodes' writes survive.
// The byte sets interleave down to neighbouring bytes of one word.
TEST(DiffTest, DiffsOfDisjointWritesMergeInEitherOrder) {
  std::mt19937 random(99);
  for (int round = 0; round < 4000; ++round) {
    const std::size_t size = RandomSize(random);
    Bytes original = RandomPage(random, size);
    Bytes mine = original;
    Bytes theirs = original;
    Bytes expected = original;
    // Who owns each byte: interleaved at byte, 2-byte, 4-byte or random granularity.
    const unsigned pattern = random() % 5;
    for (std::size_t i = 0; i < size; ++i) {
      int owner;
      switch (pattern) {
        case 0: owner = static_cast<int>(i % 2); break;
        case 1: owner = static_cast<int>((i / 2) % 2); break;
        case 2: owner = static_cast<int>((i / 4) % 2); break;
        case 3: owner = i % 8 == 7 ? 1 : 0; break;  // one byte of each word
        default: owner = static_cast<int>(random() % 2); break;
      }
      // Not every owned byte is written, and some writes store the old value.
      if (random() % 3 == 0) continue;
      std::byte value = random() % 8 == 0 ? original[i] : Other(random, original[i]);
      (owner == 0 ? mine : theirs)[i] = value;
      expected[i] = value;
    }
    SCOPED_TRACE("round " + std::to_string(round) + ", pattern " + std::to_string(pattern));
    Diff my_diff;
    Diff their_diff;
    AppendDiff(original.data(), mine.data(), size, my_diff);
    AppendDiff(original.data(), theirs.data(), size, their_diff);
    ASSERT_EQ(ChangedBytes(my_diff) + ChangedBytes(their_diff), DifferingBytes(original, expected));

    Bytes first_mine = original;
    ApplyDiff(my_diff, first_mine.data(), size);
    ApplyDiff(their_diff, first_mine.data(), size);
    ASSERT_EQ(first_mine, expected);
    Bytes first_theirs = original;
    ApplyDiff(their_diff, first_theirs.data(), size);
    ApplyDiff(my_diff, first_theirs.data(), size);
    ASSERT_EQ(first_theirs, expected);
    // A node that applies the other's diff to its own copy (an update) holds both writes too.
    Bytes my_copy = mine;
    ApplyDiff(their_diff, my_copy.data(), size);
    ASSERT_EQ(my_copy, expected);
  }
}

// The bytes of a diff run: offset, length, then `data` bytes (which may be fewer than length, to
// build truncated diffs).
Diff RawRun(std::uint32_t offset, std::uint32_t length, std::size_t data) {
  Diff out;
  PutU32(out, offset);
  PutU32(out, length);
  for (std::size_t i = 0; i < data; ++i) out.push_back(static_cast<std::uint8_t>(0xA0 + i));
  return out;
}

Diff Truncated(Diff diff, std::size_t bytes) {
  diff.resize(bytes);
  return diff;
}

Diff Concat(std::initializer_list<Diff> parts) {
  Diff out;
  for (const Diff& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

struct Malformed {
  std::string what;
  Diff diff;
  bool changed_bytes_throws;  // ChangedBytes cannot know the page size, so sees fewer errors
};

std::vector<Malformed> MalformedDiffs(std::size_t page) {
  const auto bytes = static_cast<std::uint32_t>(page);
  Diff good = RawRun(10, 4, 4);  // a valid run first: nothing may be written before the check
  std::vector<Malformed> cases = {
      {"one byte of a header", {0x01}, true},
      {"seven bytes of a header", Truncated(RawRun(0, 1, 1), 7), true},
      {"a good run, then half a header", Concat({good, {0, 0, 0, 0}}), true},
      {"a run whose bytes are cut short", RawRun(0, 8, 7), true},
      {"a good run, then one cut short", Concat({good, RawRun(100, 300, 20)}), true},
      {"a zero-length run", RawRun(5, 0, 0), true},
      {"a good run, then a zero-length run", Concat({good, RawRun(40, 0, 0)}), true},
      {"a run ending one byte past the page", RawRun(bytes - 3, 4, 4), false},
      {"a run starting past the page", RawRun(bytes + 1, 1, 1), false},
      {"a good run, then one past the page", Concat({good, RawRun(bytes, 1, 1)}), false},
      {"an offset that wraps around", RawRun(0xFFFFFFFFu, 1, 1), false},
      {"a length that wraps offset + length", Concat({good, RawRun(bytes - 1, 0xFFFFFFFFu, 1)}),
       true},
      {"overlapping runs", Concat({RawRun(10, 8, 8), RawRun(14, 8, 8)}), true},
      {"the same run twice", Concat({good, good}), true},
      {"unsorted runs", Concat({RawRun(100, 2, 2), RawRun(10, 2, 2)}), true},
      {"adjacent runs (one run written as two)", Concat({RawRun(10, 4, 4), RawRun(14, 4, 4)}),
       true},
      {"a run nested inside the previous one", Concat({RawRun(10, 20, 20), RawRun(12, 2, 2)}),
       true},
  };
  return cases;
}

TEST(DiffTest, MalformedDiffsThrowAndLeaveThePageUntouched) {
  std::mt19937 random(5);
  for (std::size_t size : {std::size_t{64}, std::size_t{4096}}) {
    for (const Malformed& bad : MalformedDiffs(size)) {
      SCOPED_TRACE(bad.what + ", page of " + std::to_string(size));
      Bytes page = RandomPage(random, size);
      const Bytes before = page;
      EXPECT_THROW(ApplyDiff(bad.diff, page.data(), page.size()), lmdx::Error);
      EXPECT_EQ(page, before);
      if (bad.changed_bytes_throws) {
        EXPECT_THROW(ChangedBytes(bad.diff), lmdx::Error);
      }
    }
  }
}

// Random valid diffs with a random malformed tail: the valid part must not reach the page either.
TEST(DiffTest, AValidPrefixIsNotAppliedWhenTheRestIsMalformed) {
  std::mt19937 random(31337);
  for (int round = 0; round < 2000; ++round) {
    const std::size_t size = 4096;
    Bytes twin = RandomPage(random, size);
    Bytes page = twin;
    for (std::size_t k = 1 + random() % 6; k > 0; --k) {
      std::size_t i = random() % (size / 2);
      page[i] = Other(random, page[i]);
    }
    Diff diff;
    AppendDiff(twin.data(), page.data(), size, diff);
    ASSERT_FALSE(diff.empty());
    std::vector<DiffRun> runs = Decode(diff);
    const DiffRun& last = runs.back();
    switch (random() % 5) {
      case 0:
        diff.resize(diff.size() - 1 - random() % std::min<std::size_t>(diff.size(), 8));
        break;
      case 1: diff = Concat({diff, RawRun(last.offset, 1, 1)}); break;                // goes back
      case 2: diff = Concat({diff, RawRun(last.offset + last.length, 1, 1)}); break;  // adjacent
      case 3: diff = Concat({diff, RawRun(static_cast<std::uint32_t>(size) - 1, 2, 2)}); break;
      default: diff = Concat({diff, RawRun(3000, 0, 0)}); break;
    }
    Bytes target = twin;
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_THROW(ApplyDiff(diff, target.data(), size), lmdx::Error);
    ASSERT_EQ(target, twin);
  }
}

}  // namespace
}  // namespace lmdx::consistency

#include "consistency/home_based/internal/fault_streams.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace lmdx::consistency::internal {
namespace {

// Walks pages from first at stride, faulting only on pages no earlier fault fetched ahead, as a
// node whose fetched pages stay readable would; returns the faults taken and every page covered.
struct Walk {
  int faults = 0;
  std::uint64_t confirmed = 0;
  std::set<PageId> covered;
};

Walk WalkPages(FaultStreams& streams, PageId first, std::int64_t stride, int steps) {
  Walk walk;
  for (int i = 0; i < steps; ++i) {
    auto page = static_cast<PageId>(static_cast<std::int64_t>(first) + stride * i);
    if (walk.covered.contains(page)) continue;
    ++walk.faults;
    walk.covered.insert(page);
    FaultStreams::Ahead ahead = streams.OnFault(page);
    walk.confirmed += ahead.confirmed;
    for (std::uint32_t k = 1; k <= ahead.count; ++k) {
      walk.covered.insert(static_cast<PageId>(static_cast<std::int64_t>(page) + ahead.stride * k));
    }
  }
  return walk;
}

TEST(FaultStreamsTest, ThreeFaultsAtOneStrideStartFetchingAhead) {
  FaultStreams streams;
  EXPECT_EQ(streams.OnFault(100).count, 0u);
  EXPECT_EQ(streams.OnFault(104).count, 0u);  // a stride, not yet a walk
  FaultStreams::Ahead third = streams.OnFault(108);
  EXPECT_EQ(third.stride, 4);
  EXPECT_EQ(third.count, FaultStreams::kFirstDepth);
  EXPECT_EQ(third.confirmed, 0u);
}

TEST(FaultStreamsTest, ASweepTakesLogarithmicallyFewFaults) {
  FaultStreams streams;
  Walk walk = WalkPages(streams, 1000, 1, 4096);
  // 3 to learn, then 4, 8, ..., 128 pages ahead, then 128 a fault: 3 + 6 + (4096 - 3 - 252) / 129.
  EXPECT_LE(walk.faults, 3 + 6 + 30 + 1);
  EXPECT_GE(walk.faults, 3 + 6 + 29);
  // The walk's pages, and at most one window past its end (the walk's end is not known).
  EXPECT_GE(walk.covered.size(), 4096u);
  EXPECT_LE(walk.covered.size(), 4096u + FaultStreams::kMaxDepth);
  EXPECT_EQ(*walk.covered.begin(), 1000u);
  // Every window but the last was walked through.
  EXPECT_GE(walk.confirmed, 4096u - 3 - 2 * FaultStreams::kMaxDepth);
}

TEST(FaultStreamsTest, AColumnWalkBackwardsIsAStreamToo) {
  FaultStreams streams;
  Walk walk = WalkPages(streams, 100000, -8, 2000);
  EXPECT_LT(walk.faults, 40);
  EXPECT_GE(walk.covered.size(), 2000u);
  EXPECT_LE(walk.covered.size(), 2000u + FaultStreams::kMaxDepth);
  EXPECT_EQ(*walk.covered.rbegin(), 100000u);
}

TEST(FaultStreamsTest, RandomFaultsFetchNothingAhead) {
  FaultStreams streams;
  std::uint64_t x = 12345;
  int ahead = 0;
  for (int i = 0; i < 10000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    ahead += static_cast<int>(streams.OnFault(static_cast<PageId>((x >> 33) % 1000000)).count);
  }
  // Three faults in a row at one stride within 64 pages, among a million, are rare.
  EXPECT_LT(ahead, 10000 / 100);
}

TEST(FaultStreamsTest, TwoInterleavedWalksAreFollowedApart) {
  FaultStreams streams;
  std::set<PageId> covered;
  int faults = 0;
  for (int i = 0; i < 1000; ++i) {
    for (PageId base : {PageId{10000}, PageId{500000}}) {
      PageId page = base + static_cast<PageId>(3 * i);
      if (covered.contains(page)) continue;
      ++faults;
      covered.insert(page);
      FaultStreams::Ahead ahead = streams.OnFault(page);
      for (std::uint32_t k = 1; k <= ahead.count; ++k) {
        covered.insert(static_cast<PageId>(static_cast<std::int64_t>(page) + ahead.stride * k));
      }
    }
  }
  EXPECT_LT(faults, 2 * 20);
}

TEST(FaultStreamsTest, AFaultInsideTheWindowKeepsTheStream) {
  FaultStreams streams;
  streams.OnFault(0);
  streams.OnFault(2);
  FaultStreams::Ahead third = streams.OnFault(4);  // fetched 6, 8, 10, 12 ahead
  ASSERT_EQ(third.count, 4u);
  // Page 8 was invalidated since, say, and faults again: still the walk, not a new stream.
  FaultStreams::Ahead again = streams.OnFault(8);
  EXPECT_EQ(again.stride, 2);
  EXPECT_EQ(again.count, 8u);
  EXPECT_EQ(again.confirmed, 0u);  // not past the window: nothing is known to be used
  FaultStreams::Ahead next = streams.OnFault(8 + 2 * 9);  // just past the new window
  EXPECT_EQ(next.confirmed, 8u);
  EXPECT_EQ(next.count, 16u);
}

TEST(FaultStreamsTest, AWalkThatSkipsPagesPastItsWindowKeepsItsStream) {
  FaultStreams streams;
  streams.OnFault(0);
  streams.OnFault(1);
  ASSERT_EQ(streams.OnFault(2).count, 4u);           // 3 to 6 fetched ahead; 7 expected next
  FaultStreams::Ahead skipped = streams.OnFault(9);  // 7 and 8 were not needed
  EXPECT_EQ(skipped.stride, 1);
  EXPECT_EQ(skipped.count, 8u);
  EXPECT_EQ(skipped.confirmed, 4u);
  // Far past the window is another walk.
  EXPECT_EQ(streams.OnFault(9 + 9 + 40).count, 0u);
}

TEST(FaultStreamsTest, AYoungStreamTakesOnlyItsNextPage) {
  FaultStreams streams;
  streams.OnFault(10);
  streams.OnFault(12);                       // stride 2, not yet a walk
  EXPECT_EQ(streams.OnFault(16).count, 0u);  // two strides on: a new stride, learnt again
  EXPECT_EQ(streams.OnFault(20).count, FaultStreams::kFirstDepth);
}

}  // namespace
}  // namespace lmdx::consistency::internal

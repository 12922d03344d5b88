// The schedules of group collectives: the binomial tree reaches every member once within
// ceil(log2 n) rounds with contiguous subtrees, and pairwise exchange pairs every ordered pair of
// members exactly once, one send and one receive per member and round.
#include "groups/tree.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace lmdx::groups {
namespace {

TEST(TreeTest, RoundsIsCeilLog2) {
  EXPECT_EQ(Rounds(1), 0);
  EXPECT_EQ(Rounds(2), 1);
  EXPECT_EQ(Rounds(3), 2);
  EXPECT_EQ(Rounds(4), 2);
  EXPECT_EQ(Rounds(5), 3);
  EXPECT_EQ(Rounds(16), 4);
  EXPECT_EQ(Rounds(17), 5);
}

TEST(TreeTest, SixteenMembersRootedAtZero) {
  EXPECT_EQ(Children(0, 16), (std::vector<int>{8, 4, 2, 1}));
  EXPECT_EQ(Children(8, 16), (std::vector<int>{12, 10, 9}));
  EXPECT_EQ(Children(12, 16), (std::vector<int>{14, 13}));
  EXPECT_EQ(Children(15, 16), std::vector<int>{});
  EXPECT_EQ(SubtreeSize(8, 16), 8);
  EXPECT_EQ(SubtreeSize(4, 16), 4);
  EXPECT_EQ(Parent(13), 12);
}

TEST(TreeTest, EveryMemberHasOneParentAndTheDepthIsLogarithmic) {
  for (int n = 1; n <= 70; ++n) {
    std::vector<int> parents(static_cast<std::size_t>(n), -1);
    int edges = 0;
    for (int r = 0; r < n; ++r) {
      std::vector<int> children = Children(r, n);
      for (std::size_t i = 0; i < children.size(); ++i) {
        int c = children[i];
        ASSERT_GT(c, r);
        ASSERT_LT(c, n);
        ASSERT_EQ(parents[static_cast<std::size_t>(c)], -1) << "n " << n << " child " << c;
        parents[static_cast<std::size_t>(c)] = r;
        ASSERT_EQ(Parent(c), r);
        // Largest subtree first.
        if (i > 0) {
          ASSERT_GE(SubtreeSize(children[i - 1], n), SubtreeSize(c, n));
        }
        ++edges;
      }
    }
    EXPECT_EQ(edges, n - 1) << "n " << n;
    EXPECT_EQ(static_cast<int>(Children(0, n).size()), Rounds(n)) << "n " << n;
    for (int r = 1; r < n; ++r) {
      int depth = 0;
      for (int v = r; v != 0; v = Parent(v)) ++depth;
      EXPECT_LE(depth, Rounds(n)) << "n " << n << " member " << r;
      // Every node sends at most ceil(log2 n) frames.
      EXPECT_LE(static_cast<int>(Children(r, n).size()), Rounds(n));
    }
  }
}

// The subtree of r is [r, r + SubtreeSize(r)): what a gather concatenates on the way up.
TEST(TreeTest, SubtreesAreContiguousRanges) {
  for (int n = 1; n <= 70; ++n) {
    for (int r = 0; r < n; ++r) {
      std::set<int> members;
      std::vector<int> stack = {r};
      while (!stack.empty()) {
        int v = stack.back();
        stack.pop_back();
        members.insert(v);
        for (int c : Children(v, n)) stack.push_back(c);
      }
      ASSERT_EQ(static_cast<int>(members.size()), SubtreeSize(r, n)) << "n " << n << " r " << r;
      ASSERT_EQ(*members.begin(), r);
      ASSERT_EQ(*members.rbegin(), r + SubtreeSize(r, n) - 1);
    }
  }
}

TEST(TreeTest, RelativeAndAbsoluteIndicesAreInverse) {
  for (int n = 1; n <= 20; ++n) {
    for (int root = 0; root < n; ++root) {
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(Absolute(Relative(i, root, n), root, n), i);
      }
      ASSERT_EQ(Relative(root, root, n), 0);
    }
  }
}

TEST(PairwiseExchangeTest, EveryOrderedPairOnceOneSendAndOneReceivePerRound) {
  for (int n = 1; n <= 40; ++n) {
    std::set<std::pair<int, int>> pairs;
    for (int round = 1; round < n; ++round) {
      std::vector<int> receivers(static_cast<std::size_t>(n), 0);
      for (int i = 0; i < n; ++i) {
        int to = SendPartner(i, round, n);
        ASSERT_NE(to, i);
        ASSERT_GE(to, 0);
        ASSERT_LT(to, n);
        ASSERT_EQ(ReceivePartner(to, round, n), i) << "n " << n << " round " << round;
        ++receivers[static_cast<std::size_t>(to)];
        ASSERT_TRUE(pairs.insert({i, to}).second) << "n " << n << ": " << i << " -> " << to;
      }
      for (int count : receivers) ASSERT_EQ(count, 1);
      if (PowerOfTwo(n)) {
        for (int i = 0; i < n; ++i) ASSERT_EQ(SendPartner(SendPartner(i, round, n), round, n), i);
      }
    }
    EXPECT_EQ(static_cast<int>(pairs.size()), n * (n - 1));
  }
}

}  // namespace
}  // namespace lmdx::groups

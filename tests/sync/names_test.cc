#include "sync/names.h"

#include <gtest/gtest.h>

#include <vector>

namespace lmdx::sync {
namespace {

TEST(NamesTest, HashIsFnv1a64) {
  EXPECT_EQ(HashName(""), 14695981039346656037ull);
  EXPECT_EQ(HashName("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(HashName("foobar"), 0x85944171f73967e8ull);
}

TEST(NamesTest, ManagersSpreadOverTheNodes) {
  std::vector<int> per_node(16);
  for (int i = 0; i < 1600; ++i) ++per_node[ManagerOf("lock" + std::to_string(i), 16)];
  for (int count : per_node) {
    EXPECT_GT(count, 50);
    EXPECT_LT(count, 150);
  }
}

}  // namespace
}  // namespace lmdx::sync

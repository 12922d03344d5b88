#include "benchmarks/net/core_to_core.h"

#include <pthread.h>
#include <sched.h>

#include "gtest/gtest.h"

namespace lmdx::bench {
namespace {

MachineState state(std::optional<double> before, std::optional<double> after) {
  return MachineState{before, after};
}

TEST(MachineStateTest, SteadyWhenBothFiguresAreAlike) {
  EXPECT_TRUE(steady(state(49, 52)));
  EXPECT_TRUE(steady(state(210, 180)));
  EXPECT_FALSE(steady(state(49, 210)));
  EXPECT_FALSE(steady(state(210, 49)));
  EXPECT_FALSE(steady(state(49, std::nullopt)));
  EXPECT_FALSE(steady(state(std::nullopt, std::nullopt)));
}

TEST(MachineStateTest, TwoJobsAreComparableOnlyInOneState) {
  EXPECT_TRUE(same_state(state(49, 50), state(52, 48)));
  EXPECT_TRUE(same_state(state(210, 205), state(215, 220)));
  EXPECT_FALSE(same_state(state(49, 50), state(210, 212)));
  // A job during which the machine changed compares with nothing, not even its own start.
  EXPECT_FALSE(same_state(state(49, 210), state(49, 50)));
  EXPECT_FALSE(same_state(state(49, 50), state(std::nullopt, std::nullopt)));
}

TEST(MachineStateTest, DescribesEachCase) {
  EXPECT_EQ(describe(state(49.4, 50)), "49 ns");
  EXPECT_EQ(describe(state(49, 210)), "49->210 ns");
  EXPECT_EQ(describe(state(std::nullopt, 50)), "?");
}

// A real measurement between two pinned threads: a line's trip between cores takes more than a
// nanosecond and far less than a millisecond on any machine. With fewer than two CPUs allowed
// there is nothing to measure, and the answer must say so.
TEST(CoreToCoreTest, MeasuresWhereTwoCpusAreAllowedAndLeavesTheCallerUnpinned) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  const std::optional<double> ns = measure_core_to_core_ns();
  if (CPU_COUNT(&before) >= 2) {
    ASSERT_TRUE(ns.has_value());
    EXPECT_GT(*ns, 1.0);
    EXPECT_LT(*ns, 1e6);
  } else {
    EXPECT_FALSE(ns.has_value());
  }
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

TEST(CoreToCoreTest, NothingToMeasureOnOneCpu) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const std::optional<double> ns = measure_core_to_core_ns();
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_FALSE(ns.has_value());
}

}  // namespace
}  // namespace lmdx::bench

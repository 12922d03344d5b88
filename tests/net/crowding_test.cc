// Deadlines for live peers grow on hosts that run many more nodes than they have cores.
#include "net/crowding.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace lmdx::net {
namespace {

TEST(CrowdingTest, TheScaleIsOneUpToThirtyTwoNodesPerCoreAndGrowsInProportion) {
  EXPECT_EQ(crowding::ScaleFor(1, 2), 1);
  EXPECT_EQ(crowding::ScaleFor(64, 2), 1);
  EXPECT_EQ(crowding::ScaleFor(65, 2), 2);
  EXPECT_EQ(crowding::ScaleFor(128, 2), 2);
  EXPECT_EQ(crowding::ScaleFor(1024, 2), 16);
  EXPECT_EQ(crowding::ScaleFor(1024, 64), 1);
  EXPECT_EQ(crowding::ScaleFor(100, 0), 4);  // a host that reports no cores counts as one
}

wire::JobTable TableOf(const std::vector<std::string>& hosts) {
  wire::JobTable table;
  for (std::size_t rank = 0; rank < hosts.size(); ++rank) {
    wire::NodeInfo* node = table.add_nodes();
    node->set_rank(static_cast<int>(rank));
    node->set_host(hosts[rank]);
  }
  return table;
}

TEST(CrowdingTest, TheMostCrowdedHostOfTheTableDecidesAndDeadlinesFollow) {
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  const long room = crowding::kNodesPerCore * cores;
  // All on this host, as `lmdx run` starts them: four times the room.
  crowding::AssumeAllHere(static_cast<int>(4 * room));
  EXPECT_EQ(crowding::Scale(), 4);
  EXPECT_EQ(crowding::Scaled(5000), 20000);
  // The table spreads them: one host has twice the room, the others little.
  std::vector<std::string> hosts(static_cast<std::size_t>(2 * room), "a");
  for (int i = 0; i < 10; ++i) hosts.push_back("b");
  crowding::Learn(TableOf(hosts));
  EXPECT_EQ(crowding::Scale(), 2);
  crowding::Learn(TableOf({"a", "b", "c"}));
  EXPECT_EQ(crowding::Scale(), 1);
  EXPECT_EQ(crowding::Scaled(5000), 5000);
}

}  // namespace
}  // namespace lmdx::net

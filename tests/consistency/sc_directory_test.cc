// sc's directory at a page's home (consistency/internal/sc_directory.h): one transaction per page
// at a time, and what becomes of a page when a node is lost in the middle of one, or while it
// holds a copy.
#include "consistency/internal/sc_directory.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace lmdx::consistency::internal {
namespace {

constexpr PageId kPage = 7;
constexpr int kHome = 0;

// Runs the directory as the home would, remembering what each queued requester was told.
class Home {
 public:
  explicit Home(int nodes) : directory_(kHome, nodes) {}

  // A request that is granted at once, or nullopt when it was queued.
  std::optional<ScGrantDecision> Ask(int requester, Access wanted) {
    return directory_.Acquire(kPage, {requester, wanted, false},
                              [this, requester](const ScGrantDecision& decision) {
                                told_.emplace_back(requester, decision);
                              });
  }
  void Run(std::vector<ScDirectory::Resumption> ready) {
    for (auto& [resume, decision] : ready) resume(decision);
  }
  ScDirectory& directory() { return directory_; }
  // What queued requesters were told, in order.
  std::vector<std::pair<int, ScGrantDecision>>& told() { return told_; }

 private:
  ScDirectory directory_;
  std::vector<std::pair<int, ScGrantDecision>> told_;
};

TEST(ScDirectoryTest, ATransactionLocksThePageUntilDoneAndThenTheNextRuns) {
  Home home(3);
  ASSERT_TRUE(home.Ask(1, Access::kWrite).has_value());
  EXPECT_FALSE(home.Ask(2, Access::kRead).has_value());
  EXPECT_TRUE(home.told().empty());
  home.Run(home.directory().Release(kPage));
  ASSERT_EQ(home.told().size(), 1u);
  EXPECT_EQ(home.told()[0].first, 2);
  EXPECT_EQ(home.told()[0].second.data, GrantData::kFetch);
  EXPECT_EQ(home.told()[0].second.source, 1);
}

// A requester lost between its grant and its done: the page must not stay locked for ever.
TEST(ScDirectoryTest, AGrantToANodeLostBeforeItWasDoneIsUndoneAndTheNextRequestRuns) {
  Home home(3);
  ASSERT_TRUE(home.Ask(2, Access::kWrite).has_value());
  EXPECT_FALSE(home.Ask(1, Access::kRead).has_value());
  home.Run(home.directory().ForgetNode(2));
  ASSERT_EQ(home.told().size(), 1u);
  const ScGrantDecision& grant = home.told()[0].second;
  EXPECT_TRUE(grant.lost.empty());
  // The grant to node 2 never happened: the home still holds the page and serves it itself.
  EXPECT_EQ(grant.data, GrantData::kIncluded);
  home.Run(home.directory().Release(kPage));
  EXPECT_TRUE(home.Ask(1, Access::kWrite).has_value());
}

TEST(ScDirectoryTest, ALostNodesQueuedRequestsAreDropped) {
  Home home(4);
  ASSERT_TRUE(home.Ask(1, Access::kWrite).has_value());
  EXPECT_FALSE(home.Ask(3, Access::kWrite).has_value());
  EXPECT_FALSE(home.Ask(2, Access::kRead).has_value());
  home.Run(home.directory().ForgetNode(3));
  EXPECT_TRUE(home.told().empty());
  home.Run(home.directory().Release(kPage));
  ASSERT_EQ(home.told().size(), 1u);
  EXPECT_EQ(home.told()[0].first, 2);
}

// A writer whose invalidation of a lost copy holder failed aborts; the next write must not try to
// invalidate that node again (it would fail again, for ever).
TEST(ScDirectoryTest, AnAbortLeavesALostCopyHolderOutOfTheCopyset) {
  Home home(3);
  ASSERT_TRUE(home.Ask(2, Access::kRead).has_value());
  home.Run(home.directory().Release(kPage));
  std::optional<ScGrantDecision> write = home.Ask(1, Access::kWrite);
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(write->invalidate, std::vector<int>{2});
  home.Run(home.directory().ForgetNode(2));  // node 1's invalidation of node 2 fails...
  home.Run(home.directory().Abort(kPage));   // ...and it aborts
  std::optional<ScGrantDecision> again = home.Ask(1, Access::kWrite);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->invalidate.empty());
}

// The owner of the only copy is lost: a copy elsewhere takes its place, or the page is gone and
// every request says so instead of waiting.
TEST(ScDirectoryTest, ALostOwnerPassesThePageToACopyHolderOrThePageIsGone) {
  {
    Home home(3);
    ASSERT_TRUE(home.Ask(1, Access::kWrite).has_value());  // node 1 owns the only copy
    home.Run(home.directory().Release(kPage));
    std::optional<ScGrantDecision> read = home.Ask(2, Access::kRead);
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(read->source, 1);
    home.Run(home.directory().Release(kPage));  // nodes 1 and 2 hold it
    home.Run(home.directory().ForgetNode(1));
    std::optional<ScGrantDecision> at_home = home.Ask(kHome, Access::kRead);
    ASSERT_TRUE(at_home.has_value());
    EXPECT_TRUE(at_home->lost.empty());
    EXPECT_EQ(at_home->data, GrantData::kFetch);
    EXPECT_EQ(at_home->source, 2);
    home.Run(home.directory().Release(kPage));
  }
  Home home(3);
  ASSERT_TRUE(home.Ask(2, Access::kWrite).has_value());  // node 2 takes the only copy
  home.Run(home.directory().Release(kPage));
  home.Run(home.directory().ForgetNode(2));
  std::optional<ScGrantDecision> read = home.Ask(1, Access::kRead);
  ASSERT_TRUE(read.has_value());
  EXPECT_NE(read->lost.find("rank 2"), std::string::npos) << read->lost;
  // Refused, not locked: the next request is answered too.
  std::optional<ScGrantDecision> again = home.Ask(1, Access::kRead);
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(again->lost.empty());
}

}  // namespace
}  // namespace lmdx::consistency::internal

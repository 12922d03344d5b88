// The bookkeeping that keeps the view's mappings within a budget under mprotect
// (dsm/internal/protection_runs.h), against a simulated view that applies the changes it asks
// for, as the kernel would: after every call, no page's protection is looser than its access, the
// bookkeeping's protections and count of runs are the view's, and the runs are within the budget.
#include "dsm/internal/protection_runs.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace lmdx::dsm::internal {
namespace {

using consistency::Access;
using Change = ProtectionRuns::Change;
constexpr std::uint64_t kBlock = ProtectionRuns::kBlockPages;

class Harness {
 public:
  Harness(std::uint64_t pages, std::uint64_t budget)
      : runs_(pages, budget), access_(pages, Access::kNone), protection_(pages, Access::kNone) {}

  // What the protocol does: returns the changes the bookkeeping asked for.
  std::vector<Change> Set(std::uint64_t first, std::uint64_t count, Access access) {
    std::vector<Change> changes;
    runs_.Set(first, count, access, changes);
    for (std::uint64_t page = first; page < first + count; ++page) access_[page] = access;
    Apply(changes);
    return changes;
  }

  // What the fault handler does on a fault at page: opens it if it was closed.
  bool Fault(std::uint64_t page, std::vector<Change>* out = nullptr) {
    std::vector<Change> changes;
    bool narrowed = runs_.Narrowed(page);
    bool opened = runs_.Open(page, changes);
    EXPECT_EQ(narrowed, opened) << "page " << page;
    if (opened) EXPECT_EQ(protection_[page], Access::kNone);  // Apply has not run yet
    Apply(changes);
    if (opened) EXPECT_EQ(protection_[page], access_[page]) << "page " << page;
    if (out != nullptr) *out = changes;
    return opened;
  }

  void CloseAll() {
    std::vector<Change> changes;
    runs_.CloseAll(changes);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0], (Change{0, access_.size(), Access::kNone}));
    Apply(changes);
  }

  // Every rule, page by page.
  void Check(const std::string& when) {
    std::uint64_t view_runs = 1;
    for (std::uint64_t page = 0; page < access_.size(); ++page) {
      ASSERT_LE(protection_[page], access_[page]) << "page " << page << " looser, " << when;
      ASSERT_EQ(runs_.protection(page), protection_[page]) << "page " << page << ", " << when;
      ASSERT_EQ(runs_.access(page), access_[page]) << "page " << page << ", " << when;
      ASSERT_EQ(runs_.Narrowed(page), protection_[page] < access_[page]) << "page " << page;
      if (page > 0 && protection_[page] != protection_[page - 1]) ++view_runs;
    }
    ASSERT_EQ(runs_.runs(), view_runs) << when;
    ASSERT_LE(runs_.runs(), runs_.budget()) << when;
  }

  ProtectionRuns& runs() { return runs_; }
  Access protection(std::uint64_t page) const { return protection_[page]; }

 private:
  void Apply(const std::vector<Change>& changes) {
    for (const Change& change : changes) {
      ASSERT_GT(change.count, 0u);
      ASSERT_LE(change.first + change.count, protection_.size());
      for (std::uint64_t page = change.first; page < change.first + change.count; ++page) {
        protection_[page] = change.protection;
      }
    }
  }

  ProtectionRuns runs_;
  std::vector<Access> access_;
  std::vector<Access> protection_;
};

TEST(ProtectionRunsTest, BelowTheBudgetProtectionsAreExactlyTheAccessesSet) {
  Harness view(1000, 1000);
  for (std::uint64_t page = 0; page < 400; page += 2) {
    std::vector<Change> changes = view.Set(page, 1, Access::kWrite);
    ASSERT_EQ(changes, (std::vector<Change>{{page, 1, Access::kWrite}}));
  }
  view.Check("after every other page was opened");
  EXPECT_EQ(view.runs().runs(), 400u);
  EXPECT_EQ(view.runs().pages_closed(), 0u);
  // Setting what a page already has asks for no system call.
  EXPECT_TRUE(view.Set(0, 1, Access::kWrite).empty());
  EXPECT_TRUE(view.Set(1, 1, Access::kNone).empty());
}

// A cyclic variable's homes on 2 nodes: this node's pages writable, the others' invalid, one run
// each, four times more than the budget.
TEST(ProtectionRunsTest, AlternatingPagesPastTheBudgetStayWithinIt) {
  Harness view(4096, 256);
  for (std::uint64_t page = 0; page < 4096; page += 2) {
    view.Set(page, 1, Access::kWrite);
    view.Check("after page " + std::to_string(page));
  }
  EXPECT_GT(view.runs().pages_closed(), 0u);
  EXPECT_GT(view.runs().peak_runs(), 200u);
  // The pages opened last are still open; the first ones were closed and a fault opens them.
  EXPECT_EQ(view.protection(4094), Access::kWrite);
  EXPECT_EQ(view.protection(0), Access::kNone);
  std::uint64_t local = 0;
  for (std::uint64_t page = 0; page < 4096; page += 2) {
    local += view.Fault(page) ? 1 : 0;
    view.Check("after a fault on page " + std::to_string(page));
    EXPECT_EQ(view.protection(page), Access::kWrite);
  }
  EXPECT_GT(local, 0u);
  // Pages the protocol left invalid are never opened by a fault.
  EXPECT_FALSE(view.Fault(1));
}

TEST(ProtectionRunsTest, AFaultOpensTheClosedPagesOfItsBlockWithTheSameAccess) {
  Harness view(256, 64);
  view.Set(16, 16, Access::kWrite);  // block 1, whole
  view.Set(40, 1, Access::kRead);
  view.CloseAll();
  view.Check("after closing everything");
  std::vector<Change> changes;
  ASSERT_TRUE(view.Fault(20, &changes));
  EXPECT_EQ(changes, (std::vector<Change>{{16, 16, Access::kWrite}}));
  ASSERT_TRUE(view.Fault(40, &changes));
  EXPECT_EQ(changes, (std::vector<Change>{{40, 1, Access::kRead}}));
  view.Check("after the faults");
}

TEST(ProtectionRunsTest, AClosedPageWhoseAccessFallsStaysClosedUnlessOpeningMergesRuns) {
  Harness view(256, 64);
  view.Set(10, 1, Access::kWrite);
  view.CloseAll();
  // Alone among invalid pages: opened for reading it would be a run of its own.
  EXPECT_TRUE(view.Set(10, 1, Access::kRead).empty());
  EXPECT_EQ(view.protection(10), Access::kNone);
  EXPECT_TRUE(view.runs().Narrowed(10));
  // Between readable pages it is opened: the three merge into one run.
  view.Set(9, 1, Access::kRead);
  view.Set(11, 1, Access::kRead);
  view.Set(20, 1, Access::kRead);
  view.CloseAll();
  for (std::uint64_t page : {9, 11}) {  // opened by a rise, not by a fault (which opens page 10)
    view.Set(page, 1, Access::kNone);
    view.Set(page, 1, Access::kRead);
  }
  EXPECT_EQ(view.Set(10, 1, Access::kRead), (std::vector<Change>{{10, 1, Access::kRead}}));
  view.Check("after the falls");
  // Set again to what it was, a closed page stays closed; an access that rises opens it: a
  // thread is waiting for it.
  EXPECT_TRUE(view.Set(20, 1, Access::kRead).empty());
  EXPECT_EQ(view.Set(20, 1, Access::kWrite), (std::vector<Change>{{20, 1, Access::kWrite}}));
  view.Check("after the rise");
}

// A home opens a large region at once (one run), then makes runs elsewhere: closing blocks of the
// large region would merge nothing, so the blocks that alternate are closed, though opened later.
TEST(ProtectionRunsTest, ALargeRegionOpenedAtOnceIsNotClosedForNothing) {
  Harness view(8192, 128);
  view.Set(0, 1024, Access::kWrite);
  for (std::uint64_t page = 2048; page < 8192; page += 2) view.Set(page, 1, Access::kRead);
  view.Check("after the alternating pages");
  EXPECT_GT(view.runs().pages_closed(), 0u);
  for (std::uint64_t page = 0; page < 1024; ++page) {
    ASSERT_EQ(view.protection(page), Access::kWrite) << "page " << page;
  }
}

// Regions alternating block by block: no block's closing alone merges runs, yet the budget holds
// (closed blocks next to each other merge).
TEST(ProtectionRunsTest, BlocksThatMergeNothingAloneAreClosedWhenNothingElseIs) {
  Harness view(256 * kBlock, ProtectionRuns::kMinBudget);
  for (std::uint64_t block = 0; block < 256; ++block) {
    view.Set(block * kBlock, kBlock, block % 2 == 0 ? Access::kWrite : Access::kRead);
    view.Check("after block " + std::to_string(block));
  }
  EXPECT_GT(view.runs().pages_closed(), 0u);
}

TEST(ProtectionRunsTest, ClosingEverythingHalvesTheBudgetAndLeavesOneRun) {
  Harness view(4096, 1000);
  for (std::uint64_t page = 0; page < 1200; page += 2) view.Set(page, 1, Access::kWrite);
  std::uint64_t runs = view.runs().runs();
  view.CloseAll();
  view.Check("after closing everything");
  EXPECT_EQ(view.runs().runs(), 1u);
  EXPECT_EQ(view.runs().budget(), runs / 2);
  for (std::uint64_t page = 0; page < 1200; page += 2) ASSERT_TRUE(view.runs().Narrowed(page));
}

TEST(ProtectionRunsTest, ASetOutsideTheViewIsRefused) {
  ProtectionRuns runs(100, 64);
  std::vector<Change> changes;
  EXPECT_THROW(runs.Set(90, 20, Access::kRead, changes), std::exception);
  EXPECT_TRUE(changes.empty());
}

// Random sets (single pages and ranges, rising and falling) and faults, over a view whose last
// block is short, with the smallest budget: every rule after every call.
TEST(ProtectionRunsTest, RandomSetsAndFaultsKeepEveryRule) {
  constexpr std::uint64_t kPages = 2048 + 5;
  Harness view(kPages, ProtectionRuns::kMinBudget);
  std::mt19937_64 random(12345);
  for (int step = 0; step < 20000; ++step) {
    std::uint64_t page = random() % kPages;
    switch (random() % 8) {
      case 0:
        view.Set(page, 1 + random() % std::min<std::uint64_t>(40, kPages - page),
                 static_cast<Access>(random() % 3));
        break;
      case 1:
      case 2: view.Fault(page); break;
      default: view.Set(page, 1, static_cast<Access>(random() % 3)); break;
    }
    if (step % 50 == 0) {
      view.Check("at step " + std::to_string(step));
    } else {
      ASSERT_LE(view.runs().runs(), view.runs().budget()) << "at step " << step;
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
  view.Check("at the end");
  EXPECT_GT(view.runs().pages_closed(), 0u);
}

}  // namespace
}  // namespace lmdx::dsm::internal

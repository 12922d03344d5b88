// The page table's concurrency, without the DSM's fixed range, so that ThreadSanitizer can watch
// it (CI runs this under --config=tsan): chunks created by racing first touches, access read
// lock-free while it changes, and the busy flag that makes threads of one node share one
// transaction per page, as dsm/service.cc's fault path uses it.
#include "consistency/page_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace lmdx::consistency {
namespace {

constexpr int kThreads = 6;

// Pages far apart, in chunks nobody touched: every thread's first touch races to create them.
TEST(PageTableTest, RacingFirstTouchesCreateEachChunkOnceAndKeepEveryWrite) {
  const std::uint64_t pages = std::uint64_t{1} << 24;
  PageTable table(pages);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&table, t, pages] {
      for (std::uint64_t i = static_cast<std::uint64_t>(t); i < pages; i += 40009) {
        std::lock_guard lock(table.StripeMutex(i));
        table.set_access(i, i % 2 == 0 ? Access::kRead : Access::kWrite);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    for (std::uint64_t i = static_cast<std::uint64_t>(t); i < pages; i += 40009) {
      ASSERT_EQ(table.access(i), i % 2 == 0 ? Access::kRead : Access::kWrite) << i;
    }
  }
  // A page nobody touched has no access, in a chunk that exists or not.
  EXPECT_EQ(table.access(7), Access::kNone);
  EXPECT_EQ(table.access(pages - 1), Access::kNone);
}

// Every thread "faults" on every page: the first to find it without access marks it busy and
// fetches it; the others wait on the stripe until it is open. Each page is fetched exactly once,
// and nobody returns before its page is readable.
TEST(PageTableTest, ThreadsFaultingOnOnePageShareOneTransaction) {
  const std::uint64_t pages = 512;
  PageTable table(pages);
  std::vector<std::atomic<int>> fetches(pages);
  std::atomic<int> early{0};
  auto fault = [&](PageId page) {
    std::unique_lock lock(table.StripeMutex(page));
    table.StripeChanged(page).wait(lock, [&] { return !table.busy(page); });
    if (table.access(page) >= Access::kRead) return;
    table.set_busy(page, true);
    lock.unlock();
    fetches[page].fetch_add(1);  // the protocol's work, outside the lock
    lock.lock();
    table.set_access(page, Access::kRead);
    table.set_busy(page, false);
    table.StripeChanged(page).notify_all();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (PageId page = 0; page < pages; ++page) {
        fault(page);
        if (table.access(page) < Access::kRead) early.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (PageId page = 0; page < pages; ++page) EXPECT_EQ(fetches[page].load(), 1) << page;
  EXPECT_EQ(early.load(), 0);
}

// Readers of the access byte (the fault handler's lock-free check) while writers upgrade and
// drop it under the stripe lock: a reader sees only values that were set.
TEST(PageTableTest, LockFreeReadersSeeOnlyAccessThatWasSet) {
  PageTable table(1024);
  std::atomic<bool> stop{false};
  std::atomic<int> impossible{0};
  std::thread reader([&] {
    while (!stop.load()) {
      for (PageId page = 0; page < 1024; ++page) {
        if (static_cast<int>(table.access(page)) > static_cast<int>(Access::kWrite)) {
          impossible.fetch_add(1);
        }
      }
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      for (int round = 0; round < 200; ++round) {
        for (PageId page = static_cast<PageId>(t); page < 1024; page += 2) {
          std::lock_guard lock(table.StripeMutex(page));
          table.set_access(page, static_cast<Access>((round + page) % 3));
        }
      }
    });
  }
  for (auto& writer : writers) writer.join();
  stop = true;
  reader.join();
  EXPECT_EQ(impossible.load(), 0);
  for (PageId page = 0; page < 1024; ++page) {
    EXPECT_EQ(table.access(page), static_cast<Access>((199 + page) % 3)) << page;
  }
}

}  // namespace
}  // namespace lmdx::consistency

// Write notices as hlrc uses them (consistency/write_notices.h): nodes are WriteNoticeLogs that
// hand each other the payloads a release would send, in the orders locks and barriers would.
#include "consistency/write_notices.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "consistency/write_notices.pb.h"

namespace lmdx::consistency {
namespace {

using Pages = std::vector<PageId>;

// One acquire of `log` with the payload of one release.
WriteNoticeLog::Received Acquire(WriteNoticeLog& log, const std::string& payload) {
  std::vector<std::string> payloads = {payload};
  return log.Merge(payloads);
}

std::string Payload(int sender, const std::vector<std::uint64_t>& pages,
                    const std::vector<int>& writers, const std::vector<std::uint64_t>& intervals) {
  wire::WriteNotices notices;
  notices.set_sender(sender);
  for (std::uint64_t page : pages) notices.add_pages(page);
  for (int writer : writers) notices.add_writers(writer);
  for (std::uint64_t interval : intervals) notices.add_intervals(interval);
  return notices.SerializeAsString();
}

TEST(WriteNoticesTest, IntervalsAreNumberedFromOneInReleaseOrder) {
  WriteNoticeLog log(0, 2);
  EXPECT_EQ(log.entries(), 0u);
  EXPECT_EQ(log.Close(Pages{3}), 1u);
  EXPECT_EQ(log.Close(Pages{4, 5}), 2u);
  EXPECT_EQ(log.Close(Pages{3}), 3u);
  // One entry per (page, writer), however many intervals wrote it.
  EXPECT_EQ(log.entries(), 3u);
  EXPECT_EQ(log.size(), 2);
}

TEST(WriteNoticesTest, IntervalsFollowALamportClockAcrossNodes) {
  // a closes 1, 2, 3; b, having heard of a's 3, numbers its next interval past it, and a, having
  // heard of b's, past that: an interval that happened before another has the smaller number.
  WriteNoticeLog a(0, 2);
  WriteNoticeLog b(1, 2);
  a.Close(Pages{1});
  a.Close(Pages{1});
  EXPECT_EQ(a.Close(Pages{2}), 3u);
  EXPECT_EQ(b.Close(Pages{5}), 1u);  // concurrent with a's: any number
  Acquire(b, a.Encode());
  EXPECT_EQ(b.Close(Pages{1}), 4u);
  Acquire(a, b.Encode());
  EXPECT_EQ(a.Close(Pages{2}), 5u);
  // Never backwards for one node, whatever it hears.
  Acquire(b, Payload(0, {9}, {0}, {2}));
  EXPECT_EQ(b.Close(Pages{3}), 5u);
  // The newest interval of one writer that payloads name.
  std::vector<std::string> payloads = {a.Encode(), b.Encode()};
  EXPECT_EQ(WriteNoticeLog::NewestOf(payloads, 0), 5u);
  EXPECT_EQ(WriteNoticeLog::NewestOf(payloads, 1), 5u);
}

TEST(WriteNoticesTest, ARequestForACollectionSurvivesMergingAndReachesTheAcquirer) {
  WriteNoticeLog a(0, 3);
  WriteNoticeLog b(1, 3);
  WriteNoticeLog c(2, 3);
  a.Close(Pages{1});
  std::vector<std::string> quiet = {a.Encode(), b.Encode()};
  EXPECT_FALSE(Acquire(c, WriteNoticeLog::MergeEncoded(quiet, 3)).collect_diffs);
  std::vector<std::string> asking = {a.Encode(), b.Encode(/*collect_diffs=*/true)};
  WriteNoticeLog::Received received = Acquire(c, WriteNoticeLog::MergeEncoded(asking, 3));
  EXPECT_TRUE(received.collect_diffs);
  EXPECT_EQ(received.senders, (std::set<int>{0, 1}));
}

TEST(WriteNoticesTest, ANoticeIsNewsOnceAndANewerIntervalIsNewsAgain) {
  WriteNoticeLog a(0, 2);
  WriteNoticeLog b(1, 2);
  a.Close(Pages{1, 2});
  WriteNoticeLog::Received first = Acquire(b, a.Encode());
  EXPECT_EQ(first.pages, (Pages{1, 2}));
  EXPECT_EQ(first.notices, 2u);
  EXPECT_EQ(first.senders, (std::set<int>{0}));

  // The same lock handed over again without new writes: nothing to drop.
  WriteNoticeLog::Received again = Acquire(b, a.Encode());
  EXPECT_TRUE(again.pages.empty());
  EXPECT_EQ(again.notices, 0u);
  EXPECT_EQ(again.senders, (std::set<int>{0}));

  // A later interval that wrote page 2 again: page 2 is stale once more, page 1 is not.
  a.Close(Pages{2});
  WriteNoticeLog::Received later = Acquire(b, a.Encode());
  EXPECT_EQ(later.pages, (Pages{2}));
  EXPECT_EQ(later.notices, 1u);
}

TEST(WriteNoticesTest, AnOlderIntervalArrivingAfterANewerOneIsNoNews) {
  WriteNoticeLog a(0, 3);
  WriteNoticeLog b(1, 3);
  WriteNoticeLog c(2, 3);
  a.Close(Pages{7});
  Acquire(b, a.Encode());  // b knows a's interval 1
  std::string old_path = b.Encode();
  a.Close(Pages{7});  // interval 2
  EXPECT_EQ(Acquire(c, a.Encode()).pages, (Pages{7}));
  // c hears of interval 1 through b afterwards: it has already acted on a newer one.
  WriteNoticeLog::Received stale = Acquire(c, old_path);
  EXPECT_TRUE(stale.pages.empty());
  EXPECT_EQ(stale.notices, 0u);
}

TEST(WriteNoticesTest, ANodesOwnNoticesNeverInvalidateItsCopy) {
  WriteNoticeLog a(0, 2);
  WriteNoticeLog b(1, 2);
  a.Close(Pages{1, 2, 3});
  Acquire(b, a.Encode());
  b.Close(Pages{9});
  // b's payload carries a's notices back to a, beside b's own.
  WriteNoticeLog::Received back = Acquire(a, b.Encode());
  EXPECT_EQ(back.pages, (Pages{9}));
  EXPECT_EQ(back.notices, 1u);
  // Even a newer-looking interval of its own is not news to a node.
  EXPECT_TRUE(Acquire(a, Payload(1, {1}, {0}, {99})).pages.empty());
}

// A releases to B through one lock, B to C through another: C must drop what A wrote, though C
// never synchronised with A.
TEST(WriteNoticesTest, NoticesAreTransitive) {
  WriteNoticeLog a(0, 4);
  WriteNoticeLog b(1, 4);
  WriteNoticeLog c(2, 4);
  WriteNoticeLog d(3, 4);
  a.Close(Pages{5});
  EXPECT_EQ(Acquire(b, a.Encode()).pages, (Pages{5}));
  b.Close(Pages{6});
  WriteNoticeLog::Received at_c = Acquire(c, b.Encode());
  EXPECT_EQ(at_c.pages, (Pages{5, 6}));
  EXPECT_EQ(at_c.notices, 2u);
  EXPECT_EQ(at_c.senders, (std::set<int>{1}));
  // And further: c wrote nothing, yet its release passes both on to d.
  EXPECT_EQ(Acquire(d, c.Encode()).pages, (Pages{5, 6}));
}

TEST(WriteNoticesTest, PagesOfSeveralWritersAndPayloadsComeOnceAndSorted) {
  WriteNoticeLog a(0, 3);
  WriteNoticeLog b(1, 3);
  WriteNoticeLog c(2, 3);
  a.Close(Pages{30, 10});
  b.Close(Pages{10, 20});
  std::vector<std::string> payloads = {a.Encode(), b.Encode()};
  WriteNoticeLog::Received received = c.Merge(payloads);
  EXPECT_EQ(received.pages, (Pages{10, 20, 30}));
  EXPECT_EQ(received.notices, 4u);  // page 10 by two writers: two notices, one page
  EXPECT_EQ(received.senders, (std::set<int>{0, 1}));
}

// A barrier's arrival as a release makes it: the notices, and what the sender has merged.
std::string Arrival(const WriteNoticeLog& log) {
  return log.Encode(/*collect_diffs=*/false, /*with_knowledge=*/true);
}

// Every node arrives at a barrier with its payload and receives all of them at the departure; the
// logs drop what every node had merged before it arrived, so the notices of one barrier leave the
// logs at the next, whether the departure carries the arrivals or their merge.
TEST(WriteNoticesTest, TheNextBarrierWithEveryNodesPayloadEmptiesTheLogs) {
  constexpr int kNodes = 4;
  std::vector<std::unique_ptr<WriteNoticeLog>> logs;
  for (int rank = 0; rank < kNodes; ++rank)
    logs.push_back(std::make_unique<WriteNoticeLog>(rank, kNodes));
  // A round of lock handoffs first, so the logs also hold notices learnt from others.
  logs[0]->Close(Pages{100});
  Acquire(*logs[1], logs[0]->Encode());
  logs[1]->Close(Pages{101});
  Acquire(*logs[2], logs[1]->Encode());
  for (int rank = 0; rank < kNodes; ++rank) logs[rank]->Close(Pages{static_cast<PageId>(rank)});
  EXPECT_EQ(logs[2]->entries(), 3u);

  std::vector<std::string> arrivals;
  for (const auto& log : logs) arrivals.push_back(Arrival(*log));
  for (int rank = 0; rank < kNodes; ++rank) {
    WriteNoticeLog::Received received = logs[rank]->Merge(arrivals);
    EXPECT_EQ(received.senders.size(), static_cast<std::size_t>(kNodes));
    logs[rank]->ForgetKnownEverywhere(arrivals);
    // No node had merged every other node's last interval before it arrived.
    EXPECT_EQ(logs[rank]->entries(), 6u) << "rank " << rank;
  }
  std::vector<std::string> again;
  for (const auto& log : logs) again.push_back(Arrival(*log));
  std::vector<std::string> merged = {WriteNoticeLog::MergeEncoded(again, kNodes)};
  for (int rank = 0; rank < kNodes; ++rank) {
    EXPECT_TRUE(logs[rank]->Merge(merged).pages.empty());
    EXPECT_EQ(logs[rank]->ForgetKnownEverywhere(merged), 6u) << "rank " << rank;
    EXPECT_EQ(logs[rank]->entries(), 0u) << "rank " << rank;
  }
  // The acquirer's memory of what it acted on outlives the collection; a new interval is news.
  logs[3]->Close(Pages{3});
  WriteNoticeLog::Received after = Acquire(*logs[0], logs[3]->Encode());
  EXPECT_EQ(after.pages, (Pages{3}));
  EXPECT_EQ(logs[3]->entries(), 1u);
}

// A node that has left a barrier hands a lock to a thread of a node that has not yet taken the
// barrier's departure in: the lock's payload still names what the barrier carried.
TEST(WriteNoticesTest, ABarriersNoticesGoOnWithALockToANodeThatHasNotTakenItIn) {
  WriteNoticeLog holder(0, 3);
  WriteNoticeLog writer(1, 3);
  WriteNoticeLog late(2, 3);
  writer.Close(Pages{5});
  std::vector<std::string> arrivals = {Arrival(holder), Arrival(writer), Arrival(late)};
  holder.Merge(arrivals);
  EXPECT_EQ(holder.ForgetKnownEverywhere(arrivals), 0u);
  EXPECT_EQ(Acquire(late, holder.Encode()).pages, (Pages{5}));
}

// Payloads without knowledge (locks, semaphores, or senders that merged nothing yet) let nothing
// go.
TEST(WriteNoticesTest, ArrivalsThatKnowNothingLetNothingGo) {
  WriteNoticeLog a(0, 2);
  WriteNoticeLog b(1, 2);
  a.Close(Pages{1});
  Acquire(b, a.Encode());
  b.Close(Pages{2});
  Acquire(a, b.Encode());
  std::vector<std::string> plain = {a.Encode(), b.Encode()};
  EXPECT_EQ(a.ForgetKnownEverywhere(plain), 0u);
  std::vector<std::string> one_knows = {Arrival(a), b.Encode()};
  EXPECT_EQ(a.ForgetKnownEverywhere(one_knows), 0u);
  std::vector<std::string> both_know = {Arrival(a), Arrival(b)};
  EXPECT_EQ(a.ForgetKnownEverywhere(both_know), 2u);
}

TEST(WriteNoticesTest, EachNodeDropsAtTheBarrierExactlyWhatItHadNotHeardOf) {
  WriteNoticeLog a(0, 3);
  WriteNoticeLog b(1, 3);
  WriteNoticeLog c(2, 3);
  a.Close(Pages{1});
  Acquire(b, a.Encode());  // b heard of page 1 through a lock
  b.Close(Pages{2});
  c.Close(Pages{3});
  std::vector<std::string> arrivals = {a.Encode(), b.Encode(), c.Encode()};
  EXPECT_EQ(a.Merge(arrivals).pages, (Pages{2, 3}));
  EXPECT_EQ(b.Merge(arrivals).pages, (Pages{3}));
  EXPECT_EQ(c.Merge(arrivals).pages, (Pages{1, 2}));
}

// A thread of a node closes a new interval after the node's barrier arrival left but before the
// departure came: the departure's garbage collection must keep it, or the next acquirer would
// never hear of that write.
TEST(WriteNoticesTest, AnIntervalClosedAfterTheBarrierArrivalSurvivesTheCollection) {
  WriteNoticeLog a(0, 2);
  WriteNoticeLog b(1, 2);
  a.Close(Pages{1, 2});
  b.Close(Pages{8});
  std::vector<std::string> first = {Arrival(a), Arrival(b)};
  a.Merge(first);
  b.Merge(first);
  std::vector<std::string> arrivals = {Arrival(a), Arrival(b)};
  a.Close(Pages{2, 3});  // after the arrival: page 2 in a newer interval, page 3 new
  a.Merge(arrivals);
  a.ForgetKnownEverywhere(arrivals);
  EXPECT_EQ(a.entries(), 2u);  // (2, a) at interval 2 and (3, a); (1, a) and (8, b) are gone
  b.Merge(arrivals);
  b.ForgetKnownEverywhere(arrivals);
  EXPECT_EQ(b.entries(), 0u);
  WriteNoticeLog::Received later = Acquire(b, a.Encode());
  EXPECT_EQ(later.pages, (Pages{2, 3}));
  EXPECT_EQ(later.notices, 2u);
}

TEST(WriteNoticesTest, AnEmptyPayloadIsNoNoticesAndNoSender) {
  WriteNoticeLog a(0, 2);
  std::vector<std::string> payloads = {std::string()};
  WriteNoticeLog::Received received = a.Merge(payloads);
  EXPECT_TRUE(received.pages.empty());
  EXPECT_TRUE(received.senders.empty());
  a.ForgetKnownEverywhere(payloads);
  // A release with nothing written still names its sender: a barrier counts it as arrived.
  WriteNoticeLog b(1, 2);
  EXPECT_EQ(Acquire(a, b.Encode()).senders, (std::set<int>{1}));
}

TEST(WriteNoticesTest, MalformedPayloadsThrow) {
  struct Case {
    const char* what;
    std::string payload;
  };
  const std::vector<Case> cases = {
      {"bytes that are no protobuf", std::string("\xff\xff\xff\xff\xff", 5)},
      {"a truncated payload", Payload(1, {1, 2}, {1, 1}, {1, 1}).substr(0, 5)},
      {"fewer writers than pages", Payload(1, {1, 2}, {1}, {1, 1})},
      {"fewer intervals than pages", Payload(1, {1, 2}, {1, 1}, {1})},
      {"a sender beyond the job", Payload(3, {1}, {1}, {1})},
      {"a negative sender", Payload(-1, {1}, {1}, {1})},
      {"a writer beyond the job", Payload(1, {1}, {3}, {1})},
      {"a negative writer", Payload(1, {1}, {-2}, {1})},
  };
  for (const Case& bad : cases) {
    SCOPED_TRACE(bad.what);
    WriteNoticeLog log(0, 3);
    std::vector<std::string> payloads = {bad.payload};
    EXPECT_THROW(log.Merge(payloads), lmdx::Error);
  }
  // The collection parses what it is given as well.
  WriteNoticeLog log(0, 3);
  log.Close(Pages{1});
  std::vector<std::string> garbage = {std::string("\xff\xff\xff", 3)};
  EXPECT_THROW(log.ForgetKnownEverywhere(garbage), lmdx::Error);
  std::vector<std::string> uneven = {Payload(1, {1, 2}, {0}, {1, 1})};
  EXPECT_THROW(log.ForgetKnownEverywhere(uneven), lmdx::Error);
}

}  // namespace
// A grant leaves out the notices its acquirer's log names, and only those.
TEST(WriteNoticeTrimTest, AGrantLeavesOutWhatTheAcquirerKnows) {
  WriteNoticeLog writer(0, 3);
  writer.Close(std::vector<PageId>{10, 11});  // interval 1
  std::string first = writer.Encode();
  writer.Close(std::vector<PageId>{12});  // interval 2
  WriteNoticeLog acquirer(1, 3);
  std::vector<std::string> payloads{first};
  acquirer.Merge(payloads);  // knows rank 0 up to interval 1
  std::string trimmed = WriteNoticeLog::Trim(writer.Encode(), acquirer.Knowledge());
  WriteNoticeLog fresh(2, 3);
  std::vector<std::string> received{trimmed};
  WriteNoticeLog::Received got = fresh.Merge(received);
  EXPECT_EQ(got.pages, std::vector<PageId>{12});
  EXPECT_EQ(got.senders, std::set<int>{0});
  // What fresh now knows covers the first payload whole; a node that knows nothing gets it all.
  EXPECT_LT(WriteNoticeLog::Trim(first, fresh.Knowledge()).size(), first.size());
  WriteNoticeLog nobody(2, 3);
  EXPECT_EQ(WriteNoticeLog::Trim(first, nobody.Knowledge()).size(), first.size());
  EXPECT_EQ(WriteNoticeLog::Trim(first, std::string()), first);
  EXPECT_THROW(WriteNoticeLog::Trim(first, std::string("\xff\xff", 2)), Error);
}

// A grant trimmed for a node that then passes it on untaken gets back what the trim left out, so
// a third node that knew nothing hears of every notice.
TEST(WriteNoticeTrimTest, AGrantPassedOnUntakenGetsBackWhatItsTrimLeftOut) {
  WriteNoticeLog writer(0, 3);
  writer.Close(std::vector<PageId>{10});  // interval 1
  WriteNoticeLog between(1, 3);
  std::vector<std::string> earlier{writer.Encode()};
  between.Merge(earlier);                 // learns of page 10 by another way
  writer.Close(std::vector<PageId>{11});  // interval 2
  std::string trimmed = WriteNoticeLog::Trim(writer.Encode(), between.Knowledge());
  WriteNoticeLog next(2, 3);
  std::vector<std::string> as_it_came{trimmed};
  EXPECT_EQ(WriteNoticeLog(2, 3).Merge(as_it_came).pages, std::vector<PageId>{11});
  std::vector<std::string> untrimmed{
      WriteNoticeLog::Trim(between.Untrim(trimmed), next.Knowledge())};
  WriteNoticeLog::Received got = next.Merge(untrimmed);
  EXPECT_EQ(got.pages, (std::vector<PageId>{10, 11}));
  EXPECT_EQ(got.senders, std::set<int>{0});  // still the releaser's payload
  EXPECT_EQ(between.Untrim(std::string()), std::string());
  EXPECT_THROW(between.Untrim(std::string("\xff\xff", 2)), Error);
}

}  // namespace lmdx::consistency

// The slots a spliced udp datagram's own bytes go into the kernel from: a slot may take new
// bytes only when no datagram that carries it can still be unread.
#include "net/udp/internal/udp_splice_slots.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace lmdx::net::internal {
namespace {

using Slot = SpliceSlots::Slot;

// A slot filled with `text` split into two pieces, as a header and a segment's copied part.
std::optional<Slot> FillWith(SpliceSlots& slots, const std::string& text, std::int64_t now_ms) {
  std::string copy = text;
  std::size_t half = copy.size() / 2;
  iovec own[2] = {{copy.data(), half}, {copy.data() + half, copy.size() - half}};
  return slots.Fill(own, now_ms);
}

std::string TextOf(const Slot& slot) {
  return std::string(reinterpret_cast<const char*>(slot.bytes.data()), slot.bytes.size());
}

TEST(SpliceSlotsTest, AFilledSlotHoldsTheOwnBytesInOnePageOfItsOwn) {
  SpliceSlots slots;
  std::vector<Slot> filled;
  std::set<std::uint32_t> indexes;
  for (int i = 0; i < 40; ++i) {
    std::optional<Slot> slot = FillWith(slots, "header " + std::to_string(i) + " and body", 0);
    ASSERT_TRUE(slot);
    EXPECT_TRUE(indexes.insert(slot->index).second) << "slot " << slot->index << " given twice";
    filled.push_back(*slot);
  }
  for (int i = 0; i < 40; ++i) {
    const Slot& slot = filled[static_cast<std::size_t>(i)];
    // Its bytes were copied in: the buffers they came from are gone.
    EXPECT_EQ(TextOf(slot), "header " + std::to_string(i) + " and body");
    auto start = reinterpret_cast<std::uintptr_t>(slot.bytes.data());
    // One pipe buffer takes a slot whole only if the slot lies in one page.
    EXPECT_EQ(start / 4096, (start + SpliceSlots::kSlotBytes - 1) / 4096) << "slot " << slot.index;
  }
}

TEST(SpliceSlotsTest, OwnBytesLongerThanASlotAreWrittenInstead) {
  SpliceSlots slots;
  EXPECT_TRUE(FillWith(slots, std::string(SpliceSlots::kSlotBytes, 'x'), 0));
  EXPECT_FALSE(FillWith(slots, std::string(SpliceSlots::kSlotBytes + 1, 'x'), 0));
}

TEST(SpliceSlotsTest, AFreedSlotTakesNewBytesAtOnce) {
  SpliceSlots slots;
  std::optional<Slot> first = FillWith(slots, "first datagram", 0);
  ASSERT_TRUE(first);
  slots.Free(first->index);
  std::optional<Slot> next = FillWith(slots, "next datagram", 0);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->index, first->index);
  EXPECT_EQ(TextOf(*next), "next datagram");
}

// Every slot taken: a datagram's own bytes are written into the pipe until one comes back.
TEST(SpliceSlotsTest, TheSlotsAreBounded) {
  SpliceSlots slots;
  std::vector<Slot> filled;
  for (std::size_t i = 0; i < SpliceSlots::kMaxSlots; ++i) {
    std::optional<Slot> slot = FillWith(slots, "datagram", 0);
    ASSERT_TRUE(slot) << "slot " << i;
    filled.push_back(*slot);
  }
  EXPECT_EQ(slots.slots(), SpliceSlots::kMaxSlots);
  EXPECT_FALSE(FillWith(slots, "one too many", 0));
  slots.Free(filled[7].index);
  std::optional<Slot> again = FillWith(slots, "one too many", 0);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->index, filled[7].index);
}

// A slot whose segment went twice may have a copy still unread: its bytes stay as they are until
// the quarantine ends, however short of slots the sender is.
TEST(SpliceSlotsTest, AQuarantinedSlotStaysUnchangedUntilItsTimeIsUp) {
  SpliceSlots slots;
  std::optional<Slot> held = FillWith(slots, "sent twice", 0);
  ASSERT_TRUE(held);
  slots.Quarantine(held->index, 1000);
  EXPECT_EQ(slots.quarantined(), 1u);
  const std::int64_t ends = 1000 + SpliceSlots::kQuarantineMs;
  std::vector<Slot> others;
  for (std::size_t i = 1; i < SpliceSlots::kMaxSlots; ++i) {
    std::optional<Slot> slot = FillWith(slots, "another", ends - 1);
    ASSERT_TRUE(slot) << "slot " << i;
    EXPECT_NE(slot->index, held->index);
    others.push_back(*slot);
  }
  EXPECT_FALSE(FillWith(slots, "too early", ends - 1));
  EXPECT_EQ(TextOf(*held), "sent twice");
  std::optional<Slot> reused = FillWith(slots, "in time", ends);
  ASSERT_TRUE(reused);
  EXPECT_EQ(reused->index, held->index);
  EXPECT_EQ(slots.quarantined(), 0u);
}

}  // namespace
}  // namespace lmdx::net::internal

#include "net/mailbox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

namespace lmdx::net {
namespace {

// Raw frames as a peer sends them: numbered per source from 0.
class Frames {
 public:
  InboundMessage Next(int source, const std::string& text, int tag = 0) {
    return Numbered(source, text, tag, next_[source]++);
  }
  static InboundMessage Numbered(int source, const std::string& text, int tag,
                                 std::uint64_t sequence) {
    InboundMessage message;
    message.header.type = MessageType::kRaw;
    message.header.source = source;
    message.header.payload_length = text.size();
    RawBody raw;
    raw.tag = tag;
    raw.sequence = sequence;
    message.body = raw.Encode();
    message.owned_payload = internal::AllocatePayload(text.size() + 1);
    std::memcpy(message.owned_payload.get(), text.data(), text.size());
    message.payload = message.owned_payload.get();
    return message;
  }

 private:
  std::map<int, std::uint64_t> next_;
};

std::string Take(Mailbox& mailbox, int source, int tag = LMDX_ANY_TAG,
                 Mailbox::Result* result = nullptr) {
  char buffer[64] = {};
  Mailbox::Result got = mailbox.Receive(source, tag, buffer, sizeof buffer, /*wait=*/true);
  if (result != nullptr) *result = got;
  return std::string(buffer, got.length);
}

TEST(RawBodyTest, RoundTripsAndRejectsOtherSizes) {
  RawBody raw;
  raw.tag = -7;
  raw.sequence = 0x0102030405060708;
  std::string body = raw.Encode();
  ASSERT_EQ(body.size(), RawBody::kSize);
  EXPECT_EQ(static_cast<unsigned char>(body[4]), 0x08);  // little-endian
  auto decoded = RawBody::Decode(body);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->tag, -7);
  EXPECT_EQ(decoded->sequence, 0x0102030405060708u);
  EXPECT_FALSE(RawBody::Decode(body.substr(1)).has_value());
  EXPECT_FALSE(RawBody::Decode("").has_value());
  // The same bytes in memory of the caller's (the express lane's headers).
  std::uint8_t bytes[RawBody::kSize];
  raw.Write(bytes);
  EXPECT_EQ(std::memcmp(bytes, body.data(), RawBody::kSize), 0);
  RawBody read = RawBody::Read(bytes);
  EXPECT_EQ(read.tag, -7);
  EXPECT_EQ(read.sequence, 0x0102030405060708u);
}

TEST(MailboxTest, KeepsTheOrderOfEachSource) {
  Mailbox mailbox;
  Frames frames;
  mailbox.Deliver(frames.Next(1, "a1"));
  mailbox.Deliver(frames.Next(2, "b1"));
  mailbox.Deliver(frames.Next(1, "a2"));
  EXPECT_EQ(Take(mailbox, 2), "b1");
  EXPECT_EQ(Take(mailbox, 1), "a1");
  Mailbox::Result result;
  EXPECT_EQ(Take(mailbox, LMDX_ANY_SOURCE, LMDX_ANY_TAG, &result), "a2");
  EXPECT_EQ(result.source, 1);
}

// A transport that keeps a message's data at its sender until a receive is posted asks to hear
// of the next post; the hook runs once per asking, and only for a receive that waits.
TEST(MailboxTest, TheNextPostedReceiveIsNoticedOncePerAsking) {
  Mailbox mailbox;
  Frames frames;
  std::atomic<int> noticed{0};
  mailbox.SetPostedHook([&] { ++noticed; });

  auto receive_in_thread = [&](const std::string& text) {
    std::string got;
    std::thread receiver([&] { got = Take(mailbox, 1); });
    // Deliver once the receive is posted, as the transport would once it looked again (or after
    // 10 s, when the notice never came and the counts below fail).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (noticed.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    mailbox.Deliver(frames.Next(1, text));
    receiver.join();
    return got;
  };
  mailbox.NoticeNextPost();
  EXPECT_EQ(receive_in_thread("first"), "first");
  EXPECT_EQ(noticed.load(), 1);

  // Not asked again: a posted receive runs no hook.
  mailbox.Deliver(frames.Next(1, "queued"));
  EXPECT_EQ(Take(mailbox, 1), "queued");  // matched at once, never posted
  char buffer[8];
  EXPECT_EQ(mailbox.Receive(1, LMDX_ANY_TAG, buffer, sizeof buffer, /*wait=*/false).code, 1);
  std::thread late_sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    mailbox.Deliver(frames.Next(1, "late"));
  });
  EXPECT_EQ(Take(mailbox, 1), "late");
  late_sender.join();
  EXPECT_EQ(noticed.load(), 1);

  // Asked, but the receive finds its message queued: nothing is posted, the asking stands.
  mailbox.NoticeNextPost();
  mailbox.Deliver(frames.Next(1, "waiting"));
  EXPECT_EQ(Take(mailbox, 1), "waiting");
  EXPECT_EQ(noticed.load(), 1);
  noticed = 0;
  EXPECT_EQ(receive_in_thread("second"), "second");
  EXPECT_EQ(noticed.load(), 1);
}

TEST(MailboxTest, ATagReceiveTakesTheFirstMessageWithThatTag) {
  Mailbox mailbox;
  Frames frames;
  mailbox.Deliver(frames.Next(1, "five-a", 5));
  mailbox.Deliver(frames.Next(1, "seven", 7));
  mailbox.Deliver(frames.Next(1, "five-b", 5));
  mailbox.Deliver(frames.Next(2, "two-seven", 7));
  Mailbox::Result result;
  EXPECT_EQ(Take(mailbox, 1, 7, &result), "seven");
  EXPECT_EQ(result.tag, 7);
  EXPECT_EQ(Take(mailbox, LMDX_ANY_SOURCE, 7, &result), "two-seven");
  EXPECT_EQ(result.source, 2);
  EXPECT_EQ(Take(mailbox, 1, 5), "five-a");
  char buffer[8];
  EXPECT_EQ(mailbox.Receive(1, 9, buffer, sizeof buffer, /*wait=*/false).code, 1);
  EXPECT_EQ(Take(mailbox, LMDX_ANY_SOURCE, LMDX_ANY_TAG, &result), "five-b");
  EXPECT_EQ(result.tag, 5);
}

TEST(MailboxTest, AMessageThatOvertookAnEarlierOneWaitsForIt) {
  Mailbox mailbox;
  // Numbers 2 and 1 come before 0 (they took a faster network).
  mailbox.Deliver(Frames::Numbered(3, "third", 0, 2));
  mailbox.Deliver(Frames::Numbered(3, "second", 0, 1));
  char buffer[8];
  EXPECT_EQ(mailbox.Receive(3, LMDX_ANY_TAG, buffer, sizeof buffer, /*wait=*/false).code, 1);
  // An early message is never placed in a posted receive's buffer.
  FrameHeader header;
  header.type = MessageType::kRaw;
  header.source = 3;
  header.payload_length = 5;
  RawBody early;
  early.sequence = 4;
  EXPECT_EQ(mailbox.Place(header, early.Encode()), nullptr);
  mailbox.Deliver(Frames::Numbered(3, "first", 0, 0));
  EXPECT_EQ(Take(mailbox, 3), "first");
  EXPECT_EQ(Take(mailbox, 3), "second");
  EXPECT_EQ(Take(mailbox, 3), "third");
}

TEST(MailboxTest, AMalformedBodyIsDropped) {
  Mailbox mailbox;
  InboundMessage message = Frames::Numbered(1, "x", 0, 0);
  message.body = "short";
  mailbox.Deliver(std::move(message));
  char buffer[8];
  EXPECT_EQ(mailbox.Receive(1, LMDX_ANY_TAG, buffer, sizeof buffer, /*wait=*/false).code, 1);
}

TEST(MailboxTest, TooSmallABufferIsAnErrorAndTheMessageStays) {
  Mailbox mailbox;
  Frames frames;
  mailbox.Deliver(frames.Next(3, "twelve bytes", 4));
  char small[4];
  Mailbox::Result result = mailbox.Receive(3, LMDX_ANY_TAG, small, sizeof small, true);
  EXPECT_EQ(result.code, LMDX_ERR_TRUNCATED);
  EXPECT_NE(result.error.find("12 bytes"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("4 bytes"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("tag 4"), std::string::npos) << result.error;
  EXPECT_EQ(Take(mailbox, 3), "twelve bytes");
}

TEST(MailboxTest, TryReceiveReportsNothingWaiting) {
  Mailbox mailbox;
  char buffer[8];
  EXPECT_EQ(mailbox.Receive(LMDX_ANY_SOURCE, LMDX_ANY_TAG, buffer, sizeof buffer, false).code, 1);
}

TEST(MailboxTest, PostedReceiveGetsThePayloadPlacedInItsBuffer) {
  Mailbox mailbox;
  char buffer[16] = {};
  Mailbox::Result result;
  std::thread receiver([&] { result = mailbox.Receive(4, 6, buffer, sizeof buffer, true); });
  FrameHeader header;
  header.type = MessageType::kRaw;
  header.source = 4;
  header.payload_length = 5;
  RawBody other_tag;
  other_tag.tag = 5;
  RawBody raw;
  raw.tag = 6;
  // Only a message with the receive's tag lands in its buffer.
  std::uint8_t* place = nullptr;
  for (;;) {
    EXPECT_EQ(mailbox.Place(header, other_tag.Encode()), nullptr);
    if ((place = mailbox.Place(header, raw.Encode())) != nullptr) break;
    std::this_thread::yield();
  }
  EXPECT_EQ(place, reinterpret_cast<std::uint8_t*>(buffer));
  const std::string hello = "hello";
  std::copy(hello.begin(), hello.end(), place);
  InboundMessage message;
  message.header = header;
  message.body = raw.Encode();
  message.payload = place;
  message.payload_placed = true;
  mailbox.Deliver(std::move(message));
  receiver.join();
  EXPECT_EQ(result.code, LMDX_OK);
  EXPECT_EQ(result.tag, 6);
  EXPECT_EQ(std::string(buffer, result.length), "hello");
}

// A payload lent by the transport (a shared-memory cell) is gone once Deliver returns: the cell is
// written again by the next frame. Whatever the mailbox keeps, it must have copied.
TEST(MailboxTest, ABorrowedPayloadIsCopiedBeforeDeliverReturns) {
  Mailbox mailbox;
  char cell[16];
  auto lend = [&cell](const std::string& text, std::uint64_t sequence) {
    InboundMessage message = Frames::Numbered(5, "", 0, sequence);
    message.header.payload_length = text.size();
    std::memcpy(cell, text.data(), text.size());
    message.payload = reinterpret_cast<std::uint8_t*>(cell);
    message.payload_borrowed = true;
    return message;
  };
  // Number 1 overtakes number 0 (it waits among the early), then 0 arrives with nobody
  // receiving (it waits among the unexpected), then 2 (the same); each time the cell is
  // overwritten after Deliver.
  mailbox.Deliver(lend("second", 1));
  std::memset(cell, 'x', sizeof cell);
  mailbox.Deliver(lend("first", 0));
  std::memset(cell, 'y', sizeof cell);
  mailbox.Deliver(lend("third message", 2));
  std::memset(cell, 'z', sizeof cell);
  EXPECT_EQ(Take(mailbox, 5), "first");
  EXPECT_EQ(Take(mailbox, 5), "second");
  // Too small a receive leaves the message queued, with its bytes.
  char small[4];
  EXPECT_EQ(mailbox.Receive(5, LMDX_ANY_TAG, small, sizeof small, true).code, LMDX_ERR_TRUNCATED);
  EXPECT_EQ(Take(mailbox, 5), "third message");
  // A receiver that waits meanwhile.
  Mailbox::Result result;
  std::string got;
  std::thread receiver([&] { got = Take(mailbox, 5, LMDX_ANY_TAG, &result); });
  // Whether it has posted yet or not, it gets the bytes the cell held at Deliver.
  mailbox.Deliver(lend("fourth", 3));
  std::memset(cell, 'w', sizeof cell);
  receiver.join();
  EXPECT_EQ(result.code, LMDX_OK);
  EXPECT_EQ(got, "fourth");
}

// Small raw messages (the express lane) share their source's numbering with raw frames, lend
// their payload as a cell does, and are matched like frames: by order, source and tag.
TEST(MailboxTest, SmallRawMessagesAreNumberedWithFramesAndTheirPayloadIsCopied) {
  Mailbox mailbox;
  char cell[16];
  auto small = [&cell](const std::string& text, int tag, std::uint64_t sequence) {
    std::memcpy(cell, text.data(), text.size());
    return SmallRaw{7, 0, tag, sequence, reinterpret_cast<const std::uint8_t*>(cell), text.size()};
  };
  // 2 (small) overtakes 1 (a frame) and 0 (small); nobody receives yet.
  mailbox.DeliverSmall(small("third", 0, 2));
  std::memset(cell, 'x', sizeof cell);
  char buffer[16];
  EXPECT_EQ(mailbox.Receive(7, LMDX_ANY_TAG, buffer, sizeof buffer, /*wait=*/false).code, 1);
  mailbox.DeliverSmall(small("first", 3, 0));
  std::memset(cell, 'y', sizeof cell);
  mailbox.Deliver(Frames::Numbered(7, "second", 0, 1));
  // A receive for tag 0 passes over the first message (tag 3), which stays for a later one.
  Mailbox::Result result;
  EXPECT_EQ(Take(mailbox, 7, 0, &result), "second");
  EXPECT_EQ(Take(mailbox, 7, 0), "third");
  EXPECT_EQ(Take(mailbox, 7, 3, &result), "first");
  EXPECT_EQ(result.source, 7);
  EXPECT_EQ(result.tag, 3);
  // A message repeated by mistake is dropped.
  mailbox.DeliverSmall(small("again", 0, 2));
  EXPECT_EQ(mailbox.Receive(7, LMDX_ANY_TAG, buffer, sizeof buffer, /*wait=*/false).code, 1);
  // Too small a receive: an error, and the message stays with its bytes.
  mailbox.DeliverSmall(small("twelve bytes", 0, 3));
  std::memset(cell, 'z', sizeof cell);
  char tiny[4];
  EXPECT_EQ(mailbox.Receive(7, LMDX_ANY_TAG, tiny, sizeof tiny, true).code, LMDX_ERR_TRUNCATED);
  EXPECT_EQ(Take(mailbox, 7), "twelve bytes");
  // A receiver that waits gets the bytes the cell held at delivery, posted in time or not.
  std::string got;
  std::thread receiver([&] { got = Take(mailbox, 7, LMDX_ANY_TAG, &result); });
  mailbox.DeliverSmall(small("fourth", 1, 4));
  std::memset(cell, 'w', sizeof cell);
  receiver.join();
  EXPECT_EQ(result.code, LMDX_OK);
  EXPECT_EQ(got, "fourth");
  EXPECT_EQ(result.tag, 1);
}

// A transport inside its own lock may hand a small message only to a receive that its calling
// thread drives (DeliverSmallToThisThread); any other receive gets it the usual way, and a
// posted receive too small for a small message is told so, the message kept.
TEST(MailboxTest, ASmallMessageGoesInsideATransportsLockOnlyToTheCallersOwnReceive) {
  Mailbox mailbox;
  std::atomic<int> posted{0};
  mailbox.SetPostedHook([&] { ++posted; });
  auto wait_until_posted = [&] {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (posted.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    posted = 0;
  };
  char cell[16];
  auto small = [&cell](const std::string& text, std::uint64_t sequence) {
    std::memcpy(cell, text.data(), text.size());
    return SmallRaw{5, 0, 0, sequence, reinterpret_cast<const std::uint8_t*>(cell), text.size()};
  };

  Mailbox::Result result;
  std::string got;
  mailbox.NoticeNextPost();
  std::thread receiver([&] { got = Take(mailbox, 5, LMDX_ANY_TAG, &result); });
  wait_until_posted();
  // The receive is another thread's, which sleeps: refused, nothing taken.
  EXPECT_FALSE(mailbox.DeliverSmallToThisThread(small("zero", 0)));
  mailbox.DeliverSmall(small("zero", 0));
  receiver.join();
  EXPECT_EQ(result.code, LMDX_OK);
  EXPECT_EQ(got, "zero");

  // Nobody receives: refused too, and the message waits its turn.
  EXPECT_FALSE(mailbox.DeliverSmallToThisThread(small("one", 1)));
  mailbox.DeliverSmall(small("one", 1));
  EXPECT_EQ(Take(mailbox, 5), "one");

  // A posted receive too small for the next message.
  Mailbox::Result truncated;
  mailbox.NoticeNextPost();
  std::thread tiny_receiver([&] {
    char tiny[4];
    truncated = mailbox.Receive(5, LMDX_ANY_TAG, tiny, sizeof tiny, /*wait=*/true);
  });
  wait_until_posted();
  mailbox.DeliverSmall(small("twelve bytes", 2));
  std::memset(cell, 'x', sizeof cell);
  tiny_receiver.join();
  EXPECT_EQ(truncated.code, LMDX_ERR_TRUNCATED);
  EXPECT_EQ(truncated.length, 12u);
  EXPECT_EQ(Take(mailbox, 5), "twelve bytes");
}

TEST(MailboxTest, LosingTheSourceFailsItsReceiver) {
  Mailbox mailbox;
  Mailbox::Result result;
  std::atomic<bool> returned{false};
  std::thread receiver([&] {
    char buffer[8];
    result = mailbox.Receive(6, LMDX_ANY_TAG, buffer, sizeof buffer, true);
    returned.store(true);
  });
  // FailSource fails only receives already posted, so repeat until the receiver has posted.
  while (!returned.load()) {
    mailbox.FailSource(6, "rank 6 was lost");
    std::this_thread::yield();
  }
  receiver.join();
  EXPECT_EQ(result.code, LMDX_ERR_PEER_LOST);
  EXPECT_EQ(result.error, "rank 6 was lost");
}

}  // namespace
}  // namespace lmdx::net

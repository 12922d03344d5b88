#include "net/mailbox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace lmdx::net {
namespace {

InboundMessage Raw(int source, const std::string& text) {
  InboundMessage message;
  message.header.type = MessageType::kRaw;
  message.header.source = source;
  message.header.payload_length = text.size();
  message.owned_payload = std::make_unique<std::uint8_t[]>(text.size() + 1);
  std::memcpy(message.owned_payload.get(), text.data(), text.size());
  message.payload = message.owned_payload.get();
  return message;
}

std::string Take(Mailbox& mailbox, int source, Mailbox::Result* result = nullptr) {
  char buffer[64] = {};
  Mailbox::Result got = mailbox.Receive(source, buffer, sizeof buffer, /*wait=*/true);
  if (result != nullptr) *result = got;
  return std::string(buffer, got.length);
}

TEST(MailboxTest, KeepsTheOrderOfEachSource) {
  Mailbox mailbox;
  mailbox.Deliver(Raw(1, "a1"));
  mailbox.Deliver(Raw(2, "b1"));
  mailbox.Deliver(Raw(1, "a2"));
  EXPECT_EQ(Take(mailbox, 2), "b1");
  EXPECT_EQ(Take(mailbox, 1), "a1");
  Mailbox::Result result;
  EXPECT_EQ(Take(mailbox, LMDX_ANY_SOURCE, &result), "a2");
  EXPECT_EQ(result.source, 1);
}

TEST(MailboxTest, TooSmallABufferIsAnErrorAndTheMessageStays) {
  Mailbox mailbox;
  mailbox.Deliver(Raw(3, "twelve bytes"));
  char small[4];
  Mailbox::Result result = mailbox.Receive(3, small, sizeof small, true);
  EXPECT_EQ(result.code, LMDX_ERR_TRUNCATED);
  EXPECT_NE(result.error.find("12 bytes"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("4 bytes"), std::string::npos) << result.error;
  EXPECT_EQ(Take(mailbox, 3), "twelve bytes");
}

TEST(MailboxTest, TryReceiveReportsNothingWaiting) {
  Mailbox mailbox;
  char buffer[8];
  EXPECT_EQ(mailbox.Receive(LMDX_ANY_SOURCE, buffer, sizeof buffer, false).code, 1);
}

TEST(MailboxTest, PostedReceiveGetsThePayloadPlacedInItsBuffer) {
  Mailbox mailbox;
  char buffer[16] = {};
  Mailbox::Result result;
  std::thread receiver([&] { result = mailbox.Receive(4, buffer, sizeof buffer, true); });
  std::uint8_t* place = nullptr;
  while ((place = mailbox.Place(4, 5)) == nullptr) std::this_thread::yield();
  EXPECT_EQ(place, reinterpret_cast<std::uint8_t*>(buffer));
  const std::string hello = "hello";
  std::copy(hello.begin(), hello.end(), place);
  InboundMessage message;
  message.header.type = MessageType::kRaw;
  message.header.source = 4;
  message.header.payload_length = 5;
  message.payload = place;
  message.payload_placed = true;
  mailbox.Deliver(std::move(message));
  receiver.join();
  EXPECT_EQ(result.code, LMDX_OK);
  EXPECT_EQ(std::string(buffer, result.length), "hello");
}

TEST(MailboxTest, LosingTheSourceFailsItsReceiver) {
  Mailbox mailbox;
  Mailbox::Result result;
  std::atomic<bool> returned{false};
  std::thread receiver([&] {
    char buffer[8];
    result = mailbox.Receive(6, buffer, sizeof buffer, true);
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

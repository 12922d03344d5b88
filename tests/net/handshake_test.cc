#include "net/handshake.h"

#include <gtest/gtest.h>

#include "net/wire.h"

namespace lmdx::net {
namespace {

// Moves bytes between the two sides until neither has anything to say.
void Converse(Handshake& server, Handshake& client) {
  for (int round = 0; round < 4; ++round) {
    std::string to_client = server.TakeOutput();
    client.Feed(reinterpret_cast<const std::uint8_t*>(to_client.data()), to_client.size());
    std::string to_server = client.TakeOutput();
    server.Feed(reinterpret_cast<const std::uint8_t*>(to_server.data()), to_server.size());
  }
}

JobSecret SecretOf(std::uint8_t fill) {
  JobSecret::Bytes bytes;
  bytes.fill(fill);
  return JobSecret(bytes);
}

TEST(HandshakeTest, SameSecretAuthenticatesBothWays) {
  JobSecret secret = JobSecret::Generate();
  Handshake server = Handshake::AsServer(secret, 2);
  Handshake client = Handshake::AsClient(secret, 5, 2);
  Converse(server, client);
  ASSERT_EQ(server.state(), Handshake::State::kDone) << server.error();
  ASSERT_EQ(client.state(), Handshake::State::kDone) << client.error();
  EXPECT_EQ(server.peer_id(), 5);
  EXPECT_EQ(client.peer_id(), 2);
}

TEST(HandshakeTest, WrongSecretIsRefusedByTheServer) {
  Handshake server = Handshake::AsServer(SecretOf(1), 0);
  Handshake client = Handshake::AsClient(SecretOf(2), 1, 0);
  Converse(server, client);
  EXPECT_EQ(server.state(), Handshake::State::kFailed);
  EXPECT_NE(server.error().find("job-secret proof"), std::string::npos) << server.error();
  EXPECT_NE(client.state(), Handshake::State::kDone);
}

TEST(HandshakeTest, ClientNoticesAServerWithTheWrongRank) {
  JobSecret secret = JobSecret::Generate();
  Handshake server = Handshake::AsServer(secret, 3);
  Handshake client = Handshake::AsClient(secret, 1, 4);
  Converse(server, client);
  EXPECT_EQ(client.state(), Handshake::State::kFailed);
  EXPECT_NE(client.error().find("expected"), std::string::npos) << client.error();
}

TEST(HandshakeTest, OtherWireVersionIsNamed) {
  JobSecret secret = JobSecret::Generate();
  Handshake server = Handshake::AsServer(secret, 0);
  std::string challenge = server.TakeOutput();
  challenge[4] = static_cast<char>(kWireVersion + 1);  // the version's low byte
  Handshake client = Handshake::AsClient(secret, 1, 0);
  client.Feed(reinterpret_cast<const std::uint8_t*>(challenge.data()), challenge.size());
  ASSERT_EQ(client.state(), Handshake::State::kFailed);
  EXPECT_NE(client.error().find("wire version " + std::to_string(kWireVersion + 1)),
            std::string::npos)
      << client.error();
}

TEST(HandshakeTest, GarbageFailsAtOnce) {
  Handshake server = Handshake::AsServer(JobSecret::Generate(), 0);
  const std::uint8_t garbage[] = "GET / HTTP/1.1\r\n\r\n";
  server.Feed(garbage, sizeof garbage);
  EXPECT_EQ(server.state(), Handshake::State::kFailed);
}

TEST(HandshakeTest, FeedTakesOnlyWhatTheHandshakeNeeds) {
  JobSecret secret = JobSecret::Generate();
  Handshake server = Handshake::AsServer(secret, 0);
  Handshake client = Handshake::AsClient(secret, 1, 0);
  std::string challenge = server.TakeOutput();
  client.Feed(reinterpret_cast<const std::uint8_t*>(challenge.data()), challenge.size());
  std::string response = client.TakeOutput() + "first frame bytes";
  std::size_t taken =
      server.Feed(reinterpret_cast<const std::uint8_t*>(response.data()), response.size());
  EXPECT_EQ(server.state(), Handshake::State::kDone);
  EXPECT_EQ(response.size() - taken, std::string("first frame bytes").size());
}

TEST(JobSecretTest, HexRoundTripsAndRejectsBadText) {
  JobSecret secret = JobSecret::Generate();
  auto parsed = JobSecret::FromHex(secret.Hex());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->bytes(), secret.bytes());
  EXPECT_FALSE(JobSecret::FromHex("abc"));
  EXPECT_FALSE(JobSecret::FromHex(std::string(64, 'g')));
  EXPECT_NE(JobSecret::Generate().bytes(), JobSecret::Generate().bytes());
}

}  // namespace
}  // namespace lmdx::net

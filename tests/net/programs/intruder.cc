// Rank 1 plays a stranger on the network: against rank 0's TCP port (and the rendezvous) it
// tries a handshake with the wrong secret, another wire version, random bytes, a frame with no
// handshake, a truncated handshake and a connection that never speaks. Every attempt must be
// refused, and afterwards ranks 0 and 1 still exchange a message as if nothing happened.
#include <lmdx/lmdx.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "api/internal/runtime_state.h"
#include "net/handshake.h"
#include "net/internal/socket.h"
#include "net/wire.h"

namespace {

using lmdx::Fd;
using lmdx::net::Handshake;
using lmdx::net::JobSecret;

[[noreturn]] void Fail(const std::string& what) {
  lmdx_abort(2, ("rank 1: " + what).c_str());
  std::abort();
}

Fd Connect(const std::string& address) {
  return lmdx::net::internal::ConnectTcpBlocking(lmdx::net::internal::ParseHostPort(address), 5000);
}

// True when the other side closes the connection (or resets it) within timeout_ms.
bool ClosedByPeer(int fd, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return false;
    pollfd waiting{fd, POLLIN, 0};
    if (::poll(&waiting, 1, static_cast<int>(left)) <= 0) continue;
    char buffer[4096];
    ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
    if (got <= 0) return true;  // end of stream or reset: refused
  }
}

void Send(int fd, const std::string& bytes) {
  // The peer may close while we write: that is the point, so errors are fine here.
  [[maybe_unused]] ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

std::string Feed(Handshake& handshake, const std::string& bytes) {
  handshake.Feed(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return handshake.TakeOutput();
}

std::string ReadChallenge(int fd) {
  std::string challenge(44, '\0');
  if (!lmdx::net::internal::ReadExactly(fd, challenge.data(), challenge.size(), 5000)) {
    Fail("the node sent no challenge");
  }
  return challenge;
}

void Attack(const std::string& address, const std::string& target) {
  std::mt19937_64 random(42);
  JobSecret wrong = JobSecret::Generate();

  {  // The wrong secret.
    Fd fd = Connect(address);
    std::string challenge = ReadChallenge(fd.get());
    // The challenge names the server's id; answer it as a client with the wrong secret.
    std::int32_t server_id = static_cast<std::int32_t>(
        static_cast<std::uint8_t>(challenge[8]) | static_cast<std::uint8_t>(challenge[9]) << 8 |
        static_cast<std::uint8_t>(challenge[10]) << 16 |
        static_cast<std::uint32_t>(static_cast<std::uint8_t>(challenge[11])) << 24);
    Handshake answer = Handshake::AsClient(wrong, 1, server_id);
    Send(fd.get(), Feed(answer, challenge));
    if (!ClosedByPeer(fd.get(), 3000)) Fail(target + " accepted a client with the wrong secret");
  }
  {  // Another wire version.
    Fd fd = Connect(address);
    std::string challenge = ReadChallenge(fd.get());
    std::string response(76, '\0');
    response.replace(0, 4, "LMDX");
    response[4] = static_cast<char>(lmdx::net::kWireVersion + 7);
    Send(fd.get(), response);
    if (!ClosedByPeer(fd.get(), 3000)) Fail(target + " accepted another wire version");
  }
  {  // Random bytes, a megabyte of them.
    Fd fd = Connect(address);
    std::string noise(1 << 20, '\0');
    for (char& c : noise) c = static_cast<char>(random());
    Send(fd.get(), noise);
    if (!ClosedByPeer(fd.get(), 3000)) Fail(target + " kept a connection that sent noise");
  }
  {  // A frame header with absurd lengths, without any handshake.
    Fd fd = Connect(address);
    lmdx::net::FrameHeader header;
    header.type = lmdx::net::MessageType::kRaw;
    header.source = 1;
    header.destination = 0;
    header.body_length = 0xffffffffu;
    header.payload_length = ~std::uint64_t{0};
    std::uint8_t bytes[lmdx::net::kFrameHeaderSize];
    lmdx::net::EncodeFrameHeader(header, bytes);
    Send(fd.get(), std::string(reinterpret_cast<char*>(bytes), sizeof bytes));
    // Its first bytes look like a handshake message, so it may take the 5 s deadline.
    if (!ClosedByPeer(fd.get(), 8000)) Fail(target + " kept a connection that sent a bad frame");
  }
  {  // A truncated handshake, then silence: the node gives up after its 5 s deadline.
    Fd fd = Connect(address);
    ReadChallenge(fd.get());
    Send(fd.get(), std::string("LMDX\x01\x00", 6));
    if (!ClosedByPeer(fd.get(), 8000)) Fail(target + " waited forever on a truncated handshake");
  }
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  if (lmdx_size() != 2) Fail("run this test with 2 nodes");
  std::vector<char> message(4096);
  if (lmdx_rank() == 1) {
    const auto& table = lmdx::api::CurrentNode()->job_table();
    for (const auto& endpoint : table.nodes(0).endpoints()) {
      if (endpoint.transport() == "tcp") Attack(endpoint.address(), "rank 0");
    }
    const char* rendezvous = std::getenv("LMDX_RENDEZVOUS");
    if (rendezvous == nullptr) Fail("LMDX_RENDEZVOUS is not set");
    Attack(rendezvous, "the rendezvous");
    for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<char>(i * 7);
    lmdx_send(0, message.data(), message.size());
    std::vector<char> echo(message.size());
    lmdx_recv(0, echo.data(), echo.size(), nullptr);
    if (echo != message) Fail("the echo differs");
  } else {
    lmdx_status status{};
    lmdx_recv(1, message.data(), message.size(), &status);
    lmdx_send(1, message.data(), status.length);
  }
  std::printf("rank %d verified after the intrusions\n", lmdx_rank());
  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}

// Rank 1 plays a stranger on the network: against rank 0's TCP port (and the rendezvous) it
// tries a handshake with the wrong secret, another wire version, random bytes, a frame with no
// handshake, a truncated handshake and a connection that never speaks. Every attempt must be
// refused, and afterwards ranks 0 and 1 still exchange a message as if nothing happened.
// Then it floods rank 0's TCP port with silent connections (beyond a bound they are refused at
// once) and, when rank 0 has a shared-memory socket, attacks that too: noise, silence, a
// connection from another user, and a flood. Round trips with rank 0 during each flood must stay
// quick.
#include <lmdx/lmdx.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// Probes the node drops only at its 5 s handshake deadline (silence, a truncated handshake): all
// are left open together and checked at the end, so their deadlines run at the same time.
struct SlowProbe {
  Fd fd;
  std::string if_kept;
};
std::vector<SlowProbe> slow_probes;

void ExpectClosedWithinTheDeadline(Fd fd, std::string if_kept) {
  slow_probes.push_back({std::move(fd), std::move(if_kept)});
}

void CheckSlowProbes() {
  // Two deadlines and a margin: the shm socket sets up 32 connections at a time, so the last of
  // a flood of 40 starts its 5 s when the first ones end.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(14);
  for (SlowProbe& probe : slow_probes) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!ClosedByPeer(probe.fd.get(), static_cast<int>(std::max<long long>(left.count(), 1)))) {
      Fail(probe.if_kept);
    }
  }
  slow_probes.clear();
}

Fd ConnectUnix(const std::string& abstract_name) {
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, abstract_name.data(), abstract_name.size());
  auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract_name.size());
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) {
    Fail("cannot reach the shared-memory socket @" + abstract_name);
  }
  return fd;
}

// One 4 KiB round trip with rank 0, in milliseconds.
double EchoMs() {
  std::vector<char> message(4096, 'e'), echo(4096);
  auto start = std::chrono::steady_clock::now();
  lmdx_send(0, message.data(), message.size());
  lmdx_recv(0, echo.data(), echo.size(), nullptr);
  if (echo != message) Fail("the echo differs");
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Round trips during a flood stay within a bound far below any deadline.
void ExpectQuickEcho(const std::string& during) {
  double ms = EchoMs();
  if (ms > 1000) Fail("a round trip took " + std::to_string(ms) + " ms during " + during);
  std::printf("rank 1: a round trip took %.2f ms during %s\n", ms, during.c_str());
}

// Silent connections, more than the node takes at once: beyond its bound they are refused at
// once, and rank 0 goes on serving.
void FloodTcp(const std::string& address) {
  constexpr int kFlood = 150;
  std::vector<Fd> flood;
  flood.reserve(kFlood);
  for (int i = 0; i < kFlood; ++i) flood.push_back(Connect(address));
  ExpectQuickEcho("a flood of " + std::to_string(kFlood) + " TCP connections");
  int refused = 0;
  for (Fd& fd : flood) refused += ClosedByPeer(fd.get(), 20) ? 1 : 0;
  // A job of 2 takes 2 * 2 + 64 handshakes at once.
  if (refused < kFlood - 68) {
    Fail("only " + std::to_string(refused) + " of " + std::to_string(kFlood) +
         " flooding connections were refused at once");
  }
  std::printf("rank 1: %d of %d flooding TCP connections were refused at once\n", refused, kFlood);
}

void AttackShm(const std::string& name) {
  {  // Noise.
    Fd fd = ConnectUnix(name);
    std::string noise(1 << 16, '\x5a');
    Send(fd.get(), noise);
    if (!ClosedByPeer(fd.get(), 8000)) Fail("the shm socket kept a connection that sent noise");
  }
  {  // Another user: refused before a byte is read. Only root can become another user (nobody).
    pid_t child = ::fork();
    if (child == 0) {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
      Fd fd = ConnectUnix(name);
      ::_exit(ClosedByPeer(fd.get(), 2000) ? 0 : 4);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      std::printf("rank 1: a connection from another user was refused\n");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 3) {
      Fail("the shm socket did not refuse another user at once (" + std::to_string(status) + ")");
    }
  }
  ExpectQuickEcho("the attacks on the shm socket");  // the pair's own segment is set up by now
  {  // A flood of silent connections while the pair talks over its segment.
    std::vector<Fd> flood;
    for (int i = 0; i < 40; ++i) flood.push_back(ConnectUnix(name));
    ExpectQuickEcho("a flood of 40 shm connections");
    for (Fd& fd : flood) {
      ExpectClosedWithinTheDeadline(std::move(fd), "a silent shm connection of a flood was kept");
    }
  }
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
    ExpectClosedWithinTheDeadline(std::move(fd),
                                  target + " kept a connection that sent a bad frame");
  }
  {  // A truncated handshake, then silence: the node gives up after its 5 s deadline.
    Fd fd = Connect(address);
    ReadChallenge(fd.get());
    Send(fd.get(), std::string("LMDX\x01\x00", 6));
    ExpectClosedWithinTheDeadline(std::move(fd),
                                  target + " waited forever on a truncated handshake");
  }
  ExpectClosedWithinTheDeadline(Connect(address), target + " kept a connection that never spoke");
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  if (lmdx_size() != 2) Fail("run this test with 2 nodes");
  std::vector<char> message(4096);
  if (lmdx_rank() == 1) {
    const auto& table = lmdx::api::CurrentNode()->job_table();
    std::string tcp, shm;
    for (const auto& endpoint : table.nodes(0).endpoints()) {
      if (endpoint.transport() == "tcp") tcp = endpoint.address();
      if (endpoint.transport() == "shm") shm = endpoint.address();
    }
    if (!tcp.empty()) Attack(tcp, "rank 0");
    const char* rendezvous = std::getenv("LMDX_RENDEZVOUS");
    if (rendezvous == nullptr) Fail("LMDX_RENDEZVOUS is not set");
    Attack(rendezvous, "the rendezvous");
    for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<char>(i * 7);
    lmdx_send(0, message.data(), message.size());
    std::vector<char> echo(message.size());
    lmdx_recv(0, echo.data(), echo.size(), nullptr);
    if (echo != message) Fail("the echo differs");
    if (!tcp.empty()) FloodTcp(tcp);
    if (!shm.empty() && shm[0] == '@') AttackShm(shm.substr(1));
    CheckSlowProbes();
    ExpectQuickEcho("the end of the attacks");
    char bye = 'q';
    lmdx_send(0, &bye, 1);
  } else {
    // Echoes until rank 1 says goodbye with one byte.
    for (;;) {
      lmdx_status status{};
      lmdx_recv(1, message.data(), message.size(), &status);
      if (status.length == 1) break;
      lmdx_send(1, message.data(), status.length);
    }
  }
  std::printf("rank %d verified after the intrusions\n", lmdx_rank());
  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}

#ifndef LMDX_NET_HANDSHAKE_H_
#define LMDX_NET_HANDSHAKE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/job_secret.h"

namespace lmdx::net {

// The authenticated join every connection of a job makes before a single frame is accepted.
// Both sides prove they know the job secret with HMAC-SHA256 over fresh nonces of both:
//
//   server -> client  challenge: magic, version, kind 1, server id, server nonce     (44 bytes)
//   client -> server  response:  magic, version, kind 2, client id, client nonce,
//                                HMAC(secret, "LMDX-client" | nonces | ids)          (76 bytes)
//   server -> client  accept:    magic, version, kind 3, 0, HMAC(secret, "LMDX-server" | ...)
//                                                                                    (44 bytes)
// A side that sees another wire version stops with an error naming both versions. A proof that
// does not verify fails the handshake; the server closes the connection without saying why, so a
// stranger learns nothing.
//
// Transport-neutral: the owner moves bytes. Feed() what arrives, send what TakeOutput() returns.
class Handshake {
 public:
  enum class State { kRunning, kDone, kFailed };
  // The id a rendezvous server uses in place of a rank.
  static constexpr std::int32_t kRendezvousId = -1;

  static Handshake AsServer(const JobSecret& secret, std::int32_t my_id);
  // expected_server_id: the rank this client meant to reach; a different one fails.
  static Handshake AsClient(const JobSecret& secret, std::int32_t my_id,
                            std::int32_t expected_server_id);

  // Consumes at most the bytes the current step needs; returns how many it took. Bytes past the
  // handshake belong to the frames that follow.
  std::size_t Feed(const std::uint8_t* data, std::size_t size);
  // How many more bytes the current step needs (for owners that read with blocking calls).
  std::size_t BytesWanted() const { return wanted_ - input_.size(); }
  // Bytes to send now (empty when there are none).
  std::string TakeOutput();

  State state() const { return state_; }
  // The authenticated id of the other side, once kDone.
  std::int32_t peer_id() const { return peer_id_; }
  // Why it failed, once kFailed.
  const std::string& error() const { return error_; }

 private:
  using Nonce = std::array<std::uint8_t, 32>;
  using Mac = std::array<std::uint8_t, 32>;
  enum class Step { kAwaitChallenge, kAwaitResponse, kAwaitAccept, kFinished };

  Handshake(const JobSecret& secret, std::int32_t my_id, bool server, std::int32_t expected_peer);
  void OnMessage();
  void Fail(std::string why);
  Mac Proof(const char* label, const Nonce& first, const Nonce& second, std::int32_t server_id,
            std::int32_t client_id) const;

  JobSecret secret_;
  std::int32_t my_id_;
  bool server_;
  std::int32_t expected_peer_;
  Step step_;
  State state_ = State::kRunning;
  Nonce my_nonce_{};
  Nonce peer_nonce_{};
  std::int32_t peer_id_ = 0;
  std::string input_;   // the message being assembled
  std::size_t wanted_;  // its full size
  std::string output_;
  std::string error_;
};

// What every datagram or message of a connectionless network (udp, fabric) from rank `from` to
// rank `to` carries instead of a handshake: 64 bits of HMAC(secret, network | from | to). A
// stranger who does not know the job secret cannot make one, so its traffic is dropped unread.
std::uint64_t PairToken(const JobSecret& secret, std::string_view network, std::int32_t from,
                        std::int32_t to);

// Frees what OpenSSL keeps for the calling thread once it has computed a MAC (its error queue),
// which it would free only when the thread ends. A short-lived thread that ran a handshake calls
// it before it says it is done: the job may end as soon as it has said so, before the thread's
// end, and the sanitizers then report the state as leaked.
void ReleaseThreadCryptoState();

}  // namespace lmdx::net

#endif  // LMDX_NET_HANDSHAKE_H_

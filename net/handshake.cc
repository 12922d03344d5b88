#include "net/handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/error.h"
#include "net/wire.h"

namespace lmdx::net {
namespace {

constexpr std::size_t kPreambleSize = 12;  // magic, version, kind, id
constexpr std::size_t kChallengeSize = kPreambleSize + 32;
constexpr std::size_t kResponseSize = kPreambleSize + 32 + 32;
constexpr std::size_t kAcceptSize = kPreambleSize + 32;
enum Kind : std::uint16_t { kChallenge = 1, kResponse = 2, kAccept = 3 };

void PutU32(std::string& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>(value >> (8 * i));
}
void PutU16(std::string& out, std::uint16_t value) {
  out += static_cast<char>(value);
  out += static_cast<char>(value >> 8);
}
std::uint32_t GetU32(const std::string& in, std::size_t at) {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value |= std::uint32_t{static_cast<std::uint8_t>(in[at + i])} << (8 * i);
  return value;
}
std::uint16_t GetU16(const std::string& in, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<std::uint8_t>(in[at]) |
                                    static_cast<std::uint8_t>(in[at + 1]) << 8);
}

std::string Preamble(Kind kind, std::int32_t id) {
  std::string out;
  PutU32(out, kWireMagic);
  PutU16(out, kWireVersion);
  PutU16(out, kind);
  PutU32(out, static_cast<std::uint32_t>(id));
  return out;
}

template <typename Array>
void Append(std::string& out, const Array& bytes) {
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

template <typename Array>
void Extract(const std::string& in, std::size_t at, Array& bytes) {
  std::memcpy(bytes.data(), in.data() + at, bytes.size());
}

}  // namespace

Handshake Handshake::AsServer(const JobSecret& secret, std::int32_t my_id) {
  return Handshake(secret, my_id, /*server=*/true, /*expected_peer=*/0);
}

Handshake Handshake::AsClient(const JobSecret& secret, std::int32_t my_id,
                              std::int32_t expected_server_id) {
  return Handshake(secret, my_id, /*server=*/false, expected_server_id);
}

Handshake::Handshake(const JobSecret& secret, std::int32_t my_id, bool server,
                     std::int32_t expected_peer)
    : secret_(secret), my_id_(my_id), server_(server), expected_peer_(expected_peer) {
  FillWithKernelRandom(my_nonce_.data(), my_nonce_.size(), "a handshake nonce");
  if (server_) {
    step_ = Step::kAwaitResponse;
    wanted_ = kResponseSize;
    output_ = Preamble(kChallenge, my_id_);
    Append(output_, my_nonce_);
  } else {
    step_ = Step::kAwaitChallenge;
    wanted_ = kChallengeSize;
  }
}

std::size_t Handshake::Feed(const std::uint8_t* data, std::size_t size) {
  std::size_t taken = 0;
  while (state_ == State::kRunning && taken < size) {
    std::size_t chunk = std::min(size - taken, wanted_ - input_.size());
    input_.append(reinterpret_cast<const char*>(data + taken), chunk);
    taken += chunk;
    // A peer that is not LMDX at all shows itself in the first four bytes; say so at once.
    if (input_.size() >= 4 && GetU32(input_, 0) != kWireMagic) {
      Fail("the peer does not speak the LMDX handshake");
      break;
    }
    if (input_.size() == wanted_) OnMessage();
  }
  return taken;
}

std::string Handshake::TakeOutput() { return std::exchange(output_, std::string()); }

void Handshake::OnMessage() {
  std::string message = std::exchange(input_, std::string());
  std::uint16_t version = GetU16(message, 4);
  if (version != kWireVersion) {
    Fail("the peer speaks LMDX wire version " + std::to_string(version) +
         ", this node speaks version " + std::to_string(kWireVersion));
    return;
  }
  std::uint16_t kind = GetU16(message, 6);
  std::int32_t id = static_cast<std::int32_t>(GetU32(message, 8));
  switch (step_) {
    case Step::kAwaitChallenge: {
      if (kind != kChallenge) return Fail("the peer sent no handshake challenge");
      if (id != expected_peer_) {
        return Fail("reached id " + std::to_string(id) + " where " +
                    std::to_string(expected_peer_) + " was expected");
      }
      peer_id_ = id;
      Extract(message, kPreambleSize, peer_nonce_);
      output_ = Preamble(kResponse, my_id_);
      Append(output_, my_nonce_);
      Append(output_, Proof("LMDX-client", peer_nonce_, my_nonce_, peer_id_, my_id_));
      step_ = Step::kAwaitAccept;
      wanted_ = kAcceptSize;
      return;
    }
    case Step::kAwaitResponse: {
      if (kind != kResponse) return Fail("the peer sent no handshake response");
      peer_id_ = id;
      Extract(message, kPreambleSize, peer_nonce_);
      Mac proof{};
      Extract(message, kPreambleSize + 32, proof);
      Mac expected = Proof("LMDX-client", my_nonce_, peer_nonce_, my_id_, peer_id_);
      if (CRYPTO_memcmp(proof.data(), expected.data(), proof.size()) != 0) {
        return Fail("the peer failed the job-secret proof");
      }
      output_ = Preamble(kAccept, my_id_);
      Append(output_, Proof("LMDX-server", peer_nonce_, my_nonce_, my_id_, peer_id_));
      step_ = Step::kFinished;
      state_ = State::kDone;
      return;
    }
    case Step::kAwaitAccept: {
      if (kind != kAccept) {
        return Fail("the peer sent no handshake acceptance (kind " + std::to_string(kind) + ")");
      }
      Mac proof{};
      Extract(message, kPreambleSize, proof);
      Mac expected = Proof("LMDX-server", my_nonce_, peer_nonce_, peer_id_, my_id_);
      if (CRYPTO_memcmp(proof.data(), expected.data(), proof.size()) != 0) {
        return Fail("the peer failed the job-secret proof");
      }
      step_ = Step::kFinished;
      state_ = State::kDone;
      return;
    }
    case Step::kFinished: return;
  }
}

void Handshake::Fail(std::string why) {
  state_ = State::kFailed;
  error_ = std::move(why);
  output_.clear();
}

Handshake::Mac Handshake::Proof(const char* label, const Nonce& first, const Nonce& second,
                                std::int32_t server_id, std::int32_t client_id) const {
  std::string text = label;
  Append(text, first);
  Append(text, second);
  PutU32(text, static_cast<std::uint32_t>(server_id));
  PutU32(text, static_cast<std::uint32_t>(client_id));
  Mac mac{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret_.bytes().data(), static_cast<int>(secret_.bytes().size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac.data(), &length);
  return mac;
}

void ReleaseThreadCryptoState() { OPENSSL_thread_stop(); }

std::uint64_t PairToken(const JobSecret& secret, std::string_view network, std::int32_t from,
                        std::int32_t to) {
  std::string text = "LMDX-pair-";
  text.append(network);
  PutU32(text, static_cast<std::uint32_t>(from));
  PutU32(text, static_cast<std::uint32_t>(to));
  std::array<std::uint8_t, 32> mac{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.bytes().data(), static_cast<int>(secret.bytes().size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac.data(), &length);
  std::uint64_t token = 0;
  std::memcpy(&token, mac.data(), sizeof token);
  return token;
}

}  // namespace lmdx::net

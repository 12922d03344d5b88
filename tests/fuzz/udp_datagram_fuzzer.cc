// Datagrams reach the udp transport from anyone who can reach its port. A forged one carries a
// valid pair token only if its sender knows the job secret, but a broken or malicious node of the
// job could send anything: header decoding and the reliable channel must take any sequence of
// datagrams without crashing, and keep their promises (a bounded window, in-order delivery).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/udp/internal/reliable_channel.h"
#include "net/udp/internal/udp_datagram.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using lmdx::net::internal::ReliabilitySettings;
using lmdx::net::internal::ReliableChannel;
using lmdx::net::internal::UdpDatagramHeader;

void Require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  lmdx::fuzz::FuzzInput input(data, size);
  ReliabilitySettings settings;
  settings.window = 1 + input.Byte() % 64;
  const std::uint32_t first = input.U32();
  ReliableChannel channel(settings, first);
  std::int64_t now = 0;
  // Some segments of our own in flight, for the peer's acknowledgements to act on.
  int own = input.Byte() % 80;
  std::uint32_t recorded = 0;
  for (int i = 0; i < own && channel.CanSend(); ++i, ++recorded) {
    channel.Record(std::make_shared<std::vector<std::uint8_t>>(1, std::uint8_t(i)), now);
  }
  while (input.left() > 0) {
    now += input.Byte();
    std::string bytes = input.Piece();
    auto header = UdpDatagramHeader::Decode(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            bytes.size());
    if (!header) continue;
    // What decodes encodes to the same bytes.
    std::uint8_t again[UdpDatagramHeader::kSize];
    header->Encode(again);
    Require(std::memcmp(again, bytes.data(), 5) == 0);
    Require(std::memcmp(again + 6, bytes.data() + 6, UdpDatagramHeader::kSize - 6) == 0);
    // The flags it knows survive too (others are ignored).
    constexpr std::uint8_t kKnown =
        UdpDatagramHeader::kFlagEcho | UdpDatagramHeader::kFlagAckAtOnce;
    Require(((again[5] ^ static_cast<std::uint8_t>(bytes[5])) & kKnown) == 0);

    std::vector<std::uint32_t> resend;
    std::optional<std::uint32_t> echo;
    if (header->has_echo) echo = header->echo;
    channel.OnAcknowledgement(header->cumulative, header->selective, header->room, echo, now,
                              &resend);
    for (std::uint32_t sequence : resend) Require(channel.Stored(sequence) != nullptr);
    // A lending sender is freed (AcknowledgedThrough) exactly when no segment up to its last is
    // still kept, across the wrap of the numbers.
    bool kept_so_far = false;
    for (std::uint32_t i = 0; i < recorded; ++i) {
      kept_so_far |= channel.Stored(first + i) != nullptr;
      Require(channel.AcknowledgedThrough(first + i) == !kept_so_far);
    }
    resend.clear();
    channel.TakeExpired(now, &resend);
    Require(channel.InFlight() <= settings.window);
    if (header->kind != UdpDatagramHeader::kData) continue;
    std::uint32_t before = channel.CumulativeAck();
    std::vector<ReliableChannel::Received> ready;
    channel.OnData(header->sequence,
                   std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size())
                       .subspan(UdpDatagramHeader::kSize),
                   now, &ready);
    if (header->ack_at_once) channel.AcknowledgeAtOnce();
    // Everything delivered moved the cumulative acknowledgement by as much, in order.
    Require(channel.CumulativeAck() - before == ready.size());
    Require(channel.Room() <= settings.window);
  }
  return 0;
}

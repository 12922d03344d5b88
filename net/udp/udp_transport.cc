#include "net/udp/udp_transport.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/clock.h"
#include "base/error.h"
#include "net/crowding.h"
#include "net/handshake.h"
#include "net/internal/frame_assembly.h"
#include "net/internal/socket.h"
#include "net/wait_board.h"

namespace lmdx::net {
namespace {

using internal::UdpDatagramHeader;

// The largest datagram IPv4 carries, less our header: loopback takes it whole (MTU 64 KiB).
constexpr std::size_t kLoopbackSegment = 65507 - UdpDatagramHeader::kSize;
// Across a real network a datagram beyond the MTU is cut into IP fragments, and losing one loses
// the datagram: 8 KiB (six fragments on Ethernet) is the size NFS and TreadMarks settled on.
constexpr std::size_t kNetworkSegment = 8192 - UdpDatagramHeader::kSize;
// The window keeps about this much in flight per peer, so that a burst fits the receiver's
// socket buffer (kReceiveBuffer) and flow control, not the kernel, holds the sender back.
constexpr std::size_t kBytesInFlight = 4u << 20;
constexpr int kReceiveBuffer = 16 << 20;
constexpr int kSendBuffer = 8 << 20;
constexpr std::size_t kBatch = 16;  // datagrams per recvmmsg
// A payload with less than this still to come is not read into place: the copy is small.
constexpr std::size_t kPlaceFrom = 4096;
// Nor are segments smaller than this (8 KiB across a real network): read one a call, they would
// cost a system call each for a copy not much dearer. Reading into place was measured only with
// loopback's 64 KiB segments.
constexpr std::size_t kPlaceSegmentsFrom = 16 * 1024;

// LMDX_UDP_SEGMENT overrides the segment size (bytes of the frame stream per datagram).
std::size_t SegmentBytes(const sockaddr_in& peer) {
  const char* text = std::getenv("LMDX_UDP_SEGMENT");
  if (text != nullptr && *text != '\0') {
    char* end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (*end != '\0' || value < 256 || value > static_cast<long>(kLoopbackSegment)) {
      throw Error(LMDX_ERR_INVALID_ARGUMENT,
                  "LMDX_UDP_SEGMENT must be a number of bytes from 256 to " +
                      std::to_string(kLoopbackSegment) + ", not \"" + text + "\"");
    }
    return static_cast<std::size_t>(value);
  }
  return internal::IsLoopback(peer) ? kLoopbackSegment : kNetworkSegment;
}

void SetBuffer(int fd, int option, int force_option, int bytes) {
  // Root may go beyond net.core.rmem_max/wmem_max; others get what the limit allows.
  if (::setsockopt(fd, SOL_SOCKET, force_option, &bytes, sizeof bytes) != 0) {
    ::setsockopt(fd, SOL_SOCKET, option, &bytes, sizeof bytes);
  }
}

// LMDX_UDP_SPLICE=0 copies lent memory into the kernel as any other; unset or 1, it goes
// without a copy where the kernel can take its pages.
bool SpliceWanted() {
  const char* text = std::getenv("LMDX_UDP_SPLICE");
  if (text == nullptr || *text == '\0' || std::string(text) == "1") return true;
  if (std::string(text) == "0") return false;
  throw Error(LMDX_ERR_INVALID_ARGUMENT,
              "LMDX_UDP_SPLICE must be 0 or 1, not \"" + std::string(text) + "\"");
}

Fd BindUdp(const std::string& host) {
  sockaddr_in address = internal::ParseHostPort(host + ":1");
  address.sin_port = 0;
  Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) ThrowSystemError("udp: socket", errno);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ThrowSystemError("udp: bind to " + host, errno);
  }
  SetBuffer(fd.get(), SO_RCVBUF, SO_RCVBUFFORCE, kReceiveBuffer);
  SetBuffer(fd.get(), SO_SNDBUF, SO_SNDBUFFORCE, kSendBuffer);
  return fd;
}

}  // namespace

void UdpTransport::AfterLock::Run(TransportHost& host) {
  for (auto& on_sent : sent) on_sent(true);
  for (auto& [rank, why] : lost) host.OnPeerLost(rank, why);
}

UdpTransport::UdpTransport(ProgressEngine& engine, TransportHost& host, const JobSecret& secret,
                           int rank, int size, const std::string& bind_host)
    : engine_(engine),
      host_(host),
      secret_(secret),
      rank_(rank),
      size_(size),
      socket_(BindUdp(bind_host)),
      faults_(internal::UdpFaults::FromEnvironment(static_cast<std::uint64_t>(::getpid()))),
      splicer_(internal::LocalAddress(socket_.get()), SpliceWanted()) {
  local_address_ = internal::FormatAddress(internal::LocalAddress(socket_.get()));
  if (faults_.any())
    LogLine("udp: injecting faults into outgoing datagrams: " + faults_.Describe());
  engine_.Add(socket_.get(), EPOLLIN, [this](std::uint32_t) { OnReadable(); });
}

UdpTransport::~UdpTransport() { Close(); }

wire::Endpoint UdpTransport::LocalEndpoint() const {
  wire::Endpoint endpoint;
  endpoint.set_transport("udp");
  endpoint.set_address(local_address_);
  return endpoint;
}

void UdpTransport::SetJobTable(const wire::JobTable& table) {
  std::vector<Peer> peers(static_cast<std::size_t>(size_));
  for (const wire::NodeInfo& node : table.nodes()) {
    int rank = node.rank();
    if (rank < 0 || rank >= size_ || rank == rank_) continue;
    for (const wire::Endpoint& endpoint : node.endpoints()) {
      if (endpoint.transport() != "udp") continue;
      Peer& peer = peers[static_cast<std::size_t>(rank)];
      peer.address = internal::ParseHostPort(endpoint.address());
      peer.segment_bytes = SegmentBytes(peer.address);
      peer.reachable = true;
    }
  }
  std::lock_guard lock(mutex_);
  peers_ = std::move(peers);
}

// A pair's channel, tokens and reader are made when the pair first uses udp: every job offers
// udp, and a job of a thousand nodes that never uses it must not pay a thousand of each per node.
UdpTransport::Peer* UdpTransport::OpenLocked(int rank) {
  Peer& peer = peers_[static_cast<std::size_t>(rank)];
  if (!peer.reachable) return nullptr;
  if (peer.channel) return &peer;
  peer.token_out = PairToken(secret_, "udp", rank_, rank);
  internal::ReliabilitySettings settings;
  settings.window = static_cast<std::uint32_t>(
      std::clamp<std::size_t>(kBytesInFlight / peer.segment_bytes, 8, 512));
  settings.ack_every = std::max<std::uint32_t>(2, settings.window / 8);
  settings.give_up_ms = crowding::Scaled(static_cast<int>(settings.give_up_ms));
  peer.channel = std::make_unique<internal::ReliableChannel>(settings);
  peer.reader = std::make_unique<internal::FrameReader>(host_, rank, rank_, "udp");
  active_.push_back(rank);
  return &peer;
}

void UdpTransport::Send(int dest, OutgoingMessage message, bool /*may_block*/) {
  Outgoing outgoing;
  outgoing.total = internal::SealOutgoingHeader(message, rank_, outgoing.header);
  outgoing.lent = message.payload.size >= kLendFrom && !message.payload.owner && message.on_sent;
  outgoing.message = std::move(message);
  AfterLock after;
  {
    std::lock_guard lock(mutex_);
    if (peers_.empty()) throw Error(LMDX_ERR_INTERNAL, "udp: send before the job table is known");
    Peer* peer = closed_ ? nullptr : OpenLocked(dest);
    if (peer == nullptr || peer->gone) {
      if (outgoing.message.on_sent) {
        after.sent.push_back(
            [on_sent = std::move(outgoing.message.on_sent)](bool) { on_sent(false); });
      }
    } else {
      peer->used = true;
      peer->queue.push_back(std::move(outgoing));
      std::int64_t now = MonotonicMs();
      PumpLocked(dest, now, &after);
      ScheduleTimerLocked(now);
    }
  }
  after.Run(host_);
}

// The sender of borrowed memory is spared its wait for on_sent (a completion, a callback and a
// trip through the lock more): an 8 B ping-pong's half round trip went from 7.64 us to 7.12 in
// alternate runs here (medians of 6), and to 5.76 from 6.61 with the frame reader's small
// messages too.
bool UdpTransport::SendNow(int dest, OutgoingMessage& message) {
  std::uint8_t header[kFrameHeaderSize];
  std::uint64_t total = internal::SealOutgoingHeader(message, rank_, header);
  std::lock_guard lock(mutex_);
  if (peers_.empty() || closed_) return false;
  Peer* peer = OpenLocked(dest);
  if (peer == nullptr || peer->gone || !peer->queue.empty() || total > peer->segment_bytes ||
      !peer->channel->CanSend()) {
    return false;
  }
  auto segment = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(total));
  std::uint8_t* to = segment->data();
  std::memcpy(to, header, kFrameHeaderSize);
  to += kFrameHeaderSize;
  if (!message.body.empty()) std::memcpy(to, message.body.data(), message.body.size());
  to += message.body.size();
  if (message.payload.size > 0) std::memcpy(to, message.payload.data, message.payload.size);
  peer->used = true;
  std::int64_t now = MonotonicMs();
  std::uint32_t sequence = peer->channel->Record(segment, now);
  TransmitLocked(dest, UdpDatagramHeader::kData, sequence, segment.get());
  ScheduleTimerLocked(now);
  return true;
}

// The bytes the queued frames still need, up to a whole segment: a segment is kept until
// acknowledged, and one reserved whole for a small frame held 64 KiB for it.
std::size_t UdpTransport::SegmentNeedLocked(const Peer& peer) {
  std::uint64_t need = 0;
  for (const Outgoing& outgoing : peer.queue) {
    need += outgoing.total - outgoing.offset;
    if (need >= peer.segment_bytes) return peer.segment_bytes;
  }
  return static_cast<std::size_t>(need);
}

void UdpTransport::PumpLocked(int rank, std::int64_t now, AfterLock* after) {
  Peer& peer = peers_[static_cast<std::size_t>(rank)];
  while (!peer.queue.empty() && peer.channel->CanSend()) {
    auto segment = std::make_shared<std::vector<std::uint8_t>>();
    LentBytes lent;  // ends the segment: nothing is copied after it
    std::function<void(bool)> on_acknowledged;
    // Fill the segment from as many queued frames as fit: small frames share a datagram.
    while (!peer.queue.empty() && segment->size() < peer.segment_bytes && lent.bytes.empty()) {
      Outgoing& front = peer.queue.front();
      const OutgoingMessage& message = front.message;
      std::uint64_t body_end = kFrameHeaderSize + message.body.size();
      while (front.offset < front.total && segment->size() < peer.segment_bytes) {
        std::size_t room = peer.segment_bytes - segment->size();
        const std::uint8_t* from;
        std::uint64_t left;
        if (front.offset < kFrameHeaderSize) {
          from = front.header + front.offset;
          left = kFrameHeaderSize - front.offset;
        } else if (front.offset < body_end) {
          from = reinterpret_cast<const std::uint8_t*>(message.body.data()) +
                 (front.offset - kFrameHeaderSize);
          left = body_end - front.offset;
        } else {
          from = static_cast<const std::uint8_t*>(message.payload.data) + (front.offset - body_end);
          left = front.total - front.offset;
          // A lent piece ends where one splice can carry it.
          std::size_t spliceable =
              front.lent ? splicer_.LentRoom(UdpDatagramHeader::kSize + segment->size(), from) : 0;
          if (spliceable > 0) left = std::min<std::uint64_t>(left, spliceable);
        }
        auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left, room));
        front.offset += take;
        if (front.lent && front.offset > body_end) {
          lent.bytes = std::span(from, take);
          front.sent_lent = true;
          break;
        }
        if (segment->capacity() == 0) {
          // This piece is counted out of the queue already.
          segment->reserve(std::min(peer.segment_bytes, take + SegmentNeedLocked(peer)));
        }
        segment->insert(segment->end(), from, from + take);
      }
      if (front.offset < front.total) break;
      if (front.message.on_sent) {
        if (front.sent_lent) {
          on_acknowledged = std::move(front.message.on_sent);
        } else {
          after->sent.push_back(std::move(front.message.on_sent));
        }
      }
      peer.queue.pop_front();
    }
    std::uint32_t sequence = peer.channel->Record(segment, now);
    lent.sequence = sequence;
    LentBytes* kept = nullptr;
    if (!lent.bytes.empty()) {
      kept = &peer.lent.emplace_back(lent);
      ++lent_segments_sent_;
    }
    bool ack_at_once = static_cast<bool>(on_acknowledged);
    if (ack_at_once) peer.lent_until.push_back(LentUntil{sequence, std::move(on_acknowledged)});
    TransmitLocked(rank, UdpDatagramHeader::kData, sequence, segment.get(), kept, ack_at_once);
  }
}

UdpTransport::LentBytes* UdpTransport::LentBy(Peer& peer, std::uint32_t sequence) {
  for (LentBytes& lent : peer.lent) {
    if (lent.sequence == sequence) return &lent;
  }
  return nullptr;
}

void UdpTransport::ReturnLentLocked(Peer& peer, AfterLock* after) {
  const internal::ReliableChannel& channel = *peer.channel;
  while (!peer.lent.empty() && channel.AcknowledgedThrough(peer.lent.front().sequence)) {
    ForgetLentLocked(peer.lent.front(), /*acknowledged=*/true);
    peer.lent.pop_front();
  }
  while (!peer.lent_until.empty() && channel.AcknowledgedThrough(peer.lent_until.front().last)) {
    after->sent.push_back(std::move(peer.lent_until.front().on_sent));
    peer.lent_until.pop_front();
  }
}

void UdpTransport::FailSendersLocked(Peer& peer, AfterLock* after) {
  // Frames still queued will never go.
  for (Outgoing& outgoing : peer.queue) {
    if (outgoing.message.on_sent) {
      after->sent.push_back(
          [on_sent = std::move(outgoing.message.on_sent)](bool) { on_sent(false); });
    }
  }
  peer.queue.clear();
  for (LentUntil& waiting : peer.lent_until) {
    after->sent.push_back([on_sent = std::move(waiting.on_sent)](bool) { on_sent(false); });
  }
  peer.lent_until.clear();
  for (const LentBytes& lent : peer.lent) ForgetLentLocked(lent, /*acknowledged=*/false);
  peer.lent.clear();
}

void UdpTransport::ForgetLentLocked(const LentBytes& lent, bool acknowledged) {
  // Acknowledged with one datagram ever sent: that very datagram was read.
  if (lent.slot) splicer_.ReleaseSlot(*lent.slot, !(acknowledged && lent.datagrams == 1));
}

void UdpTransport::TransmitLocked(int rank, UdpDatagramHeader::Kind kind, std::uint32_t sequence,
                                  const std::vector<std::uint8_t>* segment, LentBytes* lent,
                                  bool ack_at_once) {
  Peer& peer = peers_[static_cast<std::size_t>(rank)];
  UdpDatagramHeader header;
  header.kind = kind;
  header.source = rank_;
  header.sequence = sequence;
  header.cumulative = peer.channel->CumulativeAck();
  header.selective = peer.channel->SelectiveAck();
  header.room = static_cast<std::uint16_t>(std::min<std::uint32_t>(peer.channel->Room(), 0xffff));
  header.token = peer.token_out;
  header.ack_at_once = ack_at_once;
  if (auto echo = peer.channel->TakeEcho()) {
    header.has_echo = true;
    header.echo = *echo;
  }
  peer.channel->AckSent();
  std::uint8_t bytes[UdpDatagramHeader::kSize];
  header.Encode(bytes);
  if (kind == UdpDatagramHeader::kData) ++segments_sent_;
  SendDatagramLocked(peer.address, bytes, segment, lent);
}

void UdpTransport::ResendLocked(int rank, const std::vector<std::uint32_t>& sequences) {
  Peer& peer = peers_[static_cast<std::size_t>(rank)];
  for (std::uint32_t sequence : sequences) {
    if (auto segment = peer.channel->Stored(sequence)) {
      // A segment of lent memory (a lent frame's last segment among them, which always carries
      // some) is acknowledged at once when it comes again: a sender waits for it, and it may
      // fill the gap the others wait behind.
      LentBytes* lent = LentBy(peer, sequence);
      TransmitLocked(rank, UdpDatagramHeader::kData, sequence, segment.get(), lent,
                     /*ack_at_once=*/lent != nullptr);
    }
  }
}

void UdpTransport::SendDatagramLocked(const sockaddr_in& to, const std::uint8_t* header,
                                      const std::vector<std::uint8_t>* segment,
                                      LentBytes* lent_bytes) {
  // lent: the lent segment this datagram carries, whose datagrams are counted; nullptr for a
  // datagram that carries no lent memory, or was copied out of it already.
  auto put = [this](const sockaddr_in& address, const std::uint8_t* head, const std::uint8_t* data,
                    std::size_t size, LentBytes* lent) {
    std::span<const std::uint8_t> tail =
        lent != nullptr ? lent->bytes : std::span<const std::uint8_t>();
    iovec pieces[3];
    std::size_t count = 0;
    pieces[count++] = {const_cast<std::uint8_t*>(head), UdpDatagramHeader::kSize};
    if (size > 0) pieces[count++] = {const_cast<std::uint8_t*>(data), size};
    const std::size_t own = count;
    if (!tail.empty()) {
      pieces[count++] = {const_cast<std::uint8_t*>(tail.data()), tail.size()};
    }
    if (lent != nullptr) {
      // Only a segment's first datagram keeps its own bytes in a slot: with no other copy of it
      // about, the acknowledgement says the one that reads the slot was read.
      std::optional<std::uint32_t>* slot =
          lent->datagrams == 0 && !lent->slot ? &lent->slot : nullptr;
      switch (splicer_.Send(address, std::span(pieces, own), tail, faults_.RefuseSplice(), slot)) {
        case internal::UdpSplicer::Outcome::kSent:
          ++spliced_sends_;
          if (slot != nullptr && *slot) ++slot_sends_;
          ++lent->datagrams;
          return;
        case internal::UdpSplicer::Outcome::kLost: ++send_failures_; return;
        case internal::UdpSplicer::Outcome::kNotSpliced: break;
      }
    }
    msghdr message{};
    message.msg_name = const_cast<sockaddr_in*>(&address);
    message.msg_namelen = sizeof address;
    message.msg_iov = pieces;
    message.msg_iovlen = count;
    // A full socket buffer loses the datagram as a congested network would; the channel resends.
    while (::sendmsg(socket_.get(), &message, MSG_DONTWAIT) < 0) {
      if (errno == EINTR) continue;
      ++send_failures_;
      return;
    }
    if (lent != nullptr) ++lent->datagrams;
  };
  const std::uint8_t* data = segment != nullptr ? segment->data() : nullptr;
  std::size_t size = segment != nullptr ? segment->size() : 0;
  switch (faults_.Next()) {
    case internal::UdpFaults::Action::kDrop: return;
    case internal::UdpFaults::Action::kDuplicate: put(to, header, data, size, lent_bytes); break;
    case internal::UdpFaults::Action::kHoldBack:
      if (held_back_.empty()) {
        std::span<const std::uint8_t> lent =
            lent_bytes != nullptr ? lent_bytes->bytes : std::span<const std::uint8_t>();
        held_back_.assign(header, header + UdpDatagramHeader::kSize);
        held_back_.insert(held_back_.end(), data, data + size);
        held_back_.insert(held_back_.end(), lent.begin(), lent.end());
        held_back_to_ = to;
        // Counted now: its copy, not a slot, goes later, and may be the one acknowledged.
        if (lent_bytes != nullptr) ++lent_bytes->datagrams;
        return;
      }
      break;
    case internal::UdpFaults::Action::kSend: break;
  }
  put(to, header, data, size, lent_bytes);
  if (!held_back_.empty()) {
    std::vector<std::uint8_t> late = std::move(held_back_);
    held_back_.clear();
    put(held_back_to_, late.data(), late.data() + UdpDatagramHeader::kSize,
        late.size() - UdpDatagramHeader::kSize, nullptr);
  }
}

// The peer whose payload the next datagram most likely continues, and where its bytes go: the
// last data came from that peer and left its reader mid-payload.
UdpTransport::Placement UdpTransport::PlacementForNextDatagram() const {
  if (placing_rank_ < 0) return {};
  const Peer& peer = peers_[static_cast<std::size_t>(placing_rank_)];
  if (peer.segment_bytes < kPlaceSegmentsFrom) return {};
  std::span<std::uint8_t> room = peer.reader->PayloadRoom();
  if (room.size() < kPlaceFrom) return {};
  return {placing_rank_, room.first(std::min(room.size(), kLoopbackSegment))};
}

bool UdpTransport::ContinuesPayloadLocked(const std::uint8_t* data, std::size_t size,
                                          int rank) const {
  auto header = UdpDatagramHeader::Decode(data, size);
  if (!header || header->kind != UdpDatagramHeader::kData || header->source != rank) return false;
  const Peer& peer = peers_[static_cast<std::size_t>(rank)];
  return !peer.gone && peer.channel && peer.token_in && header->token == *peer.token_in &&
         header->sequence == peer.channel->CumulativeAck();
}

void UdpTransport::OnReadable() {
  if (receive_buffers_.empty()) {
    receive_buffers_.assign(kBatch,
                            std::vector<std::uint8_t>(UdpDatagramHeader::kSize + kLoopbackSegment));
  }
  constexpr std::size_t kHeader = UdpDatagramHeader::kSize;
  for (;;) {
    // While a payload streams in, datagrams are read one at a time, each partly straight into
    // the payload it most likely continues: between its header and the rest, which lie together
    // in its buffer. Where the next datagram's bytes belong is known only once this one is read.
    Placement placement = PlacementForNextDatagram();
    const bool placing = !placement.room.empty();
    const std::size_t batch = placing ? 1 : kBatch;
    mmsghdr messages[kBatch] = {};
    iovec pieces[kBatch];
    for (std::size_t i = 0; i < batch; ++i) {
      pieces[i] = {receive_buffers_[i].data(), receive_buffers_[i].size()};
      messages[i].msg_hdr.msg_iov = &pieces[i];
      messages[i].msg_hdr.msg_iovlen = 1;
    }
    std::uint8_t* first = receive_buffers_[0].data();
    iovec placed_pieces[3] = {{first, kHeader},
                              {placement.room.data(), placement.room.size()},
                              {first + kHeader, receive_buffers_[0].size() - kHeader}};
    if (placing) {
      messages[0].msg_hdr.msg_iov = placed_pieces;
      messages[0].msg_hdr.msg_iovlen = 3;
    }
    int count =
        ::recvmmsg(socket_.get(), messages, static_cast<unsigned>(batch), MSG_DONTWAIT, nullptr);
    if (count < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) LogLine(SystemErrorText("udp: receive", errno));
      return;
    }
    std::vector<Arrived> ready;
    AfterLock after;
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      std::int64_t now = MonotonicMs();
      for (std::size_t i = 0; i < static_cast<std::size_t>(count); ++i) {
        std::uint8_t* buffer = receive_buffers_[i].data();
        std::size_t size = messages[i].msg_len;
        std::size_t placed = 0;
        if (placing && size > kHeader) {
          placed = std::min(size - kHeader, placement.room.size());
          size -= placed;
          if (!ContinuesPayloadLocked(buffer, size, placement.rank)) {
            // Another's datagram, or one out of order: put it together as it came.
            std::memmove(buffer + kHeader + placed, buffer + kHeader, size - kHeader);
            std::memcpy(buffer + kHeader, placement.room.data(), placed);
            size += placed;
            placed = 0;
          } else {
            ++placed_datagrams_;
          }
        }
        HandleDatagramLocked(buffer, size, placed, now, &ready, &after);
      }
      ServeChannelsLocked(now, &after);
      ScheduleTimerLocked(now);
    }
    // Frames go to the host outside the lock: its handlers send. A peer whose stream breaks is
    // dropped; the others' segments, acknowledged already, are still delivered.
    std::vector<int> broken;
    for (Arrived& arrived : ready) {
      int source = arrived.source;
      if (std::find(broken.begin(), broken.end(), source) != broken.end()) continue;
      Peer& peer = peers_[static_cast<std::size_t>(source)];
      // A frame handed over just before may have made the node drop this peer (DropPeer): the
      // memory its payload was read into may be gone.
      if (peer.dropped) continue;
      std::string error;
      if ((arrived.placed > 0 && !peer.reader->TakePlaced(arrived.placed, &error)) ||
          !peer.reader->Feed(arrived.segment.bytes.data(), arrived.segment.bytes.size(), &error)) {
        broken.push_back(source);
        if (placing_rank_ == source) placing_rank_ = -1;
        std::lock_guard lock(mutex_);
        MarkGoneLocked(source, "udp: rank " + std::to_string(source) + " sent " + error, &after);
        continue;
      }
      if (peer.reader->in_payload()) {
        wait_board::NoteTraffic();
        placing_rank_ = source;
      } else if (placing_rank_ == source) {
        placing_rank_ = -1;
      }
    }
    after.Run(host_);
    if (count < static_cast<int>(batch)) return;
  }
}

void UdpTransport::HandleDatagramLocked(const std::uint8_t* data, std::size_t size,
                                        std::size_t placed, std::int64_t now,
                                        std::vector<Arrived>* ready, AfterLock* after) {
  // Before the job table, a peer's first datagram cannot be checked: drop it unread, its
  // sender resends it.
  if (peers_.empty()) return;
  auto header = UdpDatagramHeader::Decode(data, size);
  bool known = header && header->source >= 0 && header->source < size_ && header->source != rank_ &&
               peers_[static_cast<std::size_t>(header->source)].reachable;
  if (known) {
    Peer& claimed = peers_[static_cast<std::size_t>(header->source)];
    if (!claimed.token_in) claimed.token_in = PairToken(secret_, "udp", header->source, rank_);
    known = header->token == *claimed.token_in;
  }
  if (!known) {
    strangers_.Line("udp: dropped a datagram of " + std::to_string(size) +
                    " bytes that does not come from a node of this job");
    return;
  }
  int source = header->source;
  Peer& peer = *OpenLocked(source);
  if (peer.gone) return;
  std::vector<std::uint32_t> resend;
  peer.channel->OnAcknowledgement(
      header->cumulative, header->selective, header->room,
      header->has_echo ? std::optional<std::uint32_t>(header->echo) : std::nullopt, now, &resend);
  // A goodbye's acknowledgement counts too: a sender whose frame it covers was delivered.
  ReturnLentLocked(peer, after);
  if (header->kind == UdpDatagramHeader::kBye) {
    MarkGoneLocked(source, "", after);
    return;
  }
  ResendLocked(source, resend);
  if (header->kind == UdpDatagramHeader::kData) {
    peer.used = true;
    // An in-order segment is read where it landed, not copied: only one that waits behind a
    // gap is kept (a copy per 64 KiB datagram was a good part of a large message's time).
    std::vector<internal::ReliableChannel::Received> in_order;
    auto arrival = peer.channel->OnData(
        header->sequence,
        std::span(data + UdpDatagramHeader::kSize, size - UdpDatagramHeader::kSize), now,
        &in_order);
    if (placed > 0 && arrival != internal::ReliableChannel::Arrival::kDelivered) {
      // OnReadable placed it only as the segment due next: its placed bytes are in no segment.
      MarkGoneLocked(source,
                     "udp: segment " + std::to_string(header->sequence) + " of rank " +
                         std::to_string(source) + " was read into place out of order",
                     after);
      return;
    }
    if (header->ack_at_once) peer.channel->AcknowledgeAtOnce();
    for (auto& piece : in_order) {
      ready->push_back(Arrived{source, std::move(piece), std::exchange(placed, 0)});
    }
  }
  PumpLocked(source, now, after);
  if (closing_) drained_.notify_all();
}

// Acknowledgements due, timeouts expired, peers silent too long.
void UdpTransport::ServeChannelsLocked(std::int64_t now, AfterLock* after) {
  for (int rank : active_) {
    Peer& peer = peers_[static_cast<std::size_t>(rank)];
    if (peer.gone) continue;
    std::vector<std::uint32_t> resend;
    peer.channel->TakeExpired(now, &resend);
    ResendLocked(rank, resend);
    if (peer.channel->PeerSilent(now)) {
      MarkGoneLocked(rank,
                     "udp: rank " + std::to_string(rank) + " has acknowledged nothing for " +
                         SecondsText(std::chrono::milliseconds(crowding::Scaled(
                             static_cast<int>(internal::ReliabilitySettings{}.give_up_ms)))),
                     after);
      continue;
    }
    if (peer.channel->AckDue(now)) TransmitLocked(rank, UdpDatagramHeader::kAck, 0, nullptr);
  }
}

void UdpTransport::OnTimer() {
  AfterLock after;
  {
    std::lock_guard lock(mutex_);
    timer_due_ms_ = -1;
    if (closed_) return;
    std::int64_t now = MonotonicMs();
    ServeChannelsLocked(now, &after);
    ScheduleTimerLocked(now);
  }
  after.Run(host_);
}

void UdpTransport::ScheduleTimerLocked(std::int64_t now) {
  std::int64_t soonest = -1;
  for (int rank : active_) {
    const Peer& peer = peers_[static_cast<std::size_t>(rank)];
    if (peer.gone) continue;
    std::int64_t when = peer.channel->NextDeadline();
    if (when >= 0 && (soonest < 0 || when < soonest)) soonest = when;
  }
  if (soonest < 0 || (timer_due_ms_ >= 0 && timer_due_ms_ <= soonest)) return;
  timer_due_ms_ = soonest;
  engine_.PostAfter(static_cast<int>(std::max<std::int64_t>(0, soonest - now)),
                    [this] { OnTimer(); });
}

void UdpTransport::MarkGoneLocked(int rank, const std::string& why, AfterLock* after) {
  Peer& peer = peers_[static_cast<std::size_t>(rank)];
  if (peer.gone) return;
  peer.gone = true;
  if (placing_rank_ == rank) placing_rank_ = -1;  // its payload's memory may go with the receive
  FailSendersLocked(peer, after);
  drained_.notify_all();
  if (closing_ || !peer.used) return;
  after->lost.emplace_back(
      rank, why.empty() ? "udp: rank " + std::to_string(rank) + " left the job" : why);
}

// A gone peer's datagrams are dropped unread and its payload is no longer read into place
// (MarkGoneLocked); its lent sends fail. The node knows of the loss: it is not reported back.
void UdpTransport::DropPeer(int rank, const std::string& why) {
  AfterLock after;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || rank < 0 || static_cast<std::size_t>(rank) >= peers_.size() || rank == rank_) {
      return;
    }
    peers_[static_cast<std::size_t>(rank)].dropped = true;  // read while dispatching, as this runs
    MarkGoneLocked(rank, why, &after);
  }
  after.lost.clear();
  after.Run(host_);
}

bool UdpTransport::DrainedLocked() const {
  for (int rank : active_) {
    const Peer& peer = peers_[static_cast<std::size_t>(rank)];
    if (peer.gone) continue;
    if (!peer.queue.empty() || peer.channel->InFlight() > 0) return false;
  }
  return true;
}

void UdpTransport::Close() {
  AfterLock after;  // senders still waiting learn that their frames may not have arrived
  {
    std::unique_lock lock(mutex_);
    if (closing_) return;
    closing_ = true;
    // Linger while the progress thread still runs, so that retransmissions can finish what the
    // job's last frames started; never on the progress thread, which must serve them.
    if (!engine_.InDispatch()) {
      drained_.wait_for(lock, std::chrono::milliseconds(kLingerMs),
                        [this] { return DrainedLocked(); });
    }
    // Tell every peer this node leaves, so that none lingers for acknowledgements from it.
    for (int rank : active_) {
      Peer& peer = peers_[static_cast<std::size_t>(rank)];
      if (peer.gone || !peer.used) continue;
      for (int copy = 0; copy < 2; ++copy)
        TransmitLocked(rank, UdpDatagramHeader::kBye, 0, nullptr);
    }
    closed_ = true;
    for (int rank : active_) FailSendersLocked(peers_[static_cast<std::size_t>(rank)], &after);
    const char* stats = std::getenv("LMDX_TRANSPORT_STATS");
    if (stats != nullptr && std::string(stats) == "1") {
      std::uint64_t resent = 0;
      std::string rtos;
      for (int rank : active_) {
        const Peer& peer = peers_[static_cast<std::size_t>(rank)];
        resent += peer.channel->retransmitted();
        rtos += " " + std::to_string(peer.channel->RtoMs());
      }
      LogLine(
          "udp: " + std::to_string(segments_sent_) + " segments sent, " + std::to_string(resent) +
          " sent again, " + std::to_string(send_failures_) + " refused by a full socket buffer, " +
          std::to_string(lent_segments_sent_) + " from lent memory, " +
          std::to_string(spliced_sends_) + " sends of lent memory spliced (" +
          std::to_string(slot_sends_) + " with their own bytes from a slot; " +
          std::to_string(splicer_.slots().quarantined()) + " slots held after a resend), " +
          std::to_string(placed_datagrams_) + " datagrams read into place; timeouts (ms)" + rtos);
    }
  }
  engine_.Remove(socket_.get());
  after.Run(host_);
}

}  // namespace lmdx::net

#ifndef LMDX_NET_UDP_UDP_TRANSPORT_H_
#define LMDX_NET_UDP_UDP_TRANSPORT_H_

#include <netinet/in.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/log.h"
#include "net/internal/frame_reader.h"
#include "net/udp/internal/reliable_channel.h"
#include "net/udp/internal/udp_datagram.h"
#include "net/udp/internal/udp_faults.h"
#include "net/udp/internal/udp_splice.h"
#include "net/job_secret.h"
#include "net/progress_engine.h"
#include "net/transport.h"

namespace lmdx::net {

// The UDP transport, for networks where TreadMarks ran: one datagram socket per node and, per
// peer, a reliable ordered channel (net/udp/internal/reliable_channel.h) that carries the frames as a
// byte stream cut into segments. Small frames share a datagram; a large frame spans many.
//
// Every datagram carries the pair's token (net/handshake.h PairToken), so there is no handshake
// and a stranger's datagrams are dropped unread. Acknowledgements ride on data going back, or go
// alone after a few milliseconds, at once after a gap (so the sender resends at once) or after
// every few segments of a stream.
//
// A segment must be kept until acknowledged. Sending copies it once, and the caller's buffer is
// free (on_sent) once its last byte is in a segment; but a large payload the caller lends (a
// borrowed payload with on_sent, kLendFrom bytes or more) goes out from the caller's own memory,
// which stays lent until the peer has acknowledged its last segment. That segment asks for the
// acknowledgement at once. On loopback the copy was a quarter of a large message's time, and the
// wait for the acknowledgement costs a round trip per large message. Where the kernel can take
// lent memory's pages, it does not copy them either (net/udp/internal/udp_splice.h;
// LMDX_UDP_SPLICE=0 turns that off): a segment's lent bytes then end where one splice's pages
// do. On the receiving side, a datagram that continues a payload streaming in is read partly
// straight into the payload's memory (a posted receive's buffer, most often), one datagram a
// call, rather than into a buffer of the transport's first and copied. Frames wait in a queue while
// the window is full; acknowledgements, processed by the progress thread, move them on, so Send
// never blocks.
//
// Closing lingers (at most kLingerMs) until every peer has acknowledged everything or said it
// leaves too, so the last frames of a job are not lost with the process that sent them.
class UdpTransport : public Transport {
 public:
  UdpTransport(ProgressEngine& engine, TransportHost& host, const JobSecret& secret, int rank,
               int size, const std::string& bind_host);
  ~UdpTransport() override;

  const char* name() const override { return "udp"; }
  wire::Endpoint LocalEndpoint() const override;
  void SetJobTable(const wire::JobTable& table) override;
  void Send(int dest, OutgoingMessage message, bool may_block) override;
  // A frame that fits one segment, to a peer with nothing queued and room in its window: copied
  // into a segment of its own and sent within the call.
  bool SendNow(int dest, OutgoingMessage& message) override;
  void Close() override;
  void DropPeer(int rank, const std::string& why) override;

  static constexpr int kLingerMs = 1000;
  // A borrowed payload this large is sent from the caller's memory, not copied.
  static constexpr std::uint64_t kLendFrom = 256 * 1024;

 private:
  struct Outgoing {
    OutgoingMessage message;
    std::uint8_t header[kFrameHeaderSize] = {};
    std::uint64_t offset = 0;  // bytes already in segments
    std::uint64_t total = 0;
    bool lent = false;       // its payload may go out from the caller's memory, spliced
    bool sent_lent = false;  // some of it did: on_sent waits for the acknowledgements
  };
  // A segment's bytes in the caller's memory, after its copied part.
  struct LentBytes {
    std::uint32_t sequence = 0;
    std::span<const std::uint8_t> bytes;
    // The splicer's slot that holds the first datagram's own bytes (udp_splice_slots.h), and how
    // many datagrams of the segment went to the kernel: the slot is free again at the
    // acknowledgement only when that datagram was the one.
    std::optional<std::uint32_t> slot;
    std::uint32_t datagrams = 0;
  };
  // A sender whose memory is lent until the segment `last` and all before it are acknowledged.
  struct LentUntil {
    std::uint32_t last = 0;
    std::function<void(bool)> on_sent;
  };
  struct Peer {
    sockaddr_in address{};
    bool reachable = false;                 // it advertised a udp endpoint
    std::uint64_t token_out = 0;            // what this node's datagrams to the peer carry
    std::optional<std::uint64_t> token_in;  // what the peer's datagrams carry, once computed
    std::size_t segment_bytes = 0;
    std::unique_ptr<internal::ReliableChannel> channel;
    std::deque<Outgoing> queue;
    std::deque<LentBytes> lent;        // by sequence number, while the channel keeps them
    std::deque<LentUntil> lent_until;  // by sequence number
    std::unique_ptr<internal::FrameReader> reader;  // touched only while dispatching
    bool used = false;  // any frame went either way (a departure then matters)
    bool gone = false;  // said it leaves, or was lost
    // The node dropped it (DropPeer): unlike a goodbye, which comes after the peer's last frame,
    // this ends its frames even where a batch already read them. Written and read only while
    // dispatching, as reader is.
    bool dropped = false;
  };
  // Work found under the lock and done after it: callbacks may send again.
  struct AfterLock {
    std::vector<std::function<void(bool)>> sent;
    std::vector<std::pair<int, std::string>> lost;
    void Run(TransportHost& host);
  };

  // A segment in order; its bytes may lie in receive_buffers_ until the next receive. Its first
  // `placed` bytes are not among them: they were read straight into the payload they continue.
  struct Arrived {
    int source = -1;
    internal::ReliableChannel::Received segment;
    std::size_t placed = 0;
  };
  // Where the next datagram read may put the payload bytes it carries: empty unless a peer's
  // payload is streaming in.
  struct Placement {
    int rank = -1;
    std::span<std::uint8_t> room;
  };
  Placement PlacementForNextDatagram() const;
  // The datagram (its placed bytes left out) is the next data segment of rank's stream.
  bool ContinuesPayloadLocked(const std::uint8_t* data, std::size_t size, int rank) const;
  // The peer's channel, made on first use; nullptr when it has no udp endpoint.
  Peer* OpenLocked(int rank);
  void OnReadable();
  // One datagram from the socket; in-order segments for the frame reader go to *ready. placed:
  // the bytes of its segment read into place (OnReadable), which data leaves out.
  void HandleDatagramLocked(const std::uint8_t* data, std::size_t size, std::size_t placed,
                            std::int64_t now, std::vector<Arrived>* ready, AfterLock* after);
  static std::size_t SegmentNeedLocked(const Peer& peer);
  // Moves queued frames into segments while the window allows.
  void PumpLocked(int rank, std::int64_t now, AfterLock* after);
  // lent: the bytes of the caller's memory the datagram carries after the segment's own, if any.
  void TransmitLocked(int rank, internal::UdpDatagramHeader::Kind kind, std::uint32_t sequence,
                      const std::vector<std::uint8_t>* segment, LentBytes* lent = nullptr,
                      bool ack_at_once = false);
  // The caller's memory a kept segment carries; nullptr when it carries none.
  static LentBytes* LentBy(Peer& peer, std::uint32_t sequence);
  // After an acknowledgement: forgets lent memory no segment kept refers to, and frees the
  // senders whose segments are all acknowledged.
  void ReturnLentLocked(Peer& peer, AfterLock* after);
  // The peer is gone or the transport closes: senders of frames still queued, or waiting for
  // acknowledgements, learn that their frames may not have been delivered.
  void FailSendersLocked(Peer& peer, AfterLock* after);
  // A lent segment is done with (acknowledged, or given up): its splice slot, if any, goes back.
  void ForgetLentLocked(const LentBytes& lent, bool acknowledged);
  // Sends again the segments the channel named (timeouts, fast retransmission).
  void ResendLocked(int rank, const std::vector<std::uint32_t>& sequences);
  void SendDatagramLocked(const sockaddr_in& to, const std::uint8_t* header,
                          const std::vector<std::uint8_t>* segment, LentBytes* lent);
  void OnTimer();
  void ServeChannelsLocked(std::int64_t now, AfterLock* after);
  void ScheduleTimerLocked(std::int64_t now);
  void MarkGoneLocked(int rank, const std::string& why, AfterLock* after);
  bool DrainedLocked() const;

  ProgressEngine& engine_;
  TransportHost& host_;
  JobSecret secret_;
  int rank_;
  int size_;
  Fd socket_;
  std::string local_address_;
  // Dispatch only; allocated when the first datagram arrives.
  std::vector<std::vector<std::uint8_t>> receive_buffers_;
  // Dispatch only: the peer whose payload the last data left unfinished, or -1.
  int placing_rank_ = -1;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable drained_;
  std::vector<Peer> peers_;  // by rank; empty until the job table is known
  std::vector<int> active_;  // ranks whose channel exists, in the order they were opened
  internal::UdpFaults faults_;
  internal::UdpSplicer splicer_;
  std::vector<std::uint8_t> held_back_;  // a datagram the fault injector reorders
  sockaddr_in held_back_to_{};
  bool closing_ = false;
  bool closed_ = false;
  std::int64_t timer_due_ms_ = -1;
  std::uint64_t segments_sent_ = 0;
  std::uint64_t lent_segments_sent_ = 0;  // first sends that carried lent memory
  std::uint64_t spliced_sends_ = 0;       // sends whose lent memory went without a copy
  std::uint64_t slot_sends_ = 0;          // and whose own bytes went from a splice slot
  std::uint64_t placed_datagrams_ = 0;    // read partly straight into the payload they continue
  std::uint64_t send_failures_ = 0;
  LogLimiter strangers_{"udp datagrams from strangers"};
};

}  // namespace lmdx::net

#endif  // LMDX_NET_UDP_UDP_TRANSPORT_H_

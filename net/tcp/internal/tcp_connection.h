#ifndef LMDX_NET_TCP_INTERNAL_TCP_CONNECTION_H_
#define LMDX_NET_TCP_INTERNAL_TCP_CONNECTION_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "net/handshake.h"
#include "net/internal/socket.h"
#include "net/message.h"
#include "net/progress_engine.h"
#include "net/transport.h"

namespace lmdx::net::internal {

// One TCP connection between two nodes: the authenticated handshake, then frames both ways.
//
// Reading happens on the progress thread only. Writing is done by whichever thread holds the
// writer role: a sender that finds the connection idle writes its frame at once (no thread
// switch on the latency path); frames queued meanwhile are written by the same writer; when the
// socket is full, an application thread waits in poll() for room while the progress thread
// hands the rest to an EPOLLOUT event, so it never blocks.
class TcpConnection : public std::enable_shared_from_this<TcpConnection> {
 public:
  struct Callbacks {
    // The handshake finished; peer_rank() is authenticated.
    std::function<void(const std::shared_ptr<TcpConnection>&)> on_established;
    // The connection ended; `was_established` says whether a peer had been authenticated.
    std::function<void(const std::shared_ptr<TcpConnection>&, bool was_established,
                       const std::string& why)>
        on_closed;
  };

  // outgoing: this node connects to expected_peer; otherwise the peer is known after the
  // handshake.
  TcpConnection(Fd fd, bool outgoing, int expected_peer, Handshake handshake,
                std::string remote_label, int my_rank, ProgressEngine& engine, TransportHost& host,
                Callbacks callbacks);
  ~TcpConnection();

  // Registers with the progress engine and starts the handshake (and its 5 s deadline).
  void Start();
  // Queues a frame; see the class comment for who writes it.
  void Send(OutgoingMessage message, bool may_block);
  // Ends the connection: queued frames fail, and on_closed runs on the progress thread unless
  // `quiet` (the job is ending).
  void Close(const std::string& why, bool quiet = false);

  // The rank at the other end: known from the start for an outgoing connection, after the
  // handshake for an incoming one (-1 until then).
  int peer_rank() const { return peer_rank_; }
  bool outgoing() const { return outgoing_; }
  const std::string& remote_label() const { return remote_label_; }

 private:
  struct Pending {
    OutgoingMessage message;
    std::uint8_t header[kFrameHeaderSize];
    std::size_t written = 0;
    std::size_t total = 0;
  };
  enum class ReadState { kHeader, kBody, kPayload };

  void OnEvents(std::uint32_t events);
  void OnConnected();
  void OnReadable();
  bool ConsumeBuffered();  // false once the connection closed
  bool FeedHandshake();
  bool OnHeader();
  // The header lies whole at begin_ with `available` bytes from there.
  bool TakeWholeFrameHeader(std::size_t available);
  bool StartFrame(const FrameHeader& header);
  bool StartPayloadOrDeliver();
  void Deliver();
  // Writes queued frames while this thread holds the writer role.
  void WriteQueued(bool may_block);
  // Sizes the send buffer of a local pair for the frame about to be written (writer only).
  void SizeSendBufferFor(std::uint64_t frame_bytes);
  void SetWantWrite(bool want);

  Fd fd_;
  bool outgoing_;
  bool connecting_;
  Handshake handshake_;
  std::string remote_label_;
  int my_rank_;
  int peer_rank_;
  ProgressEngine& engine_;
  TransportHost& host_;
  Callbacks callbacks_;

  // Read side (progress thread only).
  std::vector<std::uint8_t> buffer_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  ReadState read_state_ = ReadState::kHeader;
  std::uint8_t header_bytes_[kFrameHeaderSize];
  std::size_t header_got_ = 0;
  InboundMessage current_;
  std::uint64_t payload_got_ = 0;
  std::atomic<bool> read_stopped_{false};  // closed_, for the reads: Close may run inside one

  // Write side.
  std::mutex mutex_;  // guards everything below
  std::deque<Pending> queue_;
  bool established_ = false;
  bool closed_ = false;
  bool writer_active_ = false;
  bool want_write_ = false;

  // Writer only: whether the peer shares this kernel, once asked, and the send buffer set last.
  std::optional<bool> peer_here_;
  int send_buffer_ = kLocalSendBufferBytes;
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_TCP_INTERNAL_TCP_CONNECTION_H_

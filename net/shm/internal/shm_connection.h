#ifndef LMDX_NET_SHM_INTERNAL_SHM_CONNECTION_H_
#define LMDX_NET_SHM_INTERNAL_SHM_CONNECTION_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "base/fd.h"
#include "net/shm/internal/shm_cells.h"
#include "net/shm/internal/shm_ring.h"
#include "net/message.h"
#include "net/progress_engine.h"
#include "net/transport.h"

namespace lmdx::net::internal {

// The segment two nodes share: a header, two ring control blocks, the two rings' data, then the
// two directions' cells. Ring and cells 0 carry frames from the node that created the segment (the
// client) to the other.
struct SegmentHeader {
  char magic[8];  // "LMDXSHM3"
  std::uint64_t capacity;
};
constexpr std::size_t kSegmentHeaderSize = 64;

// What one side holds of a segment once the handshake is over: the mapping, and the eventfds of
// both directions (data: the reader sleeps on it; space: the writer waits on it).
struct ShmSetup {
  Fd socket;  // the authenticated Unix-domain socket: open exactly as long as the peer lives
  void* mapping = nullptr;
  std::size_t mapping_size = 0;
  bool creator = false;
  Fd data_out;   // signals the peer's reader
  Fd space_in;   // the peer signals room in my outgoing ring
  Fd data_in;    // the peer signals frames in my incoming ring
  Fd space_out;  // signals the peer's writer
};

// Maps a segment of the given capacity per direction over fd; throws lmdx::Error.
void* MapSegment(int fd, std::uint64_t capacity, bool initialize, std::size_t* size);
std::size_t SegmentSize(std::uint64_t capacity);

// One pair's shared-memory connection. Writing works like TcpConnection's (whoever finds it idle
// writes; the progress thread never waits for room). Reading is done by Poll(), on whichever
// thread dispatches: from the progress engine's poller list (no system call) or when the data
// eventfd fires.
class ShmConnection : public std::enable_shared_from_this<ShmConnection> {
 public:
  using OnClosed = std::function<void(const std::shared_ptr<ShmConnection>&, const std::string&)>;

  ShmConnection(int my_rank, int peer_rank, std::string label, ProgressEngine& engine,
                TransportHost& host, OnClosed on_closed);
  ~ShmConnection();

  // The segment is mapped and authenticated: register with the engine and flush what is queued.
  void Establish(ShmSetup setup);
  void Send(OutgoingMessage message, bool may_block);
  // Transport::SendNow: writes the frame in this call when the connection is idle and has room
  // for all of it (application threads only; the frame's on_sent is not called).
  bool SendNow(OutgoingMessage& message);
  // Transport::SendRawNow: a small raw message into a cell in this call, when one is free and
  // the connection is idle with the ring all read (application threads only).
  bool SendRawNow(const SmallRaw& raw);
  // Reads and delivers whole frames; true when anything arrived. The caller holds a reference to
  // this connection for the call (the transport's polled list, or the callback's own): a handler
  // may close it, and taking one here cost two atomic operations on every poll of a waiting thread.
  bool Poll();
  bool Arm();
  void Disarm();
  void Close(const std::string& why, bool quiet = false);

  int peer_rank() const { return peer_rank_; }
  // The peer's process, as the kernel names it to this process (SO_PEERCRED of the lifeline, so
  // in this process's pid namespace); 0 until established.
  pid_t peer_pid() const { return peer_pid_.load(std::memory_order_acquire); }
  const std::string& label() const { return label_; }

 private:
  struct Pending {
    OutgoingMessage message;
    std::uint8_t header[kFrameHeaderSize];
    std::uint64_t written = 0;
    std::uint64_t total = 0;
  };
  enum class ReadState { kHeader, kBody, kPayload };

  // Established and open, with no writer and nothing queued: a frame may go straight out.
  bool IdleLocked() const { return established_ && !closed_ && !writer_active_ && queue_.empty(); }
  void WriteQueued(bool may_block);
  // Writes a whole frame when the ring has room for it; the caller holds the writer role (or the
  // lock, with the role free).
  bool WriteAlone(const std::uint8_t* header, std::uint64_t total, const OutgoingMessage& message,
                  bool* signal);
  // `cells` cells are free and the reader has taken every byte written to the ring (checked in
  // that order: the ring's tail is a line of the reader's), so the next frame may go into cells
  // and keep the pair's order (see Poll). The caller may write (writer role, or the lock with the
  // role free).
  bool NextMayTakeCells(std::uint32_t cells) {
    return out_cells_.HasRoom(cells) && out_.AllTaken();
  }
  bool WaitForRoom();  // application threads; false once closed
  void OnSpace();
  void OnSocket();
  // Takes the frames waiting in cells; true when there were any.
  bool TakeCells();
  // Delivers the frame whose first cell is `first` and sets *cells to the cells it spans; false
  // when it was malformed (the connection is closed).
  bool DeliverCells(const std::uint8_t* first, std::uint32_t* cells);
  // A frame read whole from cells, its header checked.
  bool DeliverCellFrame(const FrameHeader& header, const std::uint8_t* bytes);
  bool OnHeader();
  bool StartPayloadOrDeliver();
  void Deliver();

  int my_rank_;
  int peer_rank_;
  std::string label_;
  ProgressEngine& engine_;
  TransportHost& host_;
  OnClosed on_closed_;
  ShmSetup setup_;
  Ring out_;
  Ring in_;
  CellRing out_cells_;
  CellRing in_cells_;
  std::atomic<bool> ready_{false};
  std::atomic<pid_t> peer_pid_{0};
  std::atomic<bool> closed_flag_{false};

  // Read side (dispatching thread only).
  ReadState read_state_ = ReadState::kHeader;
  std::uint8_t header_bytes_[kFrameHeaderSize];
  std::size_t header_got_ = 0;
  InboundMessage current_;
  std::uint64_t payload_got_ = 0;

  // Write side.
  std::mutex mutex_;  // guards everything below
  std::deque<Pending> queue_;
  bool established_ = false;
  bool closed_ = false;
  bool writer_active_ = false;
  bool want_space_ = false;  // the progress thread writes on when the peer frees room
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_SHM_INTERNAL_SHM_CONNECTION_H_

#include "net/tcp/internal/tcp_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "net/crowding.h"
#include "net/internal/frame_assembly.h"
#include "net/wait_board.h"

namespace lmdx::net::internal {
namespace {

constexpr std::size_t kReadBufferSize = 64 * 1024;
// Payload bytes still to come beyond this go straight from the socket to their destination.
constexpr std::size_t kDirectReadThreshold = 16 * 1024;
// One readable event reads at most this much, so one busy peer cannot starve the others.
constexpr std::size_t kReadBudget = 32u << 20;
constexpr int kMaxIovecs = 48;
// One sendmsg writes at most this much. On loopback the sender's call copies the bytes in and
// the receiver copies them out: a 64 MiB message written in one call reached the receiver only in
// large gulps, and the two copies ran one after the other instead of side by side. Which piece is
// best has moved with the machine (docs/decisions.md); 1 MiB is the best measured last.
constexpr std::size_t kMaxWrite = 1024 * 1024;
constexpr int kHandshakeDeadlineMs = 5000;
constexpr std::uint32_t kReadEvents = EPOLLIN | EPOLLRDHUP;
constexpr std::int64_t kWriteSpinNs = 50 * 1000;

}  // namespace

TcpConnection::TcpConnection(Fd fd, bool outgoing, int expected_peer, Handshake handshake,
                             std::string remote_label, int my_rank, ProgressEngine& engine,
                             TransportHost& host, Callbacks callbacks)
    : fd_(std::move(fd)),
      outgoing_(outgoing),
      connecting_(outgoing),
      handshake_(std::move(handshake)),
      remote_label_(std::move(remote_label)),
      my_rank_(my_rank),
      peer_rank_(outgoing ? expected_peer : -1),
      engine_(engine),
      host_(host),
      callbacks_(std::move(callbacks)),
      buffer_(kReadBufferSize) {}

TcpConnection::~TcpConnection() = default;

void TcpConnection::Start() {
  // A server speaks first: the challenge goes out before the progress thread can see the socket,
  // so that afterwards only the progress thread touches the handshake.
  if (!outgoing_ && !FeedHandshake()) return;
  std::weak_ptr<TcpConnection> weak = weak_from_this();
  engine_.Add(fd_.get(), outgoing_ ? (EPOLLOUT | EPOLLIN) : kReadEvents,
              [weak](std::uint32_t events) {
                if (auto self = weak.lock()) self->OnEvents(events);
              });
  bool closed;
  {
    std::lock_guard lock(mutex_);
    closed = closed_;
  }
  if (closed) {
    // Closed before it was registered (its node dropped the peer): Close's Remove came first,
    // and a socket at its end would wake the progress thread for ever.
    engine_.Remove(fd_.get());
    return;
  }
  const int deadline_ms = crowding::Scaled(kHandshakeDeadlineMs);
  engine_.PostAfter(deadline_ms, [weak, deadline_ms] {
    auto self = weak.lock();
    if (!self) return;
    bool pending;
    {
      std::lock_guard lock(self->mutex_);
      pending = !self->established_ && !self->closed_;
    }
    if (pending) {
      self->Close("the handshake did not complete within " +
                  SecondsText(std::chrono::milliseconds(deadline_ms)));
    }
  });
}

void TcpConnection::OnEvents(std::uint32_t events) {
  auto keep_alive = shared_from_this();
  if (connecting_) {
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) OnConnected();
    return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) OnReadable();
  if (events & EPOLLOUT) {
    bool handed_to_progress;
    {
      std::lock_guard lock(mutex_);
      handed_to_progress = writer_active_ && want_write_ && !closed_;
    }
    if (handed_to_progress) WriteQueued(/*may_block=*/false);
  }
}

void TcpConnection::OnConnected() {
  int error = 0;
  socklen_t length = sizeof error;
  ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &error, &length);
  if (error != 0) {
    Close(SystemErrorText("cannot connect to " + remote_label_, error));
    return;
  }
  connecting_ = false;
  engine_.Modify(fd_.get(), kReadEvents);
}

void TcpConnection::OnReadable() {
  std::size_t budget = kReadBudget;
  // A frame handed over may close the connection (its node lost the peer): the memory it read
  // into may then be gone, so it reads no more.
  while (budget > 0 && !read_stopped_.load(std::memory_order_acquire)) {
    ssize_t got;
    std::size_t asked;
    bool direct = read_state_ == ReadState::kPayload && begin_ == end_ &&
                  current_.header.payload_length - payload_got_ >= kDirectReadThreshold;
    if (direct) {
      std::size_t want = static_cast<std::size_t>(
          std::min<std::uint64_t>(current_.header.payload_length - payload_got_, budget));
      asked = want;
      got = ::recv(fd_.get(), current_.payload + payload_got_, want, MSG_DONTWAIT);
    } else {
      if (begin_ == end_) begin_ = end_ = 0;
      if (end_ == buffer_.size()) {
        std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      asked = buffer_.size() - end_;
      got = ::recv(fd_.get(), buffer_.data() + end_, asked, MSG_DONTWAIT);
    }
    if (got == 0) {
      Close("the connection was closed by the other side");
      return;
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      Close(SystemErrorText("receive", errno));
      return;
    }
    // A payload that takes long to arrive is traffic all along, not only once it is whole: the
    // hang watch must not take a long transfer for a deadlock. (Its own questions and answers
    // carry no payload.)
    if (read_state_ == ReadState::kPayload) wait_board::NoteTraffic();
    budget -= std::min<std::size_t>(budget, static_cast<std::size_t>(got));
    // A short read drained the socket: stop here rather than pay a system call to hear EAGAIN
    // (epoll reports the socket again when more arrives).
    bool drained = static_cast<std::size_t>(got) < asked;
    if (direct) {
      payload_got_ += static_cast<std::uint64_t>(got);
      if (payload_got_ == current_.header.payload_length) Deliver();
    } else {
      end_ += static_cast<std::size_t>(got);
      if (!ConsumeBuffered()) return;
    }
    if (drained) return;
  }
}

bool TcpConnection::FeedHandshake() {
  std::size_t taken = handshake_.Feed(buffer_.data() + begin_, end_ - begin_);
  begin_ += taken;
  std::string output = handshake_.TakeOutput();
  if (!output.empty()) {
    ssize_t sent = ::send(fd_.get(), output.data(), output.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent != static_cast<ssize_t>(output.size())) {
      Close("cannot send the handshake");
      return false;
    }
  }
  switch (handshake_.state()) {
    case Handshake::State::kRunning: return true;
    case Handshake::State::kFailed: Close(handshake_.error()); return false;
    case Handshake::State::kDone: break;
  }
  peer_rank_ = handshake_.peer_id();
  bool flush;
  {
    std::lock_guard lock(mutex_);
    established_ = true;
    flush = !queue_.empty() && !writer_active_;
    if (flush) writer_active_ = true;
  }
  callbacks_.on_established(shared_from_this());
  if (flush) WriteQueued(/*may_block=*/false);
  return true;
}

bool TcpConnection::ConsumeBuffered() {
  while (begin_ < end_) {
    if (read_stopped_.load(std::memory_order_acquire)) return false;
    if (handshake_.state() != Handshake::State::kDone) {
      if (!FeedHandshake()) return false;
      continue;
    }
    std::size_t available = end_ - begin_;
    switch (read_state_) {
      case ReadState::kHeader: {
        if (header_got_ == 0 && available >= kFrameHeaderSize) {
          if (!TakeWholeFrameHeader(available)) return false;
          break;
        }
        std::size_t take = std::min(available, kFrameHeaderSize - header_got_);
        std::memcpy(header_bytes_ + header_got_, buffer_.data() + begin_, take);
        header_got_ += take;
        begin_ += take;
        if (header_got_ == kFrameHeaderSize && !OnHeader()) return false;
        break;
      }
      case ReadState::kBody: {
        std::size_t take = std::min(available, current_.header.body_length - current_.body.size());
        current_.body.append(reinterpret_cast<const char*>(buffer_.data() + begin_), take);
        begin_ += take;
        if (current_.body.size() == current_.header.body_length && !StartPayloadOrDeliver()) {
          return false;
        }
        break;
      }
      case ReadState::kPayload: {
        std::size_t take = static_cast<std::size_t>(
            std::min<std::uint64_t>(available, current_.header.payload_length - payload_got_));
        std::memcpy(current_.payload + payload_got_, buffer_.data() + begin_, take);
        payload_got_ += take;
        begin_ += take;
        if (payload_got_ == current_.header.payload_length) Deliver();
        break;
      }
    }
  }
  return true;
}

// A header that lies whole in the buffer is read there; a small raw frame whole after it goes to
// the host as the small raw message it stands for (OnRawMessage), its payload read from the
// buffer: no frame, body or payload buffer, and one pass of ConsumeBuffered's loop (each takes the
// lock) instead of three. As udp's frame reader does; at 8 B it measured 6.23 us against 6.12
// (medians of 10 alternate runs), inside the machine's swings.
bool TcpConnection::TakeWholeFrameHeader(std::size_t available) {
  const std::uint8_t* at = buffer_.data() + begin_;
  std::string error;
  auto header = CheckIncomingHeader(at, peer_rank_, my_rank_, "the connection", &error);
  if (!header) {
    Close(error);
    return false;
  }
  begin_ += kFrameHeaderSize;
  if (std::size_t taken =
          HandOverSmallRaw(host_, *header, at + kFrameHeaderSize, available - kFrameHeaderSize)) {
    begin_ += taken;
    return true;
  }
  return StartFrame(*header);
}

bool TcpConnection::OnHeader() {
  header_got_ = 0;
  std::string error;
  auto header = CheckIncomingHeader(header_bytes_, peer_rank_, my_rank_, "the connection", &error);
  if (!header) {
    Close(error);
    return false;
  }
  return StartFrame(*header);
}

bool TcpConnection::StartFrame(const FrameHeader& header) {
  current_ = InboundMessage{};
  current_.header = header;
  if (header.body_length > 0) {
    current_.body.reserve(header.body_length);
    read_state_ = ReadState::kBody;
    return true;
  }
  return StartPayloadOrDeliver();
}

bool TcpConnection::StartPayloadOrDeliver() {
  if (current_.header.payload_length == 0) {
    Deliver();
    return true;
  }
  std::string error;
  if (!PreparePayload(host_, current_, &error)) {
    Close(error);
    return false;
  }
  payload_got_ = 0;
  read_state_ = ReadState::kPayload;
  return true;
}

void TcpConnection::Deliver() {
  read_state_ = ReadState::kHeader;
  payload_got_ = 0;
  host_.OnMessage(std::exchange(current_, InboundMessage{}));
}

void TcpConnection::Send(OutgoingMessage message, bool may_block) {
  Pending pending;
  pending.total = SealOutgoingHeader(message, my_rank_, pending.header);
  pending.message = std::move(message);
  {
    std::unique_lock lock(mutex_);
    if (closed_) {
      lock.unlock();
      if (pending.message.on_sent) pending.message.on_sent(false);
      return;
    }
    queue_.push_back(std::move(pending));
    if (!established_ || writer_active_) return;
    writer_active_ = true;
  }
  WriteQueued(may_block);
}

void TcpConnection::WriteQueued(bool may_block) {
  std::int64_t stalled_since = 0;  // when the socket last became full; 0 while it takes data
  for (;;) {
    iovec iov[kMaxIovecs];
    int count = 0;
    std::uint64_t front_total = 0;
    {
      std::unique_lock lock(mutex_);
      if (closed_) {
        // Close() left the queue to this writer, whose iovecs pointed into it.
        std::deque<Pending> failed;
        failed.swap(queue_);
        writer_active_ = false;
        lock.unlock();
        for (Pending& pending : failed) {
          if (pending.message.on_sent) pending.message.on_sent(false);
        }
        return;
      }
      if (queue_.empty()) {
        writer_active_ = false;
        SetWantWrite(false);
        return;
      }
      // Elements of a deque stay where they are while others are appended, and only the writer
      // removes them, so the iovecs stay valid after the lock is released.
      front_total = queue_.front().total;
      std::size_t batch = 0;
      for (Pending& pending : queue_) {
        if (count + 3 > kMaxIovecs || batch >= kMaxWrite) break;
        std::size_t skip = pending.written;
        auto add = [&](const void* base, std::size_t size) {
          if (skip >= size) {
            skip -= size;
            return;
          }
          std::size_t take = std::min(size - skip, kMaxWrite - batch);
          if (take == 0) return;
          iov[count++] = iovec{const_cast<char*>(static_cast<const char*>(base)) + skip, take};
          batch += take;
          skip = 0;
        };
        add(pending.header, kFrameHeaderSize);
        add(pending.message.body.data(), pending.message.body.size());
        add(pending.message.payload.data, pending.message.payload.size);
      }
    }
    SizeSendBufferFor(front_total);
    msghdr header{};
    header.msg_iov = iov;
    header.msg_iovlen = static_cast<std::size_t>(count);
    ssize_t written = ::sendmsg(fd_.get(), &header, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (may_block) {
          // The receiver drains a loopback socket within microseconds: poll without sleeping for
          // a moment, as a waiting receiver does (net/completion.h), then sleep until there is
          // room.
          pollfd waiting{fd_.get(), POLLOUT, 0};
          if (::poll(&waiting, 1, 0) == 0) {
            if (stalled_since == 0) stalled_since = MonotonicNs();
            bool patient = MonotonicNs() - stalled_since < kWriteSpinNs;
            if (!patient) ::poll(&waiting, 1, 1000);
          }
          continue;
        }
        std::lock_guard lock(mutex_);
        SetWantWrite(true);  // the progress thread goes on when the socket has room
        return;
      }
      Close(SystemErrorText("send to " + remote_label_, errno));
      continue;  // the closed branch above fails what is queued
    }
    stalled_since = 0;
    std::vector<std::function<void(bool)>> finished;
    {
      std::lock_guard lock(mutex_);
      std::size_t left = static_cast<std::size_t>(written);
      while (left > 0 && !queue_.empty()) {
        Pending& front = queue_.front();
        std::size_t take = std::min(left, front.total - front.written);
        front.written += take;
        left -= take;
        if (front.written < front.total) break;
        if (front.message.on_sent) finished.push_back(std::move(front.message.on_sent));
        queue_.pop_front();
      }
    }
    for (auto& on_sent : finished) on_sent(true);
  }
}

// A local pair's send buffer is small, so that a large frame's bytes are still in cache when the
// receiver copies them out (KeepLocalTrafficInCache). A frame that outgrows it but fits a roomier
// one goes in whole instead: its writer then waits for the receiver to drain the socket no more.
// 1 MiB went from 139-143 us to 113-130 (OpenMPI 121-134), where 8 MiB and 64 MiB written with
// the roomier buffer were a third slower (docs/decisions.md).
void TcpConnection::SizeSendBufferFor(std::uint64_t frame_bytes) {
  if (!peer_here_) peer_here_ = PeerOnThisKernel(fd_.get());
  if (!*peer_here_) return;
  bool whole =
      frame_bytes > 2 * std::uint64_t{kLocalSendBufferBytes} && frame_bytes <= kWholeFrameUpTo;
  int want = whole ? kWholeFrameSendBufferBytes : kLocalSendBufferBytes;
  if (want == send_buffer_) return;
  SetSendBuffer(fd_.get(), want);
  send_buffer_ = want;
}

void TcpConnection::SetWantWrite(bool want) {
  if (want_write_ == want) return;
  want_write_ = want;
  engine_.Modify(fd_.get(), kReadEvents | (want ? std::uint32_t{EPOLLOUT} : 0u));
}

void TcpConnection::Close(const std::string& why, bool quiet) {
  std::deque<Pending> failed;
  bool was_established;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    read_stopped_.store(true, std::memory_order_release);
    was_established = established_;
    // A thread in the middle of writing still reads these frames; it fails them itself.
    bool writer_busy = writer_active_ && !want_write_;
    if (!writer_busy) failed.swap(queue_);
  }
  engine_.Remove(fd_.get());
  ::shutdown(fd_.get(), SHUT_RDWR);
  for (Pending& pending : failed) {
    if (pending.message.on_sent) pending.message.on_sent(false);
  }
  if (quiet) return;
  auto self = shared_from_this();
  engine_.Post(
      [self, was_established, why] { self->callbacks_.on_closed(self, was_established, why); });
}

}  // namespace lmdx::net::internal

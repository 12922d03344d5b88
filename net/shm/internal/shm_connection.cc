#include "net/shm/internal/shm_connection.h"

#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "net/internal/frame_assembly.h"
#include "net/wait_board.h"

namespace lmdx::net::internal {
namespace {

constexpr std::size_t kControlSize = 256;  // one RingControl, padded
static_assert(sizeof(RingControl) <= kControlSize);
// One poll reads at most this much, so one busy peer cannot starve the others.
constexpr std::uint64_t kReadBudget = 32u << 20;
constexpr std::int64_t kWriteSpinNs = 50 * 1000;
// Every small raw message the node offers to the express lane fits a span of cells, and the
// node offers every one that does.
static_assert(SmallRawCell::kMaxPayload == SmallRaw::kMaxPayload);

void Signal(int fd) {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
}

void Drain(int fd) {
  std::uint64_t value;
  [[maybe_unused]] ssize_t n = ::read(fd, &value, sizeof value);
}

// Shared (not private) futex calls: the word lies in memory of two processes.
void FutexWait(std::atomic<std::uint32_t>* word, std::uint32_t value, int timeout_ms) {
  timespec timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, value, &timeout, nullptr,
            0);
}

void FutexWake(std::atomic<std::uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

Ring RingAt(void* mapping, std::uint64_t capacity, int index) {
  auto* base = static_cast<std::uint8_t*>(mapping);
  auto* control = reinterpret_cast<RingControl*>(base + kSegmentHeaderSize + index * kControlSize);
  std::uint8_t* data = base + kSegmentHeaderSize + 2 * kControlSize + index * capacity;
  return Ring(control, data, capacity);
}

void* CellsAt(void* mapping, std::uint64_t capacity, int index) {
  return static_cast<std::uint8_t*>(mapping) + kSegmentHeaderSize + 2 * kControlSize +
         2 * capacity + index * CellRing::kAreaSize;
}

// Copies a frame's header, body and payload, one after the other, into a ring or a cell (through
// its Put(offset, data, size)); returns how many bytes that was.
template <typename Target>
std::uint64_t CopyFrame(const std::uint8_t* header, const OutgoingMessage& message,
                        Target& target) {
  std::uint64_t put = 0;
  auto add = [&](const void* data, std::uint64_t size) {
    if (size == 0) return;
    target.Put(put, data, size);
    put += size;
  };
  add(header, kFrameHeaderSize);
  add(message.body.data(), message.body.size());
  add(message.payload.data, message.payload.size);
  return put;
}

}  // namespace

std::size_t SegmentSize(std::uint64_t capacity) {
  return kSegmentHeaderSize + 2 * kControlSize + 2 * capacity + 2 * CellRing::kAreaSize;
}

void* MapSegment(int fd, std::uint64_t capacity, bool initialize, std::size_t* size) {
  *size = SegmentSize(capacity);
  void* mapping = ::mmap(nullptr, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) ThrowSystemError("shm: mmap", errno, LMDX_ERR_NETWORK);
  auto* header = static_cast<SegmentHeader*>(mapping);
  if (initialize) {
    std::memcpy(header->magic, "LMDXSHM3", 8);
    header->capacity = capacity;
    for (int index = 0; index < 2; ++index) {
      auto* control =
          new (static_cast<std::uint8_t*>(mapping) + kSegmentHeaderSize + index * kControlSize)
              RingControl();
      // Armed from the start: until a thread of the reader polls this ring, writes signal.
      control->reader_asleep.store(1, std::memory_order_relaxed);
      CellRing::Initialize(CellsAt(mapping, capacity, index));
    }
  } else if (std::memcmp(header->magic, "LMDXSHM3", 8) != 0 || header->capacity != capacity) {
    ::munmap(mapping, *size);
    throw Error(LMDX_ERR_NETWORK, "shm: the segment is not an LMDX ring segment");
  }
  return mapping;
}

ShmConnection::ShmConnection(int my_rank, int peer_rank, std::string label, ProgressEngine& engine,
                             TransportHost& host, OnClosed on_closed)
    : my_rank_(my_rank),
      peer_rank_(peer_rank),
      label_(std::move(label)),
      engine_(engine),
      host_(host),
      on_closed_(std::move(on_closed)) {}

ShmConnection::~ShmConnection() {
  if (setup_.mapping != nullptr) ::munmap(setup_.mapping, setup_.mapping_size);
}

void ShmConnection::Establish(ShmSetup setup) {
  setup_ = std::move(setup);
  ucred credentials{};
  socklen_t credentials_size = sizeof credentials;
  if (::getsockopt(setup_.socket.get(), SOL_SOCKET, SO_PEERCRED, &credentials, &credentials_size) ==
      0) {
    peer_pid_.store(credentials.pid, std::memory_order_release);
  }
  std::uint64_t capacity = static_cast<SegmentHeader*>(setup_.mapping)->capacity;
  out_ = RingAt(setup_.mapping, capacity, setup_.creator ? 0 : 1);
  in_ = RingAt(setup_.mapping, capacity, setup_.creator ? 1 : 0);
  out_cells_ = CellRing(CellsAt(setup_.mapping, capacity, setup_.creator ? 0 : 1));
  in_cells_ = CellRing(CellsAt(setup_.mapping, capacity, setup_.creator ? 1 : 0));
  // Ready before the eventfd is registered: a signal that came earlier is reported at once, and
  // its Poll must find the rings.
  ready_.store(true, std::memory_order_release);
  std::weak_ptr<ShmConnection> weak = weak_from_this();
  engine_.Add(setup_.data_in.get(), EPOLLIN, [weak](std::uint32_t) {
    auto self = weak.lock();
    if (!self) return;
    Drain(self->setup_.data_in.get());
    self->Poll();
  });
  engine_.Add(setup_.space_in.get(), EPOLLIN, [weak](std::uint32_t) {
    if (auto self = weak.lock()) self->OnSpace();
  });
  engine_.Add(setup_.socket.get(), EPOLLIN | EPOLLRDHUP, [weak](std::uint32_t) {
    if (auto self = weak.lock()) self->OnSocket();
  });
  bool closed;
  bool flush;
  {
    std::lock_guard lock(mutex_);
    closed = closed_;
    established_ = true;
    flush = !closed_ && !queue_.empty() && !writer_active_;
    if (flush) writer_active_ = true;
  }
  if (closed) {
    // Closed while it was set up (its node dropped the peer): Close found it not ready and left
    // these unregistered, and a socket at its end would wake the progress thread for ever.
    engine_.Remove(setup_.data_in.get());
    engine_.Remove(setup_.space_in.get());
    engine_.Remove(setup_.socket.get());
    return;
  }
  if (flush) WriteQueued(/*may_block=*/!engine_.InDispatch());
}

bool ShmConnection::Arm() {
  if (!ready_.load(std::memory_order_acquire) || closed_flag_.load(std::memory_order_relaxed)) {
    return false;
  }
  // ArmReader's fence orders the flag before the look at the cells too.
  return in_.ArmReader() || in_cells_.Peek() != nullptr;
}

void ShmConnection::Disarm() {
  if (ready_.load(std::memory_order_acquire)) in_.DisarmReader();
}

bool ShmConnection::Poll() {
  if (!ready_.load(std::memory_order_acquire) || closed_flag_.load(std::memory_order_relaxed)) {
    return false;
  }
  // The ring's head is read before the cells: a frame written to the ring after a cell is seen
  // only with that cell, and the writer fills a cell only once the ring is empty, so cells taken
  // now come before every frame up to this head and after every frame taken earlier.
  std::uint64_t available = in_.Available();
  bool found = TakeCells();
  if (available == 0 || closed_flag_.load(std::memory_order_relaxed)) return found;
  std::uint64_t budget = kReadBudget;
  std::uint64_t taken = 0;  // read but not yet handed back to the writer
  auto give_back = [&] {
    if (taken == 0) return;
    available -= taken;
    if (std::uint32_t how = in_.Consume(taken)) {
      if (how == Ring::kSleepsOnFutex) {
        FutexWake(in_.writer_flag());
      } else {
        Signal(setup_.space_out.get());
      }
    }
    taken = 0;
  };
  while (budget > 0) {
    if (available == taken) {
      give_back();
      available = in_.Available();
      TakeCells();
      if (available == 0) break;
    }
    if (closed_flag_.load(std::memory_order_relaxed)) return true;
    std::uint64_t have = available - taken;
    std::uint64_t take = 0;
    switch (read_state_) {
      case ReadState::kHeader: {
        take = std::min<std::uint64_t>(have, kFrameHeaderSize - header_got_);
        in_.Get(taken, header_bytes_ + header_got_, take);
        header_got_ += take;
        taken += take;
        if (header_got_ == kFrameHeaderSize && !OnHeader()) return true;
        break;
      }
      case ReadState::kBody: {
        std::size_t old = current_.body.size();
        take = std::min<std::uint64_t>(have, current_.header.body_length - old);
        current_.body.resize(old + take);
        in_.Get(taken, current_.body.data() + old, take);
        taken += take;
        if (current_.body.size() == current_.header.body_length && !StartPayloadOrDeliver()) {
          return true;
        }
        break;
      }
      case ReadState::kPayload: {
        take = std::min<std::uint64_t>(have, current_.header.payload_length - payload_got_);
        in_.Get(taken, current_.payload + payload_got_, take);
        payload_got_ += take;
        taken += take;
        // A payload that takes long to arrive is traffic all along, not only once it is whole:
        // the hang watch must not take a long transfer for a deadlock. (The watch's own
        // questions and answers carry no payload.)
        wait_board::NoteTraffic();
        // Hand large pieces back at once so that the writer copies while this side does.
        if (taken >= in_.capacity() / 4) give_back();
        if (payload_got_ == current_.header.payload_length) Deliver();
        break;
      }
    }
    budget -= std::min(budget, take);
  }
  give_back();
  return true;
}

bool ShmConnection::TakeCells() {
  const std::uint8_t* bytes = in_cells_.Peek();
  if (bytes == nullptr) return false;
  // At most a ring's worth per call, so that a peer that keeps writing cannot hold the poll.
  for (std::uint32_t count = 0; bytes != nullptr && count < CellRing::kCells; ++count) {
    std::uint32_t cells = 1;
    if (closed_flag_.load(std::memory_order_relaxed) || !DeliverCells(bytes, &cells)) return true;
    in_cells_.Take(cells);
    bytes = in_cells_.Peek();
  }
  in_cells_.Release();
  return true;
}

bool ShmConnection::DeliverCells(const std::uint8_t* first, std::uint32_t* cells) {
  bool small_raw = SmallRawCell::IsOne(first);
  std::uint64_t size = 0;
  std::optional<FrameHeader> header;
  if (small_raw) {
    size = SmallRawCell::kHeaderSize + std::uint64_t{SmallRawCell::LengthOf(first)};
  } else {
    std::string error;
    header = CheckIncomingHeader(first, peer_rank_, my_rank_, "the segment shared", &error);
    if (!header) {
      Close(error);
      return false;
    }
    size = kFrameHeaderSize + std::uint64_t{header->body_length} + header->payload_length;
  }
  if (size > CellRing::kSpanBytes) {
    Close(std::string(small_raw ? "malformed small message" : "malformed frame") + " in cells: " +
          std::to_string(size) + " bytes, more than the " + std::to_string(CellRing::kMaxSpan) +
          " cells of the segment shared a frame may span hold");
    return false;
  }
  *cells = CellRing::CellsFor(size);
  const std::uint8_t* bytes = first;
  // A span's cells lie apart (each starts with its stamp): its frame is read whole from a copy.
  std::array<std::uint8_t, CellRing::kSpanBytes> span;
  if (*cells > 1) {
    in_cells_.Gather(span.data(), size);
    bytes = span.data();
  }
  if (small_raw) {
    SmallRawCell raw = SmallRawCell::Read(bytes);
    host_.OnRawMessage(
        SmallRaw{peer_rank_, my_rank_, raw.tag, raw.sequence, raw.payload, raw.length});
    return true;
  }
  return DeliverCellFrame(*header, bytes);
}

bool ShmConnection::DeliverCellFrame(const FrameHeader& header, const std::uint8_t* bytes) {
  std::uint64_t body_length = header.body_length;
  std::string error;
  InboundMessage message;
  message.header = header;
  const std::uint8_t* body = bytes + kFrameHeaderSize;
  message.body.assign(reinterpret_cast<const char*>(body), body_length);
  if (!TakePayloadFrom(body + body_length, host_, message, &error)) {
    Close(error);
    return false;
  }
  host_.OnMessage(std::move(message));
  return true;
}

bool ShmConnection::OnHeader() {
  header_got_ = 0;
  std::string error;
  auto header =
      CheckIncomingHeader(header_bytes_, peer_rank_, my_rank_, "the segment shared", &error);
  if (!header) {
    Close(error);
    return false;
  }
  current_ = InboundMessage{};
  current_.header = *header;
  if (header->body_length > 0) {
    current_.body.reserve(header->body_length);
    read_state_ = ReadState::kBody;
    return true;
  }
  return StartPayloadOrDeliver();
}

bool ShmConnection::StartPayloadOrDeliver() {
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

void ShmConnection::Deliver() {
  read_state_ = ReadState::kHeader;
  payload_got_ = 0;
  host_.OnMessage(std::exchange(current_, InboundMessage{}));
}

void ShmConnection::Send(OutgoingMessage message, bool may_block) {
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
    if (!established_ || writer_active_ || !queue_.empty()) {
      queue_.push_back(std::move(pending));
      return;
    }
    writer_active_ = true;
  }
  bool signal = false;
  if (WriteAlone(pending.header, pending.total, pending.message, &signal)) {
    if (signal) Signal(setup_.data_out.get());
    if (pending.message.on_sent) pending.message.on_sent(true);
  } else {
    std::lock_guard lock(mutex_);
    queue_.push_front(std::move(pending));  // the writer role is still this thread's
  }
  WriteQueued(may_block);
}

bool ShmConnection::SendNow(OutgoingMessage& message) {
  std::uint8_t header[kFrameHeaderSize];
  std::uint64_t total = SealOutgoingHeader(message, my_rank_, header);
  bool signal = false;
  if (total <= CellRing::kSpanBytes) {
    // A span's worth is copied under the lock, in about the time the writer role would take to
    // claim and give back (two more trips through the lock, a tenth of a small message's send).
    bool written;
    {
      std::lock_guard lock(mutex_);
      if (!IdleLocked()) return false;
      written = WriteAlone(header, total, message, &signal);
    }
    if (signal) Signal(setup_.data_out.get());
    return written;
  }
  {
    std::lock_guard lock(mutex_);
    if (!IdleLocked()) return false;
    writer_active_ = true;
  }
  bool written = WriteAlone(header, total, message, &signal);
  if (signal) Signal(setup_.data_out.get());
  // Frames other threads queued meanwhile go out now; this thread may wait for room, as Send's
  // callers on application threads may.
  WriteQueued(/*may_block=*/true);
  return written;
}

// The express lane: a small raw message straight into a cell, under the lock, on the same terms
// as a frame's cell in WriteAlone (see there).
bool ShmConnection::SendRawNow(const SmallRaw& raw) {
  if (raw.length > SmallRawCell::kMaxPayload) return false;
  std::uint32_t cells = CellRing::CellsFor(SmallRawCell::kHeaderSize + raw.length);
  bool signal;
  {
    std::lock_guard lock(mutex_);
    if (!IdleLocked() || !NextMayTakeCells(cells)) return false;
    SmallRawCell::Write(out_cells_, raw.tag, raw.sequence, raw.payload,
                        static_cast<std::uint32_t>(raw.length));
    out_cells_.Publish(cells);
    signal = out_.ReaderMustBeSignalled();
  }
  if (signal) Signal(setup_.data_out.get());
  return true;
}

// The common case of a frame to an idle connection: straight into a cell or the ring, without the
// queue and its batch (a ping-pong's half round trip is well under a microsecond, and the queue's
// locks, moves and allocations were a good part of it). False when the ring lacks room for it;
// *signal is set when the reader sleeps and must be signalled.
//
// A frame that fits a span of cells goes into one when NextMayTakeCells says so; otherwise it
// takes the ring after the others.
bool ShmConnection::WriteAlone(const std::uint8_t* header, std::uint64_t total,
                               const OutgoingMessage& message, bool* signal) {
  if (total <= CellRing::kSpanBytes && NextMayTakeCells(CellRing::CellsFor(total))) {
    CopyFrame(header, message, out_cells_);
    out_cells_.Publish(CellRing::CellsFor(total));
    *signal = out_.ReaderMustBeSignalled();
    return true;
  }
  if (out_.Room() < total) return false;
  *signal = out_.Publish(CopyFrame(header, message, out_));
  return true;
}

// The writer role: copies queued frames into the outgoing ring as room allows, publishing once
// per batch, so a burst of small frames costs one index store and at most one signal.
void ShmConnection::WriteQueued(bool may_block) {
  for (;;) {
    Pending* batch[64];
    int count = 0;
    {
      std::unique_lock lock(mutex_);
      if (closed_) {
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
        return;
      }
      // Deque elements stay put while others are appended, and only the writer removes them.
      for (Pending& pending : queue_) {
        if (count == 64) break;
        batch[count++] = &pending;
      }
    }
    std::uint64_t room = out_.Room();
    std::uint64_t put = 0;
    int finished_count = 0;
    for (int i = 0; i < count && put < room; ++i) {
      Pending& pending = *batch[i];
      std::uint64_t skip = pending.written;
      auto add = [&](const void* base, std::uint64_t size) {
        if (skip >= size) {
          skip -= size;
          return;
        }
        std::uint64_t take = std::min(size - skip, room - put);
        out_.Put(put, static_cast<const std::uint8_t*>(base) + skip, take);
        put += take;
        pending.written += take;
        skip = 0;
      };
      add(pending.header, kFrameHeaderSize);
      if (put < room) add(pending.message.body.data(), pending.message.body.size());
      if (put < room) add(pending.message.payload.data, pending.message.payload.size);
      if (pending.written == pending.total) ++finished_count;
    }
    if (put > 0 && out_.Publish(put)) Signal(setup_.data_out.get());
    if (finished_count > 0) {
      std::vector<std::function<void(bool)>> finished;
      {
        std::lock_guard lock(mutex_);
        for (int i = 0; i < finished_count; ++i) {
          if (queue_.front().message.on_sent) {
            finished.push_back(std::move(queue_.front().message.on_sent));
          }
          queue_.pop_front();
        }
      }
      for (auto& on_sent : finished) on_sent(true);
    }
    if (put > 0) continue;
    // The ring is full.
    if (may_block) {
      if (!WaitForRoom()) continue;  // closed: the branch above fails what is queued
      continue;
    }
    std::lock_guard lock(mutex_);
    if (closed_) continue;
    want_space_ = true;
    if (!out_.WriterSleeps(1, Ring::kSleepsOnEventfd)) {
      want_space_ = false;
      continue;
    }
    return;  // OnSpace goes on once the peer has read
  }
}

bool ShmConnection::WaitForRoom() {
  // The peer usually frees room within microseconds: poll for a moment, then sleep on the futex.
  std::int64_t since = MonotonicNs();
  while (MonotonicNs() - since < kWriteSpinNs) {
    if (out_.FreshRoom() > 0) return true;
    if (closed_flag_.load(std::memory_order_relaxed)) return false;
  }
  while (!closed_flag_.load(std::memory_order_relaxed)) {
    if (!out_.WriterSleeps(1, Ring::kSleepsOnFutex)) return true;
    // A bounded sleep, so that a peer that died is noticed (its socket closes meanwhile).
    FutexWait(out_.writer_flag(), Ring::kSleepsOnFutex, 100);
    if (out_.FreshRoom() > 0) return true;
  }
  return false;
}

void ShmConnection::OnSpace() {
  Drain(setup_.space_in.get());
  bool resume;
  {
    std::lock_guard lock(mutex_);
    resume = want_space_ && writer_active_ && !closed_;
    want_space_ = false;
  }
  if (resume) WriteQueued(/*may_block=*/false);
}

void ShmConnection::OnSocket() {
  char byte;
  ssize_t got = ::recv(setup_.socket.get(), &byte, 1, MSG_DONTWAIT);
  if (got > 0 || (got < 0 && (errno == EAGAIN || errno == EINTR))) return;
  // Frames the peer wrote before it went still count, as they would on a socket.
  Poll();
  Close(got == 0 ? "the other side closed the connection"
                 : SystemErrorText("the connection failed", errno));
}

void ShmConnection::Close(const std::string& why, bool quiet) {
  std::deque<Pending> failed;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    closed_flag_.store(true, std::memory_order_relaxed);
    bool writer_busy = writer_active_ && !want_space_;
    if (!writer_busy) failed.swap(queue_);
  }
  if (ready_.load(std::memory_order_acquire)) {
    engine_.Remove(setup_.data_in.get());
    engine_.Remove(setup_.space_in.get());
    engine_.Remove(setup_.socket.get());
    ::shutdown(setup_.socket.get(), SHUT_RDWR);
    // Wake our own writer if it sleeps for room that will never come.
    FutexWake(out_.writer_flag());
  }
  for (Pending& pending : failed) {
    if (pending.message.on_sent) pending.message.on_sent(false);
  }
  if (quiet) return;
  auto self = shared_from_this();
  engine_.Post([self, why] { self->on_closed_(self, why); });
}

}  // namespace lmdx::net::internal

#include "net/udp/internal/udp_splice.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <string>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"

namespace lmdx::net::internal {
namespace {

// Below this a datagram's lent bytes are copied: two more system calls cost more than copying a
// few pages, and across a real network segments are 8 KiB (udp_transport.cc).
constexpr std::size_t kSpliceFrom = 16 * 1024;

// The kernel puts a datagram's spliced pages in one socket buffer, which holds at most
// net.core.max_skb_frags pieces.
std::size_t MaxSkbFrags() {
  std::ifstream file("/proc/sys/net/core/max_skb_frags");
  std::size_t frags = 0;
  if (file >> frags && frags > 0) return frags;
  return 17;  // the kernel's default
}

bool SameDestination(const sockaddr_in& a, const sockaddr_in& b) {
  return a.sin_addr.s_addr == b.sin_addr.s_addr && a.sin_port == b.sin_port;
}

bool MeansUnsupported(int error) {
  return error == EINVAL || error == ENOSYS || error == EOPNOTSUPP || error == EPERM;
}

}  // namespace

UdpSplicer::UdpSplicer(const sockaddr_in& local, bool enabled) : local_(local), usable_(enabled) {
  local_.sin_port = 0;
  long page = ::sysconf(_SC_PAGESIZE);
  if (page > 0) page_ = static_cast<std::size_t>(page);
  if (usable_) max_pieces_ = std::min(kMaxPieces, MaxSkbFrags());
}

std::size_t UdpSplicer::PiecesOf(std::size_t own_bytes, const std::uint8_t* from,
                                 std::size_t size) const {
  std::size_t own = (own_bytes + page_ - 1) / page_;
  if (size == 0) return own;
  std::size_t start = reinterpret_cast<std::uintptr_t>(from) % page_;
  return own + (start + size + page_ - 1) / page_;
}

std::size_t UdpSplicer::LentRoom(std::size_t own_bytes, const std::uint8_t* from) const {
  if (!usable_) return 0;
  std::size_t own = PiecesOf(own_bytes, nullptr, 0);
  if (own >= max_pieces_) return 0;
  std::size_t room = (max_pieces_ - own) * page_ - reinterpret_cast<std::uintptr_t>(from) % page_;
  return room < kSpliceFrom ? 0 : room;
}

bool UdpSplicer::Open() {
  if (!pipe_write_) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return GiveUp(SystemErrorText("pipe", errno));
    pipe_read_.reset(fds[0]);
    pipe_write_.reset(fds[1]);
    int capacity = ::fcntl(pipe_write_.get(), F_GETPIPE_SZ);
    if (capacity < 0 || static_cast<std::size_t>(capacity) < max_pieces_ * page_) {
      // A user past fs.pipe-user-pages-soft gets pipes of two pages.
      return GiveUp("pipes here hold " + std::to_string(capacity) + " bytes, too few");
    }
  }
  if (!socket_) {
    socket_.reset(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!socket_) return GiveUp(SystemErrorText("socket", errno));
    if (::bind(socket_.get(), reinterpret_cast<const sockaddr*>(&local_), sizeof local_) != 0) {
      return GiveUp(SystemErrorText("bind", errno));
    }
  }
  return true;
}

bool UdpSplicer::FillPipe(std::span<const iovec> own, std::size_t own_bytes,
                          std::span<const std::uint8_t> lent, std::optional<std::uint32_t>* slot) {
  std::optional<SpliceSlots::Slot> kept;
  if (slot != nullptr) kept = slots_.Fill(own, MonotonicMs());
  iovec pages[2];
  int count = 0;
  if (kept) {
    pages[count++] = {const_cast<std::uint8_t*>(kept->bytes.data()), kept->bytes.size()};
  } else {
    ssize_t written = ::writev(pipe_write_.get(), own.data(), static_cast<int>(own.size()));
    if (written != static_cast<ssize_t>(own_bytes)) {
      DropPipe();
      return false;
    }
  }
  pages[count++] = {const_cast<std::uint8_t*>(lent.data()), lent.size()};
  std::size_t expected = lent.size() + (kept ? own_bytes : 0);
  ssize_t taken = ::vmsplice(pipe_write_.get(), pages, static_cast<unsigned long>(count), 0);
  if (taken != static_cast<ssize_t>(expected)) {
    int error = errno;
    if (taken < 0 && MeansUnsupported(error)) {
      GiveUp(SystemErrorText("vmsplice", error));
    } else {
      // Memory the kernel cannot pin (EFAULT: a device's mapping): this datagram is copied. The
      // socket holds nothing of it; only the pipe does.
      DropPipe();
    }
    if (kept) slots_.Free(kept->index);  // the pipe that held its pages is gone
    return false;
  }
  if (slot != nullptr) *slot = kept ? std::optional(kept->index) : std::nullopt;
  return true;
}

void UdpSplicer::ReleaseSlot(std::uint32_t slot, bool may_still_be_read) {
  if (may_still_be_read) {
    slots_.Quarantine(slot, MonotonicMs());
  } else {
    slots_.Free(slot);
  }
}

void UdpSplicer::DropPipe() {
  pipe_read_.reset();
  pipe_write_.reset();
}

void UdpSplicer::Reset() {
  DropPipe();
  socket_.reset();  // a datagram the socket corked half way goes with it
  connected_ = false;
}

bool UdpSplicer::GiveUp(const std::string& why) {
  LogLine("udp: " + why + "; lent memory is copied into the kernel from now on");
  Reset();
  usable_ = false;
  return false;
}

UdpSplicer::Outcome UdpSplicer::Send(const sockaddr_in& to, std::span<const iovec> own,
                                     std::span<const std::uint8_t> lent, bool refuse,
                                     std::optional<std::uint32_t>* slot) {
  if (!usable_ || lent.size() < kSpliceFrom) return Outcome::kNotSpliced;
  std::size_t own_bytes = 0;
  for (const iovec& piece : own) own_bytes += piece.iov_len;
  if (PiecesOf(own_bytes, lent.data(), lent.size()) > max_pieces_) return Outcome::kNotSpliced;
  if (!Open()) return Outcome::kNotSpliced;
  if (!connected_ || !SameDestination(to, connected_to_)) {
    if (::connect(socket_.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
      GiveUp(SystemErrorText("connect", errno));
      return Outcome::kNotSpliced;
    }
    connected_to_ = to;
    connected_ = true;
  }
  // The pipe is empty here: every way out of this function empties it or drops it.
  if (!FillPipe(own, own_bytes, lent, slot)) return Outcome::kNotSpliced;
  // A datagram that did not go whole takes its slot back from the caller. One that went not at
  // all leaves nothing that reads it: the pipe and the socket holding its bytes are dropped.
  auto take_back_slot = [&](bool may_still_be_read) {
    if (slot == nullptr) return;
    if (*slot) ReleaseSlot(**slot, may_still_be_read);
    slot->reset();
  };
  std::size_t total = own_bytes + lent.size();
  if (refuse) {
    Reset();
    take_back_slot(/*may_still_be_read=*/false);
    return Outcome::kLost;
  }
  ssize_t sent = ::splice(pipe_read_.get(), nullptr, socket_.get(), nullptr, total, 0);
  if (sent == static_cast<ssize_t>(total)) return Outcome::kSent;
  int error = errno;
  Reset();
  if (sent >= 0) {
    // Part of a datagram went: with at most kMaxPieces pieces the kernel never does that, and a
    // receiver would take the part for a whole segment. Resent whole; no more splices. The part
    // may still be unread, with the slot's bytes in it.
    take_back_slot(/*may_still_be_read=*/true);
    GiveUp("splice sent " + std::to_string(sent) + " of a datagram's " + std::to_string(total) +
           " bytes");
    return Outcome::kLost;
  }
  take_back_slot(/*may_still_be_read=*/false);
  // A failed splice sent nothing: a datagram goes whole or not at all.
  switch (error) {
    case EAGAIN:
    case ENOBUFS:
    case EINTR:
      return Outcome::kLost;  // as a full socket buffer refuses one: the channel resends it
    case ECONNREFUSED:
      // An earlier datagram's refusal, reported on this connected socket: this one did not go.
      return Outcome::kNotSpliced;
    default:
      // Unsupported here, or refused by a policy: it would fail again at every resend.
      GiveUp(SystemErrorText("splice", error));
      return Outcome::kNotSpliced;
  }
}

}  // namespace lmdx::net::internal

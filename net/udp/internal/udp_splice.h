#ifndef LMDX_NET_UDP_INTERNAL_UDP_SPLICE_H_
#define LMDX_NET_UDP_INTERNAL_UDP_SPLICE_H_

#include <netinet/in.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/fd.h"
#include "net/udp/internal/udp_splice_slots.h"

namespace lmdx::net::internal {

// Sends a udp datagram whose tail lies in memory a sender lends, without copying the tail into
// the kernel: the pages themselves go into a pipe (vmsplice) and from it into a socket (splice),
// and the receiver's copy out of its socket is the only copy of those bytes. On loopback the
// sender's copy into the kernel cost about three times the receiver's copy out (it writes pages
// no cache holds), and it decided a 1 MiB message's time.
//
// The kernel reads the pages when the receiver reads the datagram, not when it is sent, so the
// lent memory must stay unchanged until the peer has acknowledged the datagram: the udp
// transport's lending promises that already (net/udp/udp_transport.h). A copy still in flight after
// that, a resent duplicate, is dropped by the receiver for its sequence number, whatever its
// bytes. The datagram's own bytes (its header, and the segment's copied part) go into the pipe
// from a slot that stays unchanged while the datagram may be unread (udp_splice_slots.h) when the
// datagram is its segment's first; others, or when no slot is free, are written into the pipe,
// which copies them, so their buffers are free at once. The promise holds when a send
// succeeds; when it fails (its peer silent for the give-up time, or the transport closing with
// segments unacknowledged) the sender learns so while spliced datagrams may still wait unread in
// the peer's socket, and may carry what the sender writes next. A peer that silent is lost to
// the job, which then ends.
//
// A splice names no destination, so it goes through a second socket of the node's address,
// connected to the datagram's destination. The receiver does not look at a datagram's source.
// Used under the transport's lock, by one thread at a time.
class UdpSplicer {
 public:
  // local: the transport socket's address (its port is not taken). enabled false: never splices.
  UdpSplicer(const sockaddr_in& local, bool enabled);

  bool usable() const { return usable_; }
  // The most lent bytes from `from` that a datagram whose own bytes (header included) number
  // `own_bytes` may carry and still be spliced; 0 when it cannot be spliced at all. What one
  // splice hands the socket in one piece is bounded by pipe buffers (a page each), and a
  // datagram spliced in two pieces would be corked between them.
  std::size_t LentRoom(std::size_t own_bytes, const std::uint8_t* from) const;

  enum class Outcome {
    kSent,        // the whole datagram went
    kNotSpliced,  // nothing went: send it the ordinary way
    kLost,        // the socket refused it, as a full socket buffer would: count it lost
  };
  // refuse: a fault injected for tests (LMDX_UDP_FAULTS splice=P): the datagram's bytes go into
  // the pipe, and then it fails as a socket with no room would make it.
  // slot: given for the first datagram of its segment; after kSent it names the slot that holds
  // the own bytes (nullopt when they were written into the pipe), which the caller hands back
  // with ReleaseSlot once the segment is acknowledged or given up.
  Outcome Send(const sockaddr_in& to, std::span<const iovec> own,
               std::span<const std::uint8_t> lent, bool refuse = false,
               std::optional<std::uint32_t>* slot = nullptr);
  // may_still_be_read: a datagram that carries the slot may still wait unread (its segment went
  // more than once, or part of one went); the slot is then held unchanged for a while
  // (SpliceSlots::Quarantine), else it is free at once.
  void ReleaseSlot(std::uint32_t slot, bool may_still_be_read);
  const SpliceSlots& slots() const { return slots_; }

 private:
  // A page a pipe buffer, and what one splice gives the socket in one call (fs/splice.c).
  static constexpr std::size_t kMaxPieces = 16;
  std::size_t PiecesOf(std::size_t own_bytes, const std::uint8_t* from, std::size_t size) const;
  // Makes the pipe and the socket where they are missing; false (after GiveUp) when it cannot.
  bool Open();
  // Puts the datagram's bytes into the empty pipe: the own bytes from a slot when *slot is
  // given and one is free (*slot names it then), else written. False, with the pipe empty or
  // dropped and no slot taken, when they did not all go in.
  bool FillPipe(std::span<const iovec> own, std::size_t own_bytes,
                std::span<const std::uint8_t> lent, std::optional<std::uint32_t>* slot);
  // Drops what the pipe holds.
  void DropPipe();
  // Drops the pipe's contents and the socket's state after a send that went wrong part way.
  void Reset();
  // Splicing cannot work here (an old kernel, a policy, a pipe too small): the ordinary way from
  // now on, said once in the log with why. Returns false.
  bool GiveUp(const std::string& why);

  sockaddr_in local_{};
  bool usable_ = false;
  std::size_t page_ = 4096;
  std::size_t max_pieces_ = kMaxPieces;
  Fd pipe_read_;
  Fd pipe_write_;
  Fd socket_;
  sockaddr_in connected_to_{};
  bool connected_ = false;
  SpliceSlots slots_;
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_UDP_INTERNAL_UDP_SPLICE_H_
